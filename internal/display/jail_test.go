package display

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dirJail stands for a sandbox whose root is a folder: nothing is run.
type dirJail string

func (j dirJail) Command(dir string, env []string, argv ...string) *exec.Cmd {
	c := exec.Command("/bin/false")
	c.Err = os.ErrPermission
	return c
}
func (j dirJail) Path(inside string) string { return filepath.Join(string(j), inside) }
func (j dirJail) HostPID(pid int) int       { return 0 }

// A sandbox whose root lacks what the display needs (an image root
// without Xvfb) is refused before anything starts, with what to install
// and the way out; sway is refused inside a sandbox.
func TestJailWithoutXvfbIsRefused(t *testing.T) {
	root := t.TempDir()
	for _, exe := range []string{"/usr/bin/dbus-daemon", BusLauncher} {
		p := filepath.Join(root, exe)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pattern := filepath.Join(os.TempDir(), dirPrefix+ownerTag()+"-*")
	before, _ := filepath.Glob(pattern)
	_, err := Start(context.Background(), Options{Kind: Xvfb, Jail: dirJail(root)})
	if err == nil || !strings.Contains(err.Error(), "Xvfb (Debian: xvfb)") || !strings.Contains(err.Error(), "sandbox.root: /") ||
		strings.Contains(err.Error(), "dbus-daemon") {
		t.Fatalf("Start in a root without Xvfb: %v", err)
	}
	if _, err := Start(context.Background(), Options{Kind: Sway, Jail: dirJail(root)}); err == nil || !strings.Contains(err.Error(), "runs on Xvfb") {
		t.Fatalf("Start of sway in a jail: %v", err)
	}
	if dirs, _ := filepath.Glob(pattern); len(dirs) > len(before) {
		t.Fatalf("a refused display left %v", dirs)
	}
}

// A bus inside a jail is reached through the jail's root by its socket's
// path; one on an abstract socket cannot be reached, and says so.
func TestReachBusInsideJail(t *testing.T) {
	d := &Display{jail: dirJail("/proc/42/root")}
	got, err := d.reach("unix:path=/run/saucer-display/xdg/at-spi/bus_0,guid=0123")
	if err != nil || got != "unix:path=/proc/42/root/run/saucer-display/xdg/at-spi/bus_0,guid=0123" {
		t.Fatalf("reach = %q, %v", got, err)
	}
	if got, err := d.reach("unix:abstract=/tmp/dbus-x,guid=1"); err == nil {
		t.Fatalf("an abstract socket inside was taken as reachable: %q", got)
	}
	if got, _ := (&Display{}).reach("unix:abstract=/tmp/dbus-x"); got != "unix:abstract=/tmp/dbus-x" {
		t.Fatalf("a display on the host changed its bus address to %q", got)
	}
}
