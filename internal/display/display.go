// Package display starts a desktop of its own for a Saucer session: a
// private display server (Xvfb, or a headless sway or weston compositor),
// a session D-Bus and the AT-SPI accessibility bus, so that the
// applications a desktop agent launches, and its clicks and keys, never
// reach the person's own session. Everything it starts carries a tag in
// its environment and runs in a process group of its own; Close stops it
// all and removes the display's folder, and the first Start of a later
// Saucer removes what a Saucer killed with SIGKILL left.
package display

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/saucerhq/saucer/internal/tail"
)

// Kind is the display server.
type Kind string

const (
	// Xvfb is a virtual X11 server: the X11 backend drives it (XTest,
	// GetImage, EWMH).
	Xvfb Kind = "xvfb"
	// Sway is a headless sway (wlroots) compositor: windows through its
	// IPC, pixels through wlr-screencopy, input through the virtual
	// pointer and keyboard protocols.
	Sway Kind = "sway"
	// Weston is a headless weston with its kiosk shell: AT-SPI only (the
	// tree and the actions; no screenshots, no pointer or keyboard).
	Weston Kind = "weston"
)

// Kinds are the display servers a desktop of its own can run on.
var Kinds = []Kind{Xvfb, Sway, Weston}

// ParseKind reads a kind by name ("own" is Xvfb).
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(s)); k {
	case "own":
		return Xvfb, nil
	case Xvfb, Sway, Weston:
		return k, nil
	}
	return "", fmt.Errorf("%q is not a display server Saucer can start: use own (Xvfb), xvfb, sway or weston", s)
}

// Executables the kinds need, by kind; the buses are needed by all.
var (
	BusDaemon   = "dbus-daemon"
	BusLauncher = "/usr/libexec/at-spi-bus-launcher"
	servers     = map[Kind]string{Xvfb: "Xvfb", Sway: "sway", Weston: "weston"}
	packages    = map[Kind]string{Xvfb: "xvfb", Sway: "sway", Weston: "weston"}
)

// Missing lists what kind needs and this machine lacks, with the Debian
// packages that bring it; "" when nothing is missing.
func Missing(kind Kind) string {
	return missing(kind, func(exe string) bool { _, err := exec.LookPath(exe); return err == nil })
}

// MissingIn is Missing for the inside of a jail: what kind needs and the
// jail's root lacks, looked for in the folders of its PATH.
func MissingIn(j Jail, kind Kind) string {
	return missing(kind, func(exe string) bool { return LookPathIn(j, exe) != "" })
}

// missing lists the programs kind needs that found does not find, sorted,
// with their Debian packages.
func missing(kind Kind, found func(exe string) bool) string {
	needs := [][2]string{{servers[kind], packages[kind]}, {BusDaemon, "dbus-daemon"}, {BusLauncher, "at-spi2-core"}}
	slices.SortFunc(needs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var miss, pkgs []string
	for _, n := range needs {
		if !found(n[0]) {
			miss, pkgs = append(miss, n[0]), append(pkgs, n[1])
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (Debian: %s)", strings.Join(miss, ", "), strings.Join(pkgs, ", "))
}

// LookPathIn finds a program inside a jail as its PATH would: exe itself
// when it is an absolute path, else in the folders of jailPath. It returns
// the path inside, or "" when the jail's root has no such program.
func LookPathIn(j Jail, exe string) string {
	dirs := jailPath
	if filepath.IsAbs(exe) {
		dirs = []string{""}
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, exe)
		if st, err := os.Stat(j.Path(p)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// jailPath are the folders where programs are looked for inside a jail
// (a sandbox's PATH).
var jailPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Options configure a display.
type Options struct {
	Kind Kind
	// Width and Height of the screen; default 1280x800.
	Width, Height int
	// Jail, when set, is where the display, its buses and its
	// applications run (a sandbox); Xvfb only.
	Jail Jail
}

// A Jail is a place other than this host where a display can run: a
// sandbox, with its own root, /tmp, network and PID namespaces (package
// local adapts sandbox.Sandbox). The display, its buses and its
// applications start inside; this process reaches their sockets, which
// are files inside, through Path, and knows their processes through
// HostPID. Nothing of the person's session is reachable from inside.
type Jail interface {
	// Command prepares argv to run inside, in dir there ("" for the
	// jail's working folder), with env added to the jail's own
	// environment (never this process's).
	Command(dir string, env []string, argv ...string) *exec.Cmd
	// Path is the host's path of a path inside.
	Path(inside string) string
	// HostPID is the host's id of the process with id pid inside, or 0.
	HostPID(pid int) int
}

// JailDir is the display's folder inside a jail: its bus socket, the X
// cookie, and the applications' home and runtime folders.
const JailDir = "/run/saucer-display"

// Display is a running desktop of its own.
type Display struct {
	Kind Kind
	// X11 is the X display (":N") of Xvfb ("/FOLDER/X:N", a link to its
	// socket, inside a jail); Wayland the absolute path of
	// the compositor's socket; SwaySock sway's IPC socket.
	X11, Wayland, SwaySock string
	// Bus is the private session bus's address; A11yBus the AT-SPI
	// bus's. Inside a jail, the display's processes reach both by paths
	// inside, and X11, Bus and A11yBus name the sockets as this process
	// reaches them (Env names them as the processes inside do).
	Bus, A11yBus string
	// Env is what the applications on this display need: the display and
	// the bus, a private home and runtime folder, accessibility on, and
	// the person's display and accessibility variables emptied, so that
	// no toolkit falls back to them.
	Env []string
	// SessionEnv is Env without the private home and XDG folders: what
	// the session's other tools (the shell) need so that whatever they
	// start shows on this display and talks to this bus, never the
	// person's, while their files stay the person's.
	SessionEnv []string

	dir string
	tag string
	// root is the display's folder as its processes see it: dir, or
	// JailDir inside a jail.
	root string
	jail Jail
	// x11, bus and a11yAddr are the display's and the buses' addresses
	// as its processes reach them.
	x11, bus, a11yAddr string
	mu                 sync.Mutex
	procs              []*proc
	ended              bool
}

// proc is a started process and a channel closed when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a display of kind, its session bus and the AT-SPI bus.
// Close stops them.
func Start(ctx context.Context, o Options) (_ *Display, err error) {
	if _, ok := servers[o.Kind]; !ok {
		return nil, fmt.Errorf("display kind %q: use xvfb, sway or weston", o.Kind)
	}
	if o.Jail == nil {
		if m := Missing(o.Kind); m != "" {
			return nil, fmt.Errorf("a desktop of its own on %s needs %s", o.Kind, m)
		}
	} else {
		// Everything runs from the jail's root: the host needs none of it.
		if o.Kind != Xvfb {
			return nil, fmt.Errorf("a desktop of its own inside the sandbox runs on Xvfb (own or xvfb), not %s", o.Kind)
		}
		if m := MissingIn(o.Jail, o.Kind); m != "" {
			return nil, fmt.Errorf("a desktop of its own inside the sandbox needs %s inside: install them in the sandbox's root filesystem, or give it the host's (sandbox.root: /)", m)
		}
	}
	if o.Width <= 0 || o.Height <= 0 {
		o.Width, o.Height = 1280, 800
	}
	sweepOnce.Do(sweep)
	// Inside a jail the host folder keeps only the display's tag (for the
	// sweep) and the way to its X socket.
	dir, err := os.MkdirTemp("", dirPrefix+ownerTag()+"-")
	if err != nil {
		return nil, err
	}
	d := &Display{Kind: o.Kind, dir: dir, tag: filepath.Base(dir), root: dir, jail: o.Jail}
	if o.Jail != nil {
		d.root = JailDir
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	for _, sub := range []string{"home", "xdg", "config", "data", "cache"} {
		if err := os.MkdirAll(d.host(d.at(sub)), 0o700); err != nil {
			return nil, err
		}
	}
	switch o.Kind {
	case Xvfb:
		err = d.startXvfb(ctx, o)
	case Sway:
		err = d.startSway(ctx, o)
	case Weston:
		err = d.startWeston(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	if err := d.startBus(ctx); err != nil {
		return nil, err
	}
	d.SessionEnv = append(d.displayEnv(), "DBUS_SESSION_BUS_ADDRESS="+d.bus, "AT_SPI_BUS_ADDRESS=",
		"NO_AT_BRIDGE=0", "GTK_A11Y=atspi", "QT_ACCESSIBILITY=1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1",
		tagVar+"="+d.tag)
	d.Env = append(slices.Clone(d.SessionEnv),
		"XDG_RUNTIME_DIR="+d.at("xdg"), "HOME="+d.at("home"),
		"XDG_CONFIG_HOME="+d.at("config"), "XDG_DATA_HOME="+d.at("data"),
		"XDG_CACHE_HOME="+d.at("cache"), "GSETTINGS_BACKEND=memory", "LANG=C.UTF-8")
	if err := d.start(d.command(BusLauncher, "--launch-immediately")); err != nil {
		return nil, fmt.Errorf("start the AT-SPI bus launcher: %w", err)
	}
	if err := waitFor(ctx, 15*time.Second, d.a11yReady); err != nil {
		return nil, fmt.Errorf("the AT-SPI bus did not come up: %w", err)
	}
	// The applications are given this AT-SPI bus's address rather than an
	// empty one: GTK 4 takes an empty AT_SPI_BUS_ADDRESS as the address
	// and then has no accessibility at all ("Unrecognized accessibility
	// backend").
	for _, env := range [][]string{d.SessionEnv, d.Env} {
		if i := slices.Index(env, "AT_SPI_BUS_ADDRESS="); i >= 0 {
			env[i] = "AT_SPI_BUS_ADDRESS=" + d.a11yAddr
		}
	}
	return d, nil
}

// displayEnv names this display and empties the others.
func (d *Display) displayEnv() []string {
	if d.Kind == Xvfb {
		return []string{"DISPLAY=" + d.x11, "XAUTHORITY=" + d.at("xauth"), "WAYLAND_DISPLAY=",
			"GDK_BACKEND=x11", "QT_QPA_PLATFORM=xcb", "SWAYSOCK="}
	}
	return []string{"WAYLAND_DISPLAY=" + d.Wayland, "DISPLAY=", "GDK_BACKEND=wayland", "QT_QPA_PLATFORM=wayland",
		"SWAYSOCK=" + d.SwaySock, "XDG_SESSION_TYPE=wayland"}
}

// Dir is the display's private folder on the host (the applications'
// home is in it, but inside a jail).
func (d *Display) Dir() string { return d.dir }

// Home is the applications' home folder, as they see it.
func (d *Display) Home() string { return d.at("home") }

// Jailed reports whether the display runs inside a jail.
func (d *Display) Jailed() bool { return d.jail != nil }

// at is a path in the display's folder as its processes see it.
func (d *Display) at(elem ...string) string {
	return filepath.Join(append([]string{d.root}, elem...)...)
}

// host is the host's path of a path its processes see.
func (d *Display) host(p string) string {
	if d.jail == nil {
		return p
	}
	return d.jail.Path(p)
}

// HostPID is the host's id of the display's process pid, as a bus or
// the display server reports it (the id inside a jail).
func (d *Display) HostPID(pid int) int {
	if d.jail == nil {
		return pid
	}
	return d.jail.HostPID(pid)
}

// Command prepares a process that runs on the display and its bus.
func (d *Display) Command(name string, args ...string) *exec.Cmd {
	return d.command(name, args...)
}

func (d *Display) command(name string, args ...string) *exec.Cmd {
	return d.exec(d.Home(), d.Env, append([]string{name}, args...)...)
}

// AppCommand prepares an application to run on the display, in dir, with
// env (the display's variables among them) added to this process's
// environment, or inside a jail to the jail's.
func (d *Display) AppCommand(dir string, env []string, argv ...string) *exec.Cmd {
	return d.exec(dir, env, argv...)
}

// exec prepares argv where the display runs, tagged, with env added to
// the environment there.
func (d *Display) exec(dir string, env []string, argv ...string) *exec.Cmd {
	env = append(slices.Clone(env), tagVar+"="+d.tag)
	if d.jail != nil {
		c := d.jail.Command(dir, env, argv...)
		// What runs inside may outlive the host process that entered the
		// jail, holding its output: Wait does not wait on it for long.
		c.WaitDelay = 2 * time.Second
		return c
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), env...)
	c.Dir = dir
	return c
}

// Launch starts an application on the display. Close stops it (or the
// caller, earlier, through the Cmd's Process; do not Wait on it).
func (d *Display) Launch(name string, args ...string) (*exec.Cmd, error) {
	c := d.command(name, args...)
	if err := d.start(c); err != nil {
		return nil, fmt.Errorf("launch %s: %w", name, err)
	}
	return c, nil
}

// start runs c in a process group of its own, tagged, stopped by Close.
func (d *Display) start(c *exec.Cmd) error {
	_, err := d.startProc(c)
	return err
}

func (d *Display) startProc(c *exec.Cmd) (*proc, error) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setpgid, c.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
	if c.Env == nil {
		c.Env = os.Environ()
	}
	c.Env = append(c.Env, tagVar+"="+d.tag)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return nil, errors.New("the display has been closed")
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &proc{c, make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(p.done)
	}()
	d.procs = append(d.procs, p)
	return p, nil
}

// Pids are the process ids the display started (to check none is left).
func (d *Display) Pids() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var pids []int
	for _, p := range d.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// Close stops everything the display started, newest first, each with
// its whole process group, then whatever else carries its tag (services
// the buses started), and removes its folder.
func (d *Display) Close() error {
	d.mu.Lock()
	procs := d.procs
	d.procs, d.ended = nil, true
	d.mu.Unlock()
	if d.jail != nil {
		// Inside a jail a process may leave the group it was started in:
		// Xvfb, finding no process group of its own in the jail's PID
		// namespace (the group's leader is outside), makes one. Every
		// process the display started there carries its tag.
		killTagged(d.tag)
	}
	for i := len(procs) - 1; i >= 0; i-- {
		pid := procs[i].cmd.Process.Pid
		if pid <= 0 {
			continue
		}
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-procs[i].done:
		case <-time.After(2 * time.Second):
		}
		// The group may hold children (the AT-SPI launcher's own bus),
		// and a process that ignored SIGTERM.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-procs[i].done
	}
	killTagged(d.tag)
	if d.dir != "" {
		unmountUnder(d.dir)
		return os.RemoveAll(d.dir)
	}
	return nil
}

// startXvfb starts Xvfb with -displayfd, which picks a free display and
// writes its number once the server is ready, behind a cookie (xauth.go).
func (d *Display) startXvfb(ctx context.Context, o Options) error {
	auth, cookie := d.at("xauth"), randomBytes(16)
	if err := writeXauthority(d.host(auth), cookie); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	x := d.exec("", nil, servers[Xvfb], "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", o.Width, o.Height),
		"-nolisten", "tcp", "-noreset", "-auth", auth) // no reset: it would forget the user let in
	x.ExtraFiles = []*os.File{w}
	x.Stderr = &tail.Buffer{}
	err = d.start(x)
	w.Close()
	if err != nil {
		return fmt.Errorf("start Xvfb: %w", err)
	}
	line, err := readLine(ctx, r, 15*time.Second)
	if err != nil {
		return fmt.Errorf("Xvfb did not report a display: %w%s", err, errorNote(x.Stderr))
	}
	d.x11, d.X11 = ":"+line, ":"+line
	socket := d.host("/tmp/.X11-unix/X" + line)
	if d.jail != nil {
		// The X socket is a file of the jail's own /tmp. X11 clients take
		// a display named "/path/NAME:N" as the socket "/path/NAME:N":
		// a link of that name in the host folder leads to it.
		link := filepath.Join(d.dir, "X:"+line)
		if err := os.Symlink(socket, link); err != nil {
			return err
		}
		d.X11 = filepath.Join(d.dir, "X") + ":" + line
	}
	return allowLocalUser(socket, line, cookie)
}

// compositorUser is who a compositor runs as. sway refuses to run as
// root; as root, Saucer runs it as nobody, with a runtime folder of its
// own that the applications (root) reach.
func compositorUser() *syscall.Credential {
	if os.Getuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}
}

// runtimeDir makes the compositor's runtime folder, owned by cred.
func (d *Display) runtimeDir(cred *syscall.Credential) (string, error) {
	run := filepath.Join(d.dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		return "", err
	}
	if cred != nil {
		// The folder above must be passable for the compositor's user,
		// and so must every folder above it: a private TMPDIR (mode
		// 0700, as systemd's or a CI's) would otherwise make sway fail
		// with only "Unable to open wayland socket".
		if err := os.Chmod(d.dir, 0o711); err != nil {
			return "", err
		}
		for dir := filepath.Dir(d.dir); ; dir = filepath.Dir(dir) {
			if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 {
				return "", fmt.Errorf("sway refuses to run as root, so it runs as nobody, who cannot pass %s (mode %04o): "+
					"make it passable (chmod o+x %s) or set TMPDIR to a folder nobody can pass", dir, fi.Mode().Perm(), dir)
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		if err := os.Chown(run, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", err
		}
	}
	return run, nil
}

// startSway starts a headless sway (software rendering, no input
// devices, no Xwayland) whose configuration writes its Wayland socket and
// IPC socket into a FIFO once it runs.
func (d *Display) startSway(ctx context.Context, o Options) error {
	cred := compositorUser()
	run, err := d.runtimeDir(cred)
	if err != nil {
		return err
	}
	ready := filepath.Join(run, "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(ready, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	conf := filepath.Join(run, "config")
	// Windows float at the size they ask for, as on Xvfb: tiled, each
	// would fill the screen, and every screenshot would be a screenful
	// (8 times galculator's pixels, and as many more to encode and for
	// the model to read).
	text := fmt.Sprintf(`# Saucer's headless sway: one output, no Xwayland, no bar.
output HEADLESS-1 resolution %dx%d position 0 0
xwayland disable
focus_on_window_activation focus
for_window [tiling] floating enable
exec printf '%%s\n%%s\n' "$WAYLAND_DISPLAY" "$SWAYSOCK" > %s
`, o.Width, o.Height, ready)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return err
	}
	// Opened read-write, the FIFO's open does not wait for sway, and the
	// read can have a deadline.
	f, err := os.OpenFile(ready, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	c := exec.Command(servers[Sway], "-c", conf)
	c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "WLR_BACKENDS=headless", "WLR_LIBINPUT_NO_DEVICES=1",
		"WLR_RENDERER=pixman", "WAYLAND_DISPLAY=", "DISPLAY=", "HOME="+run)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	c.Stderr = &tail.Buffer{}
	p, err := d.startProc(c)
	if err != nil {
		return fmt.Errorf("start sway: %w", err)
	}
	_ = f.SetReadDeadline(time.Now().Add(15 * time.Second))
	lines, err := readLines(ctx, f, 2, p.done)
	if err != nil {
		return fmt.Errorf("sway did not start: %w%s", err, errorNote(c.Stderr))
	}
	d.Wayland, d.SwaySock = lines[0], lines[1]
	if !filepath.IsAbs(d.Wayland) {
		d.Wayland = filepath.Join(run, d.Wayland)
	}
	return nil
}

// startWeston starts a headless weston with its kiosk shell (each window
// fills the screen) and waits for its readiness message (sd_notify).
func (d *Display) startWeston(ctx context.Context, o Options) error {
	run, err := d.runtimeDir(nil)
	if err != nil {
		return err
	}
	notify := filepath.Join(run, "notify")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer l.Close()
	c := exec.Command(servers[Weston], "--backend=headless-backend.so", "--socket=wayland-saucer",
		fmt.Sprintf("--width=%d", o.Width), fmt.Sprintf("--height=%d", o.Height), "--shell=kiosk-shell.so",
		"--no-config", "--idle-time=0", "--modules=systemd-notify.so")
	c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "NOTIFY_SOCKET="+notify, "WAYLAND_DISPLAY=", "DISPLAY=")
	c.Stderr = &tail.Buffer{}
	if err := d.start(c); err != nil {
		return fmt.Errorf("start weston: %w", err)
	}
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, 256)
		_ = l.SetReadDeadline(time.Now().Add(15 * time.Second))
		for {
			n, _, err := l.ReadFrom(buf)
			if err != nil {
				got <- err
				return
			}
			if strings.Contains(string(buf[:n]), "READY=1") {
				got <- nil
				return
			}
		}
	}()
	select {
	case err = <-got:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("weston did not start: %w%s", err, errorNote(c.Stderr))
	}
	d.Wayland = filepath.Join(run, "wayland-saucer")
	return nil
}

// startBus starts the private session bus on a socket in the display's
// folder (a path, not an abstract socket: it is the same in every network
// namespace).
func (d *Display) startBus(ctx context.Context) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	c := d.exec("", append(d.displayEnv(), "HOME="+d.Home(), "XDG_RUNTIME_DIR="+d.at("xdg")),
		BusDaemon, "--session", "--nofork", "--nosyslog", "--print-address=3", "--address=unix:path="+d.at("bus"))
	c.ExtraFiles = []*os.File{w}
	err = d.start(c)
	w.Close()
	if err != nil {
		return fmt.Errorf("start the session D-Bus: %w", err)
	}
	line, err := readLine(ctx, r, 10*time.Second)
	if err != nil {
		return fmt.Errorf("the session D-Bus did not print its address: %w", err)
	}
	d.bus, d.Bus = line, line
	if d.jail != nil {
		d.Bus = "unix:path=" + d.host(d.at("bus"))
	}
	return nil
}

// a11yReady reports whether the AT-SPI registry answers.
func (d *Display) a11yReady() error {
	conn, err := dbus.Connect(d.Bus)
	if err != nil {
		return err
	}
	defer conn.Close()
	var addr string
	if err := conn.Object("org.a11y.Bus", "/org/a11y/bus").Call("org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return err
	}
	reach, err := d.reach(addr)
	if err != nil {
		return err
	}
	d.a11yAddr, d.A11yBus = addr, reach
	a11y, err := dbus.Connect(reach)
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

// reach is a bus address inside the jail as this process reaches it: a
// socket's path under the jail's root. A bus on an abstract socket (or
// TCP) inside a jail with a network of its own cannot be reached.
func (d *Display) reach(addr string) (string, error) {
	if d.jail == nil {
		return addr, nil
	}
	for _, alt := range strings.Split(addr, ";") {
		kind, params, ok := strings.Cut(alt, ":")
		if !ok || kind != "unix" {
			continue
		}
		kv := strings.Split(params, ",")
		for i, p := range kv {
			if path, ok := strings.CutPrefix(p, "path="); ok {
				kv[i] = "path=" + d.host(path)
				return kind + ":" + strings.Join(kv, ","), nil
			}
		}
	}
	return "", fmt.Errorf("the bus inside the sandbox listens at %s, not at a socket's path, so Saucer cannot reach it from outside", addr)
}

// waitFor calls f until it succeeds, the deadline passes or ctx ends.
func waitFor(ctx context.Context, d time.Duration, f func() error) error {
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

func readLine(ctx context.Context, r *os.File, timeout time.Duration) (string, error) {
	_ = r.SetReadDeadline(time.Now().Add(timeout))
	lines, err := readLines(ctx, r, 1, nil)
	if err != nil {
		return "", err
	}
	return lines[0], nil
}

// readLines reads n non-empty lines from r (whose deadline is set), or
// fails when exited is closed first (the writer's process ended).
func readLines(ctx context.Context, r *os.File, n int, exited <-chan struct{}) ([]string, error) {
	type result struct {
		lines []string
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		br := bufio.NewReader(r)
		var lines []string
		for len(lines) < n {
			line, err := br.ReadString('\n')
			if l := strings.TrimSpace(line); l != "" {
				lines = append(lines, l)
			}
			if err != nil && len(lines) < n {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					err = errors.New("nothing within the deadline")
				} else {
					err = errors.New("it exited first")
				}
				ch <- result{nil, err}
				return
			}
		}
		ch <- result{lines, nil}
	}()
	select {
	case res := <-ch:
		return res.lines, res.err
	case <-exited:
		_ = r.SetReadDeadline(time.Now()) // ends the reader
		return nil, errors.New("it exited first")
	case <-ctx.Done():
		_ = r.SetReadDeadline(time.Now())
		return nil, ctx.Err()
	}
}

// errorNote is the end of a server's error output, for the message when
// it does not start.
func errorNote(w io.Writer) string {
	if s := w.(*tail.Buffer).String(); s != "" {
		return "; its error output ends: " + s
	}
	return ""
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }
