package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/tools/desktop/desktoptest"
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
