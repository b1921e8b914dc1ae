package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/internal/sandboxtest"
)

// TestDoctorChecksTheDesktop: with desktop servers in use, doctor checks
// the display, the session bus, the AT-SPI bus and each desktop app's
// command, says what to fix, and exits 1 when one is missing; on a
// working desktop they are all ok.
func TestDoctorChecksTheDesktop(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	write := func(display, bus, command string) {
		os.WriteFile(cfgFile, []byte(fmt.Sprintf("mcp:\n  use: [desktop, calc]\n  servers:\n    calc: {kind: desktop, command: %s}\n"+
			"tools:\n  desktop: {display: %q, bus: %q}\n", command, display, bus)), 0o644)
	}
	write(":1999", "unix:path="+filepath.Join(dir, "no-bus"), "no-such-calculator")
	out, code := saucer(t, "doctor", "--skip-provider", "-c", cfgFile, "-C", dir)
	for _, want := range []string{"FAIL desktop display: open the X display :1999", "FAIL desktop session bus: connect to unix:path=",
		"FAIL desktop AT-SPI bus: not checked", "FAIL desktop app calc: no-such-calculator", "fix: install the application"} {
		if !strings.Contains(out, want) {
			t.Errorf("broken desktop: output lacks %q\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("broken desktop: exit %d, want 1\n%s", code, out)
	}
	// Without a desktop server in use, nothing of the desktop is checked.
	if out, _ := saucer(t, "doctor", "--skip-provider", "-C", dir); strings.Contains(out, "desktop") {
		t.Errorf("no desktop server in use, yet:\n%s", out)
	}

	desktoptest.Require(t, "galculator")
	s := desktoptest.Start(t)
	write(s.Display, s.BusAddr, "galculator")
	out, code = saucer(t, "doctor", "--skip-provider", "-c", cfgFile, "-C", dir)
	for _, want := range []string{"ok   desktop display: " + s.Display, "ok   desktop session bus: ", "ok   desktop AT-SPI bus: the registry answers",
		"ok   desktop app calc: galculator (", "ok    server calc "} {
		if !strings.Contains(out, want) {
			t.Errorf("working desktop: output lacks %q\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("working desktop: exit %d\n%s", code, out)
	}
}

// TestDoctorChecksAWaylandAndAnOwnDisplay: doctor reports a Wayland
// display the config names as the desktop's (with what its compositor
// offers), and, with a desktop of its own, that one can start, rather
// than checking the person's display it will not use.
func TestDoctorChecksAWaylandAndAnOwnDisplay(t *testing.T) {
	desktoptest.RequireKind(t, display.Sway)
	s := desktoptest.StartKind(t, display.Sway)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf("mcp:\n  use: [desktop]\ntools:\n  desktop: {display: \"\", wayland: %q, sway_socket: %q, bus: %q}\n",
		s.Wayland, s.SwaySock, s.BusAddr)), 0o644)
	out, code := saucer(t, "doctor", "--skip-provider", "-c", cfgFile, "-C", dir)
	if want := "ok   desktop display: " + s.Wayland + " (sway, window management through sway's IPC, screen capture"; !strings.Contains(out, want) || code != 0 {
		t.Errorf("sway: exit %d, output lacks %q\n%s", code, want, out)
	}

	os.WriteFile(cfgFile, []byte("mcp:\n  use: [desktop]\ntools:\n  desktop: {display: own}\n"), 0o644)
	out, code = saucer(t, "doctor", "--skip-provider", "-c", cfgFile, "-C", dir)
	if want := "ok   desktop display: a desktop of its own (xvfb)"; !strings.Contains(out, want) || code != 0 || strings.Contains(out, "session bus") {
		t.Errorf("own: exit %d, output lacks %q (or checks the person's buses)\n%s", code, want, out)
	}
}

// TestDoctorChecksTheDesktopInsideTheSandbox: with device: sandbox, a
// desktop of its own runs inside the sandbox, so doctor looks for Xvfb,
// the buses and the apps in the sandbox's root, not on the host: the image
// root (which CI builds, without a desktop) lacks them, the host's root has
// them.
func TestDoctorChecksTheDesktopInsideTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	desktoptest.Require(t, "mousepad")
	const image = "/var/lib/saucer/rootfs"
	if _, err := os.Stat(filepath.Join(image, "bin/sh")); err != nil {
		t.Fatalf("the sandbox image root is not built (.ci/run builds it): %v", err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	write := func(root string) {
		os.WriteFile(cfgFile, []byte(fmt.Sprintf("device: sandbox\nsandbox: {root: %s}\nmcp:\n  use: [desktop, editor]\n  servers:\n    editor: {kind: desktop, command: mousepad}\n"+
			"tools:\n  desktop: {display: own}\n", root)), 0o644)
	}
	write(image)
	out, code := saucer(t, "doctor", "--skip-provider", "-c", cfgFile, "-C", dir)
	for _, want := range []string{"FAIL desktop display: a desktop of its own (xvfb) cannot start inside the sandbox: its root filesystem lacks ",
		"Xvfb", "at-spi2-core", "fix: install the packages named in the sandbox's root filesystem",
		"FAIL desktop app editor: mousepad: not found inside the sandbox"} {
		if !strings.Contains(out, want) {
			t.Errorf("image root: output lacks %q\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("image root: exit %d, want 1\n%s", code, out)
	}

	write("/")
	out, _ = saucer(t, "doctor", "--skip-provider", "-c", cfgFile, "-C", dir)
	for _, want := range []string{"ok   desktop display: a desktop of its own (xvfb) inside the sandbox",
		"ok   desktop app editor: mousepad (/usr/bin/mousepad inside the sandbox)"} {
		if !strings.Contains(out, want) {
			t.Errorf("host's root: output lacks %q\n%s", want, out)
		}
	}
}
