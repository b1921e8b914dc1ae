// Package desktoptest gives tests and benchmarks a private desktop: the
// production display of package display (Xvfb, or a headless sway or
// weston, with a session D-Bus and the AT-SPI bus), started per test and
// stopped at its end.
package desktoptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/display"
)

// Session is a running private desktop.
type Session struct {
	// Display is the X display (":NN") of an Xvfb session; Wayland and
	// SwaySock the compositor's socket and sway's IPC socket otherwise.
	Display, Wayland, SwaySock string
	BusAddr                    string // the session bus address
	Env                        []string
	Kind                       display.Kind

	d   *display.Display
	dir string
}

// Require skips t (or, when CI is set, fails it) unless Xvfb, the buses
// and every named executable are installed.
func Require(t testing.TB, exes ...string) { RequireKind(t, display.Xvfb, exes...) }

// RequireKind is Require for a display of kind.
func RequireKind(t testing.TB, kind display.Kind, exes ...string) {
	t.Helper()
	var missing []string
	if m := display.Missing(kind); m != "" {
		missing = append(missing, m)
	}
	for _, e := range exes {
		if _, err := exec.LookPath(e); err != nil {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("desktop test needs %s (see .ci/run)", strings.Join(missing, ", "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Start starts an Xvfb desktop and registers Close with t.Cleanup.
func Start(t testing.TB) *Session { return StartKind(t, display.Xvfb) }

// StartKind starts a desktop of kind and registers Close with t.Cleanup.
func StartKind(t testing.TB, kind display.Kind) *Session {
	t.Helper()
	RequireKind(t, kind)
	s, err := New(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a private desktop of kind. Close stops it.
func New(ctx context.Context, kind display.Kind) (*Session, error) {
	d, err := display.Start(ctx, display.Options{Kind: kind})
	if err != nil {
		return nil, err
	}
	return &Session{Display: d.X11, Wayland: d.Wayland, SwaySock: d.SwaySock, BusAddr: d.Bus, Env: d.Env, Kind: kind,
		d: d, dir: d.Dir()}, nil
}

// Launch starts an application on the desktop with accessibility on. It
// is stopped by Close (or earlier by the caller through the returned Cmd's
// Process; do not Wait on it: the session does).
func (s *Session) Launch(name string, args ...string) (*exec.Cmd, error) {
	return s.d.Launch(name, args...)
}

// Dir is a private folder of the session; the applications' settings
// (XDG_CONFIG_HOME) are in its "config".
func (s *Session) Dir() string { return s.dir }

// Close stops everything the session started and removes its folder.
func (s *Session) Close() { s.d.Close() }

// Pids are the process ids the session started (to check none is left).
func (s *Session) Pids() []int { return s.d.Pids() }

// PrepareLibreOffice writes a LibreOffice profile for the session's user
// that opens documents at once: no tip-of-the-day dialog, no recovery
// offer.
func (s *Session) PrepareLibreOffice() error {
	dir := filepath.Join(s.dir, "config", "libreoffice", "4", "user")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	const xcu = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Recovery/RecoveryInfo"><prop oor:name="Enabled" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
`
	return os.WriteFile(filepath.Join(dir, "registrymodifications.xcu"), []byte(xcu), 0o644)
}
