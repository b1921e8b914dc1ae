// Package sandbox gives a device a throwaway Linux machine: a copy-on-write
// root filesystem in its own mount, PID, UTS, IPC and network namespaces,
// with cgroup limits where the host allows them. Whatever runs inside may
// act as root there (add users, write /etc, install files) and the host
// does not change.
//
// Saucer does not implement containers: bubblewrap (bwrap) builds the
// namespaces and drops capabilities, the kernel's overlayfs makes the
// copy-on-write root, and util-linux's unshare, nsenter and setpriv start
// the sandbox and run commands in it. docs/sandbox.md says why these.
//
// One sandbox is one long-lived bwrap whose first process only waits; tools
// run commands in it with Command (which joins its namespaces) and reach its
// files through Path (the host's view of its root, /proc/PID/root). Closing
// the sandbox ends its PID namespace, so every process in it dies, setsid or
// not, and the writable layer (a size-limited tmpfs) is gone with its mount
// namespace: nothing of it stays on the host but the work folder, a host
// directory bound at Options.WorkDir.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Network modes.
const (
	// NetworkNone gives the sandbox its own network namespace: a loopback
	// interface of its own and nothing else.
	NetworkNone = "none"
	// NetworkHost shares the host's network.
	NetworkHost = "host"
)

// Defaults for the zero Options.
const (
	DefaultMemory   = 2 << 30 // bytes
	DefaultDisk     = 2 << 30 // bytes of the writable layer
	DefaultPIDs     = 1024
	DefaultHostname = "sandbox"
	DefaultWorkDir  = "/root"
)

// Env is the environment commands get when the caller names none of these
// variables: the host's environment never reaches the sandbox.
var Env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/bash", "LANG=C.UTF-8", "TERM=dumb",
}

// caps is what root keeps inside: Docker's default set for containers,
// without CAP_MKNOD (no device files), CAP_NET_RAW and CAP_SETFCAP (file
// capabilities on a file in the working folder would be powers on the
// host). Mounting, module loading, ptrace of others, raw I/O and the like
// are not in it.
var caps = []string{"chown", "dac_override", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "net_bind_service", "sys_chroot", "audit_write"}

// Open-file limits inside: a container's, not the host's. 1024 soft keeps
// select(2) users and programs that close every descriptor up to the limit
// working; 524288 hard lets those that want more raise it (systemd's
// defaults for services, and Docker's since it stopped passing its own).
// A host that does not give Saucer CAP_SYS_RESOURCE keeps its own hard
// limit where it is lower (noFile).
const (
	NoFileSoft = 1024
	NoFileHard = 524288
)

// noFile is the open-file limits the sandbox gets on this host.
var noFile = sync.OnceValues(func() (soft, hard uint64) {
	soft, hard = NoFileSoft, NoFileHard
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil && cur.Max < hard && !hasCap(unix.CAP_SYS_RESOURCE) {
		hard = cur.Max
	}
	return min(soft, hard), hard
})

// hasCap reports whether this process has a capability in effect.
func hasCap(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<c) != 0
		}
	}
	return false
}

// maskedProc are files of /proc that show the host's kernel state and are
// hidden inside, as Docker hides them: /proc/keys lists the keyrings of
// the host's root, who root inside is.
var maskedProc = []string{"/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/timer_list", "/proc/sched_debug",
	"/proc/latency_stats", "/proc/sysrq-trigger", "/proc/kallsyms"}

// Options describe a sandbox. The zero value is a sandbox over the host's
// root with no network and default limits.
type Options struct {
	// Root is the read-only lower layer of the root filesystem: "/" (the
	// host's) or a root filesystem directory (mmdebstrap's, an unpacked
	// image). It must hold /bin/sh, env and setpriv. Empty (or "auto")
	// means DefaultImageRoot where it holds one, else the host's.
	Root string
	// Work is a host directory bound at WorkDir inside, read-write: the
	// only place where what the sandbox writes outlives it. Empty means a
	// folder in the writable layer, gone at Close.
	Work string
	// WorkDir is where Work appears and where commands start; default /root.
	WorkDir string
	// Network is NetworkNone (default) or NetworkHost.
	Network string
	// Hide lists folders of Root that are empty inside, and files that are
	// absent, even within shown folders; nil means DefaultHide.
	Hide []string
	// Show lists more host folders the sandbox sees, at the same paths:
	// over the host's root, besides SystemFolders (copy-on-write, as the
	// rest); over an image root, bound read-only.
	Show []string
	// Memory (bytes), PIDs (processes) and CPUs (cores, fractions allowed)
	// limit the whole sandbox through a cgroup where the host allows it;
	// zero means the default (no CPU limit), negative means none.
	Memory int64
	PIDs   int
	CPUs   float64
	// Disk bounds the writable layer in bytes (files written outside the
	// work folder); zero means DefaultDisk.
	Disk int64
	// Hostname inside; default "sandbox".
	Hostname string
	// StartTimeout bounds Start; zero means 10s.
	StartTimeout time.Duration
}

// Sandbox is a running sandbox. If everything in it is killed (kill -9 -1
// inside ends its first process, and with it the sandbox), the next use
// starts a fresh one over the same working folder, and the next command
// is told so on its stderr.
type Sandbox struct {
	opts    Options
	dir     string // host folder: mount points, the owner marker, the state file
	cgroup  *cgroup
	nsenter string    // its absolute path
	helper  string    // the seccomp helper's path (enter.go)
	work    workState // the work folder as the sandbox found it (tidy.go)

	mu       sync.Mutex
	cur      *instance // the running sandbox; nil once Close began or a restart failed
	notice   string    // for the next command: why its sandbox is a fresh one
	err      error     // why there is no sandbox (a failed restart)
	restarts int
	closing  bool

	closeOnce sync.Once
	closeErr  error
	watched   chan struct{} // closed when the watcher has returned

	pidMu    sync.Mutex
	hostPIDs map[int]int // by id inside, as last found (pids.go)
}

// instance is one run of the sandbox: its bwrap and first process.
type instance struct {
	pid    int   // host PID of bwrap's init, PID 1 inside
	pidfds []int // pidfds of it and of the first process, its child: readable once ended
	first  int   // host PID of the first process
	cmd    *exec.Cmd
	keep   *os.File // its stdin: closing it ends the sandbox
	done   chan struct{}
	stderr *bytes.Buffer
}

// ErrUnsupported wraps every reason a host cannot make sandboxes.
var ErrUnsupported = errors.New("this host cannot create sandboxes")

// Check reports whether this host can create sandboxes, and if not, why
// and what to do. It does not start one.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the sandbox mounts an overlay root and needs root on the host (running as uid %d); "+
			"run Saucer as root, in a VM or a privileged container, or use the plain device (device: local)", ErrUnsupported, os.Geteuid())
	}
	for _, tool := range []string{"bwrap", "unshare", "nsenter", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			pkg := "util-linux"
			if tool == "bwrap" {
				pkg = "bubblewrap"
			}
			return fmt.Errorf("%w: %s is not installed (Debian/Ubuntu package %s)", ErrUnsupported, tool, pkg)
		}
	}
	if !filesystemKnown("overlay") {
		return fmt.Errorf("%w: the kernel has no overlay filesystem (modprobe overlay)", ErrUnsupported)
	}
	if _, _, err := filterArches(); err != nil {
		return err
	}
	return nil
}

func filesystemKnown(name string) bool {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(strings.TrimPrefix(line, "nodev")) == name {
			return true
		}
	}
	return false
}

func (o Options) withDefaults() (Options, error) {
	if o.Root == "" || o.Root == "auto" {
		o.Root = autoRoot()
	}
	if o.WorkDir == "" {
		o.WorkDir = DefaultWorkDir
	}
	if o.Network == "" {
		o.Network = NetworkNone
	}
	if o.Network != NetworkNone && o.Network != NetworkHost {
		return o, fmt.Errorf("sandbox network %q: use %q or %q", o.Network, NetworkNone, NetworkHost)
	}
	if o.Hide == nil {
		o.Hide = DefaultHide
	}
	o.Hide = append([]string(nil), o.Hide...)
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	if o.PIDs == 0 {
		o.PIDs = DefaultPIDs
	}
	if o.Disk <= 0 {
		o.Disk = DefaultDisk
	}
	if o.Hostname == "" {
		o.Hostname = DefaultHostname
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 10 * time.Second
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return o, err
	}
	o.Root = root
	// overlayfs splits its options at commas and lowerdir at colons.
	if strings.ContainsAny(o.Root, ",:\\") {
		return o, fmt.Errorf("sandbox root %q: a path with ',', ':' or '\\' cannot be an overlay layer; move or link it", o.Root)
	}
	if p := rootMissing(o.Root); p != "" {
		return o, fmt.Errorf("sandbox root %s has no %s: a root filesystem for the sandbox needs a shell, coreutils and util-linux (docs/sandbox.md builds one)", o.Root, p)
	}
	if !filepath.IsAbs(o.WorkDir) {
		return o, fmt.Errorf("sandbox workdir %q must be an absolute path inside the sandbox", o.WorkDir)
	}
	if o.Work != "" {
		w, err := filepath.Abs(o.Work)
		if err != nil {
			return o, err
		}
		if st, err := os.Stat(w); err != nil || !st.IsDir() {
			return o, fmt.Errorf("sandbox work folder %s is not a directory", w)
		}
		o.Work = w
	}
	for i, h := range o.Hide {
		if !filepath.IsAbs(h) {
			return o, fmt.Errorf("sandbox hide %q: must be an absolute path", h)
		}
		o.Hide[i] = filepath.Clean(h)
	}
	o.Show = slices.Clone(o.Show)
	for i, p := range o.Show {
		if !filepath.IsAbs(p) {
			return o, fmt.Errorf("sandbox show %q: must be an absolute path", p)
		}
		o.Show[i] = filepath.Clean(p)
		if _, err := os.Stat(o.Show[i]); err != nil {
			return o, fmt.Errorf("sandbox show %s: %w", p, err)
		}
	}
	return o, nil
}

// startScript runs in a private mount namespace made by unshare: it joins
// the cgroup, sets the open-file limits, makes the writable layer and the
// overlay root, and becomes bwrap. Paths come in the environment, so
// nothing needs quoting.
//
// bwrap's init is PID 1 inside, where anyone may read its command line and
// root its environment (/proc/1/cmdline, /proc/1/environ): so bwrap runs
// with an empty environment, by a name of the sandbox's own (launcher, a
// link to bwrap in the host folder, run from there: no path in its argv)
// and with its arguments, which name host folders, read from a pipe
// (--args; the command that follows them stays in argv, where bwrap wants
// it). Its command line says "./saucer-sandbox --args 5 -- /bin/sh -c ...".
const startScript = `set -e
for f in $SBX_CGROUP; do echo $$ > "$f"; done
ulimit -H -n $SBX_NOFILE_HARD
ulimit -S -n $SBX_NOFILE_SOFT
mount -t tmpfs -o "size=$SBX_DISK,mode=0755" saucer-layer "$SBX_DIR/layer"
mkdir "$SBX_DIR/layer/upper" "$SBX_DIR/layer/work"
cp -a "$SBX_DIR/view" "$SBX_DIR/layer/view"
mount -t overlay saucer-root -o "lowerdir=$SBX_DIR/layer/view:$SBX_LOWER,upperdir=$SBX_DIR/layer/upper,workdir=$SBX_DIR/layer/work" "$SBX_DIR/root"
cd "$SBX_DIR"
exec env -i ./` + launcher + ` --args 5 "$@"
`

// launcher is the name bwrap runs by: a link to it in the host folder.
const launcher = "saucer-sandbox"

// Start creates a sandbox. The caller must Close it.
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	helper, err := helperPath()
	if err != nil {
		return nil, err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, err
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, err
	}
	if bwrap, err = filepath.Abs(bwrap); err != nil {
		return nil, err
	}
	sweepOnce.Do(sweep)
	dir, err := os.MkdirTemp("", dirPrefix+ownerTag()+"-")
	if err != nil {
		return nil, err
	}
	s := &Sandbox{opts: opts, dir: dir, nsenter: nsenter, helper: helper, watched: make(chan struct{})}
	if err := s.prepare(bwrap); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cgroup = newCgroup(filepath.Base(dir), opts)
	if opts.Work != "" {
		if s.work, err = statWork(opts.Work); err != nil {
			s.cleanup()
			return nil, err
		}
	}
	inst, err := s.start(ctx)
	if err != nil {
		s.cleanup()
		return nil, err
	}
	s.cur = inst
	go s.watch(inst)
	return s, nil
}

// prepare makes the host folder's contents: the mount points, the view
// layer and the launcher (bwrap under the sandbox's name).
func (s *Sandbox) prepare(bwrap string) error {
	for _, d := range []string{"layer", "root"} {
		if err := os.Mkdir(filepath.Join(s.dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := os.Symlink(bwrap, filepath.Join(s.dir, launcher)); err != nil {
		return err
	}
	// What masked files of /proc show: nothing (a device file would not
	// open on bwrap's nodev mounts).
	if err := os.WriteFile(filepath.Join(s.dir, "empty"), nil, 0o444); err != nil {
		return err
	}
	if err := buildView(filepath.Join(s.dir, "view"), s.opts); err != nil {
		return fmt.Errorf("sandbox: the view of the host: %w", err)
	}
	return nil
}

// start runs one instance of the sandbox and waits until it is ready.
func (s *Sandbox) start(ctx context.Context) (*instance, error) {
	opts := s.opts
	filter, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	soft, hard := noFile()
	inst := &instance{done: make(chan struct{}), stderr: &bytes.Buffer{}}
	bw := []string{"--bind", filepath.Join(s.dir, "root"), "/", "--dev", "/dev", "--proc", "/proc",
		// Kernel settings are the host's: root inside may read, not write
		// them (core_pattern, for one, would run a host program).
		"--ro-bind", "/proc/sys", "/proc/sys"}
	for _, p := range maskedProc {
		if _, err := os.Stat(p); err == nil { // the same kernel: the same files
			bw = append(bw, "--ro-bind", filepath.Join(s.dir, "empty"), p)
		}
	}
	if opts.Root != "/" {
		for _, p := range opts.Show {
			bw = append(bw, "--ro-bind", p, p)
		}
	}
	if opts.Work != "" {
		// bwrap mounts every bind nosuid and nodev: a setuid file or a
		// device file in the working folder is inert inside.
		bw = append(bw, "--bind", opts.Work, opts.WorkDir)
	} else {
		bw = append(bw, "--dir", opts.WorkDir)
	}
	bw = append(bw, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
	if opts.Network == NetworkNone {
		bw = append(bw, "--unshare-net")
	}
	bw = append(bw, "--hostname", opts.Hostname, "--die-with-parent", "--new-session", "--cap-drop", "ALL")
	for _, c := range caps {
		bw = append(bw, "--cap-add", "CAP_"+strings.ToUpper(c))
	}
	bw = append(bw, "--chdir", opts.WorkDir, "--info-fd", "3", "--seccomp", "4")

	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", startScript, "saucer-sandbox",
		// The first process says it runs (bwrap's info comes before the
		// root is in place), then waits for its stdin to close: Close, or
		// the death of this process.
		"--", "/bin/sh", "-c", "echo ready; read _ignored")
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SBX_DIR=" + s.dir, "SBX_LOWER=" + opts.Root,
		"SBX_DISK=" + strconv.FormatInt(opts.Disk, 10), "SBX_CGROUP=" + strings.Join(s.cgroup.procs(), " "),
		"SBX_NOFILE_SOFT=" + strconv.FormatUint(soft, 10), "SBX_NOFILE_HARD=" + strconv.FormatUint(hard, 10)}
	cmd.Stderr, cmd.Dir = inst.stderr, "/"
	// Its own process group: a Ctrl-C at the terminal is Saucer's to
	// handle; the sandbox ends when Saucer closes it or dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ends, err := pipes(5)
	if err != nil {
		return nil, err
	}
	// bwrap's info document, a pipe whose closing ends the sandbox, the
	// first process's "ready", the seccomp filter for bwrap to load, and
	// bwrap's arguments.
	info, infoW, keepR, keepW, ready, readyW, filterR, filterW := ends[0], ends[1], ends[2], ends[3], ends[4], ends[5], ends[6], ends[7]
	argsR, argsW := ends[8], ends[9]
	defer ready.Close()
	// The filter (a few KiB) fits in the pipe's buffer.
	if _, err := filterW.Write(filter); err != nil {
		closeAll(ends)
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	filterW.Close()
	cmd.Stdin, cmd.Stdout, cmd.ExtraFiles = keepR, readyW, []*os.File{infoW, filterR, argsR}
	if err := cmd.Start(); err != nil {
		closeAll(ends)
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	infoW.Close()
	keepR.Close()
	readyW.Close()
	filterR.Close()
	argsR.Close()
	// NUL-separated, as --args reads them; from a goroutine, as they may
	// not fit in the pipe. If bwrap fails before it reads them, the write
	// fails (no reader) and the goroutine ends.
	go func() {
		io.WriteString(argsW, strings.Join(bw, "\x00")+"\x00")
		argsW.Close()
	}()
	inst.cmd, inst.keep = cmd, keepW
	go func() {
		cmd.Wait()
		close(inst.done)
	}()

	pid, err := readInfo(ctx, info, ready, opts.StartTimeout)
	info.Close()
	if err == nil {
		inst.pid = pid
		err = inst.track(pid)
	}
	if err == nil {
		// The first process, whose death (kill -9 -1 inside) ends the
		// sandbox: it is gone before bwrap's init and before the rest.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			if child, _ := strconv.Atoi(f[0]); child > 0 {
				inst.first = child
				err = inst.track(child)
			}
		}
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(s.dir, "pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600)
	}
	if err != nil {
		inst.stop()
		msg := strings.TrimSpace(inst.stderr.String())
		if msg != "" {
			return nil, fmt.Errorf("sandbox did not start: %v: %s", err, msg)
		}
		return nil, fmt.Errorf("sandbox did not start: %w", err)
	}
	return inst, nil
}

// track keeps a pidfd of a process of the instance.
func (i *instance) track(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	i.pidfds = append(i.pidfds, fd)
	return nil
}

// ended reports whether the instance has ended or is ending: its first
// process or bwrap's init has exited (the rest are being killed), or the
// first process has a SIGKILL on its way (kill -9 -1 returns before its
// victims are gone).
func (i *instance) ended() bool {
	select {
	case <-i.done:
		return true
	default:
	}
	if i.first > 0 && killPending(i.first) {
		return true
	}
	fds := make([]unix.PollFd, len(i.pidfds))
	for k, fd := range i.pidfds {
		fds[k] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// killPending reports whether SIGKILL is pending for a process.
func killPending(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		for _, field := range []string{"SigPnd:", "ShdPnd:"} {
			if v, ok := strings.CutPrefix(line, field); ok {
				if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(syscall.SIGKILL-1)) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// stop ends the instance: closing its stdin ends the first process, and
// with it the PID namespace; if that does not do it soon, the launcher is
// killed.
func (i *instance) stop() {
	if i.keep != nil {
		i.keep.Close()
	}
	if i.cmd != nil && i.cmd.Process != nil {
		select {
		case <-i.done:
		case <-time.After(500 * time.Millisecond):
			// bwrap's first process did not end at EOF (it was replaced, or
			// is stopped): end the namespace by killing the launcher.
			i.cmd.Process.Kill()
			<-i.done
		}
	}
	for _, fd := range i.pidfds {
		unix.Close(fd)
	}
	i.pidfds = nil
}

// why says why an instance ended by itself.
func (i *instance) why() string {
	st := i.cmd.ProcessState
	code := -1
	if st != nil {
		code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	if code == 128+int(syscall.SIGKILL) {
		return "every process in it was killed (kill -9 -1 inside does that, and so does the kernel when the sandbox runs out of memory)"
	}
	msg := strings.TrimSpace(i.stderr.String())
	if msg != "" {
		return fmt.Sprintf("its first process ended (exit status %d: %s)", code, msg)
	}
	return fmt.Sprintf("its first process ended (exit status %d)", code)
}

// watch replaces an instance that ends by itself with a fresh one, so that
// servers restarted over Argv find a sandbox to enter.
func (s *Sandbox) watch(inst *instance) {
	defer close(s.watched)
	for inst != nil {
		<-inst.done
		next, _ := s.running(context.Background())
		inst = next
	}
}

// running is the running instance, after replacing one that ended.
func (s *Sandbox) running(ctx context.Context) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errors.New("sandbox: closed")
	}
	if s.cur == nil {
		return nil, s.err
	}
	if !s.cur.ended() {
		return s.cur, nil
	}
	old := s.cur
	// It is ending: wait for bwrap to go, for the reason.
	select {
	case <-old.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	old.stop()
	why := old.why()
	slog.Warn("the sandbox ended; starting a fresh one", "reason", why, "workdir", s.opts.Work)
	next, err := s.start(ctx)
	if err != nil {
		s.cur, s.err = nil, fmt.Errorf("sandbox: it ended (%s) and a fresh one did not start: %w", why, err)
		return nil, s.err
	}
	s.cur, s.restarts = next, s.restarts+1
	s.notice = fmt.Sprintf("saucer: the sandbox ended before this command: %s. This command runs in a fresh sandbox: "+
		"the working folder %s is as it was, everything else (installed packages, users, files elsewhere, processes) is new.",
		why, s.opts.WorkDir)
	return next, nil
}

// pipes makes n pipes: their read and write ends, in turn. On an error
// none is left open.
func pipes(n int) ([]*os.File, error) {
	var ends []*os.File
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ends)
			return nil, err
		}
		ends = append(ends, r, w)
	}
	return ends, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// readInfo waits until the sandbox runs: bwrap's info document (the PID of
// its first process), then that process's "ready" (bwrap writes its info
// before the new root is in place).
func readInfo(ctx context.Context, info, ready io.Reader, timeout time.Duration) (int, error) {
	type result struct {
		pid int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var doc struct {
			ChildPID int `json:"child-pid"`
		}
		err := json.NewDecoder(info).Decode(&doc)
		if err == nil && doc.ChildPID <= 0 {
			err = errors.New("bwrap reported no process")
		}
		if err == nil {
			line := make([]byte, len("ready\n"))
			if _, err = io.ReadFull(ready, line); err == nil && string(line) != "ready\n" {
				err = fmt.Errorf("unexpected %q from the sandbox's first process", line)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("bwrap ended before the sandbox was ready")
		}
		ch <- result{doc.ChildPID, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-ch:
		return res.pid, res.err
	case <-t.C:
		return 0, fmt.Errorf("not ready after %s", timeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Path is the host path of a path inside the sandbox. Reading through it
// is reading the sandbox's files; it is valid while the sandbox runs (a
// sandbox that ended is replaced first).
// Absolute symlinks inside lead to the host's files when followed from
// here: open through an os.Root made on Path("/").
func (s *Sandbox) Path(inside string) string {
	pid := 0
	if inst, err := s.running(context.Background()); err == nil {
		pid = inst.pid
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", pid), filepath.Clean("/"+inside))
}

// WorkDir is the folder inside where commands start.
func (s *Sandbox) WorkDir() string { return s.opts.WorkDir }

// Hostname is the host name commands see inside.
func (s *Sandbox) Hostname() string { return s.opts.Hostname }

// enterScript runs on the host before a command enters the sandbox: it
// joins the cgroup (before anything inside can fork), sets the open-file
// limits, says the notice if any, reads the PID of the sandbox's first
// process (a fresh sandbox has a new one) and execs the seccomp helper.
const enterScript = `while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift
ulimit -H -n $1 && ulimit -S -n $2 || exit 125
[ -z "$3" ] || printf '%s\n' "$3" >&2
read -r pid < "$4" || exit 125
helper=$5; nsenter=$6; shift 6
exec "$helper" "$nsenter" --target "$pid" "$@"`

// Argv is the host command line that runs argv inside the sandbox, in dir
// (inside; empty means WorkDir), with exactly env as its environment (nil
// means Env), as root with the sandbox's capabilities, in its cgroup,
// under its seccomp filter. It stays valid when the sandbox is replaced.
func (s *Sandbox) Argv(dir string, env []string, argv ...string) []string {
	return s.argv("", dir, env, argv...)
}

func (s *Sandbox) argv(notice, dir string, env []string, argv ...string) []string {
	if dir == "" {
		dir = s.opts.WorkDir
	}
	if env == nil {
		env = Env
	}
	out := []string{"/bin/sh", "-c", enterScript, "saucer-sandbox"}
	out = append(out, s.cgroup.procs()...)
	soft, hard := noFile()
	out = append(out, "--", strconv.FormatUint(hard, 10), strconv.FormatUint(soft, 10), notice, filepath.Join(s.dir, "pid"), s.helper, s.nsenter)
	// --wd without a folder: the first process's (inside the new root);
	// env -C then moves to dir, resolved inside.
	out = append(out, "--mount", "--uts", "--ipc", "--pid", "--net", "--root", "--wd",
		"--", "/usr/bin/setpriv", "--bounding-set", "-all,+"+strings.Join(caps, ",+"), "--",
		"/usr/bin/env", "-i", "-C", dir)
	out = append(out, env...)
	return append(out, argv...)
}

// Command is exec.CommandContext for Argv. A sandbox that ended is
// replaced first, and the command's stderr begins with a line that says
// so; if no sandbox can be had, the command fails to start with the
// reason.
func (s *Sandbox) Command(ctx context.Context, dir string, env []string, argv ...string) *exec.Cmd {
	_, err := s.running(ctx)
	s.mu.Lock()
	notice := s.notice
	s.notice = ""
	s.mu.Unlock()
	a := s.argv(notice, dir, env, argv...)
	cmd := exec.CommandContext(ctx, a[0], a[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if err != nil {
		cmd.Err = err
	}
	return cmd
}

// Restarts counts the fresh sandboxes that replaced one that ended.
func (s *Sandbox) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Limits says which limits apply, for doctor and logs.
func (s *Sandbox) Limits() string { return s.cgroup.describe() }

// Close ends the sandbox: every process in it is killed, its writable layer
// and mounts are gone; the work folder stays, tidied for its owner on the
// host (tidy.go). Close is idempotent.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		inst := s.cur
		s.cur = nil
		s.mu.Unlock()
		if inst != nil {
			inst.stop()
		}
		<-s.watched
		var err error
		if s.opts.Work != "" {
			_, err = tidy(s.opts.Work, s.work)
		}
		s.closeErr = errors.Join(err, s.cleanup())
	})
	return s.closeErr
}

// cleanup removes the cgroup and the host folder of the mount points.
func (s *Sandbox) cleanup() error {
	var errs []error
	if err := s.cgroup.remove(); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("sandbox: remove %s: %w", s.dir, err))
	}
	return errors.Join(errs...)
}
