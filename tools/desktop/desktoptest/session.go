// Package desktoptest starts a private X11 desktop for tests and
// benchmarks: Xvfb on a free display, a session D-Bus and the AT-SPI bus
// launcher, and applications launched with accessibility on. Everything it
// starts runs in process groups of its own and is stopped by Close.
package desktoptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// Components the desktop needs, by executable.
var (
	Xvfb        = "Xvfb"
	DBusDaemon  = "dbus-daemon"
	BusLauncher = "/usr/libexec/at-spi-bus-launcher"
)

// Session is a running private desktop.
type Session struct {
	Display string // ":NN"
	BusAddr string // the session bus address
	Env     []string

	mu    sync.Mutex
	procs []proc
	dir   string
}

// proc is a started process and a channel closed when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Require skips t (or, when CI is set, fails it) unless every named
// executable is installed. It returns the missing ones' message, or "".
func Require(t testing.TB, exes ...string) {
	t.Helper()
	var missing []string
	for _, e := range append([]string{Xvfb, DBusDaemon, BusLauncher}, exes...) {
		if _, err := exec.LookPath(e); err != nil {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("desktop test needs %s (Debian: xvfb, dbus-daemon, at-spi2-core and the apps; see .ci/run)", strings.Join(missing, ", "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Start starts Xvfb, a session bus and the AT-SPI bus on a free display,
// and registers Close with t.Cleanup.
func Start(t testing.TB) *Session {
	t.Helper()
	Require(t)
	s, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a private desktop. Close stops it.
func New(ctx context.Context) (*Session, error) {
	dir, err := os.MkdirTemp("", "saucer-desktop-")
	if err != nil {
		return nil, err
	}
	s := &Session{dir: dir}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := s.startX(ctx); err != nil {
		return nil, err
	}
	if err := s.startBus(ctx); err != nil {
		return nil, err
	}
	s.Env = []string{"DISPLAY=" + s.Display, "DBUS_SESSION_BUS_ADDRESS=" + s.BusAddr,
		"XDG_RUNTIME_DIR=" + dir, "HOME=" + dir, "NO_AT_BRIDGE=0", "GTK_A11Y=atspi", "GDK_BACKEND=x11",
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "GSETTINGS_BACKEND=memory", "NO_AT_BRIDGE=0", "LANG=C.UTF-8"}
	launcher := s.command(BusLauncher, "--launch-immediately")
	if err := s.start(launcher); err != nil {
		return nil, fmt.Errorf("start the AT-SPI bus launcher: %w", err)
	}
	if err := s.waitFor(ctx, 10*time.Second, s.a11yReady); err != nil {
		return nil, fmt.Errorf("the AT-SPI bus did not come up: %w", err)
	}
	ok = true
	return s, nil
}

// startX starts Xvfb with -displayfd, which picks a free display and
// writes its number when the server is ready.
func (s *Session) startX(ctx context.Context) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	x := exec.Command(Xvfb, "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-ac")
	x.ExtraFiles = []*os.File{w}
	err = s.start(x)
	w.Close()
	if err != nil {
		return fmt.Errorf("start Xvfb: %w", err)
	}
	line, err := readLine(ctx, r, 15*time.Second)
	if err != nil {
		return fmt.Errorf("Xvfb did not report a display: %w", err)
	}
	s.Display = ":" + line
	return nil
}

func (s *Session) startBus(ctx context.Context) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	d := exec.Command(DBusDaemon, "--session", "--nofork", "--nosyslog", "--print-address=3")
	d.Env = append(os.Environ(), "DISPLAY="+s.Display)
	d.ExtraFiles = []*os.File{w}
	err = s.start(d)
	w.Close()
	if err != nil {
		return fmt.Errorf("start the session D-Bus: %w", err)
	}
	line, err := readLine(ctx, r, 10*time.Second)
	if err != nil {
		return fmt.Errorf("the session D-Bus did not print its address: %w", err)
	}
	s.BusAddr = line
	return nil
}

func readLine(ctx context.Context, r *os.File, timeout time.Duration) (string, error) {
	ch := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		ch <- strings.TrimSpace(line)
	}()
	select {
	case l := <-ch:
		if l == "" {
			return "", errors.New("it exited first")
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("nothing after %s", timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// a11yReady reports whether the AT-SPI registry answers.
func (s *Session) a11yReady() error {
	conn, err := dbus.Connect(s.BusAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	var addr string
	if err := conn.Object("org.a11y.Bus", "/org/a11y/bus").Call("org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return err
	}
	a11y, err := dbus.Connect(addr)
	if err != nil {
		return err
	}
	defer a11y.Close()
	var children []struct {
		Name string
		Path dbus.ObjectPath
	}
	return a11y.Object("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root").
		Call("org.a11y.atspi.Accessible.GetChildren", 0).Store(&children)
}

func (s *Session) waitFor(ctx context.Context, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// command prepares a process that runs on the session's display and bus.
func (s *Session) command(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), s.Env...)
	c.Dir = s.dir
	return c
}

// start runs c in a process group of its own, stopped by Close.
func (s *Session) start(c *exec.Cmd) error {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		return err
	}
	p := proc{c, make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return nil
}

// Launch starts an application on the desktop with accessibility on. It
// is stopped by Close (or earlier by the caller through the returned Cmd's
// Process; do not Wait on it: the session does).
func (s *Session) Launch(name string, args ...string) (*exec.Cmd, error) {
	c := s.command(name, args...)
	if err := s.start(c); err != nil {
		return nil, fmt.Errorf("launch %s: %w", name, err)
	}
	return c, nil
}

// Dir is a private folder of the session (its HOME).
func (s *Session) Dir() string { return s.dir }

// Close stops everything the session started, newest first, each with
// its whole process group, and removes its folder.
func (s *Session) Close() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		pid := procs[i].cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-procs[i].done:
		case <-time.After(time.Second):
		}
		// The group may hold children (the AT-SPI launcher's own bus), and
		// a process that ignored SIGTERM.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-procs[i].done
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Pids are the process ids the session started (to check none is left).
func (s *Session) Pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, p := range s.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

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
