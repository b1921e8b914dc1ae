package shell

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/saucerhq/saucer/internal/owner"
	"golang.org/x/sys/unix"
)

// A command's cgroup holds every process it starts, wherever they go: a
// child that called setsid and cleared its environment (env -i) leaves
// the process group and the environment tag behind, not the cgroup. So
// a timeout kills the cgroup (cgroup.kill), and with it all of them.
// Commands start inside it (clone into cgroup), so none can fork before
// it is there. It needs cgroup v2, writable at this process's own cgroup;
// where it is not, timeouts fall back to the process group and the tag.
//
// A command's cgroup is removed once its processes are gone, on every
// path (the command ended, timed out, was cancelled): close waits for
// the killed to die and, past closeWait, goes on waiting in the
// background; the server's stop waits for those of cancelled commands,
// so that a process that exits right after a cancel (a second Ctrl-C)
// leaves none. Names carry their owner, "saucer-cmd-PID.START-TAG": what
// a Saucer that could not remove them left (killed with SIGKILL, or
// exited at once at a third Ctrl-C) is removed by the next one to make a
// command's cgroup under the same parent, once its owner is gone and its
// processes too.

// cgroupBase is the directory, once found, under which commands' cgroups
// are made: this process's own cgroup in the v2 hierarchy. why says why
// there is none.
var cgroupBase = sync.OnceValues(func() (dir string, why error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(own), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			dir = filepath.Join(mount, filepath.Clean("/"+rest))
		}
	}
	if dir == "" {
		return "", errors.New("this process is in no cgroup v2")
	}
	// Can a child be made, and killed? cgroup.kill came with Linux 5.14.
	probe := filepath.Join(dir, "saucer-probe-"+newTag())
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", fmt.Errorf("cannot make a cgroup under %s: %w", dir, err)
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		return "", fmt.Errorf("cgroup v2 at %s has no cgroup.kill (Linux 5.14 or newer has it)", dir)
	}
	sweepGroups(dir)
	startWatchdog(dir)
	return dir, nil
})

// watchdog is the write end of the pipe the watchdog reads (see
// startWatchdog): held, never closed, for as long as this process lives.
var watchdog *os.File

// startWatchdog starts the process that kills this process's commands
// when it dies, even by SIGKILL: a shell that reads a pipe whose only
// writer is this process, so that its read ends when this process does,
// and which then kills (cgroup.kill) every command's cgroup this process
// made under base. A command's own shell dies with this process
// (PR_SET_PDEATHSIG, dieWithParent), but not what it started: the rest of
// a pipeline, a make, a child of its child. The watchdog is in a process
// group of its own, so that a Ctrl-C at a terminal does not end it with
// this process. Where it cannot start, the commands' shells still die.
func startWatchdog(base string) {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	script := `cat >/dev/null; for g in "$0"/` + groupPrefix + `"$1"-*/; do [ -e "$g/cgroup.kill" ] && echo 1 >"$g/cgroup.kill"; done 2>/dev/null`
	cmd := exec.Command("/bin/sh", "-c", script, base, owner.Tag())
	cmd.Stdin, cmd.Dir = r, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() != nil {
		w.Close()
		return
	}
	// Never waited for: it ends only when this process has.
	cmd.Process.Release()
	watchdog = w
}

// groupPrefix begins the name of every command's cgroup.
const groupPrefix = "saucer-cmd-"

// sweepGroups removes, under base, the commands' cgroups of Saucers that
// are gone, killing what still runs in them first: a command whose Saucer
// was killed (SIGKILL, where its watchdog could not act) must not go on
// and finish while its work is done again elsewhere. It waits up to a
// second in all for the killed to die; a cgroup still busy then stays for
// the next sweep.
func sweepGroups(base string) {
	groups, _ := filepath.Glob(filepath.Join(base, groupPrefix+"*"))
	deadline := time.Now().Add(time.Second)
	for _, g := range groups {
		tag, _, found := strings.Cut(strings.TrimPrefix(filepath.Base(g), groupPrefix), "-")
		if alive, ok := owner.Alive(tag); found && ok && !alive {
			if os.Remove(g) == nil {
				continue
			}
			os.WriteFile(filepath.Join(g, "cgroup.kill"), []byte("1"), 0)
			waitEmpty(g, deadline)
			os.Remove(g)
		}
	}
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup,
// or /sys/fs/cgroup/unified beside v1 controllers.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup v2 file system is mounted")
}

// TimeoutKill says how a timeout finds what a command started, on this
// machine (saucer doctor prints it).
func TimeoutKill() string {
	dir, why := cgroupBase()
	if why != nil {
		return fmt.Sprintf("a timeout kills the command's process group and what carries its environment tag; "+
			"a child that left both (setsid and env -i) survives: no cgroup per command (%v)", why)
	}
	return "a timeout kills the command's cgroup, with every process it started (a cgroup v2 per command, under " + dir + ")"
}

// cmdGroup is one command's cgroup.
type cmdGroup struct {
	dir  string
	fd   *os.File      // the directory, open, for clone into cgroup
	gone chan struct{} // closed once close has removed it, or given up
}

// newCmdGroup makes a cgroup for the command tagged tag, or returns nil
// where there can be none.
func newCmdGroup(tag string) *cmdGroup {
	base, why := cgroupBase()
	if why != nil {
		return nil
	}
	dir := filepath.Join(base, groupPrefix+owner.Tag()+"-"+tag)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil
	}
	return &cmdGroup{dir: dir, fd: fd, gone: make(chan struct{})}
}

// enter has the process started with attr begin inside the cgroup.
func (g *cmdGroup) enter(attr *syscall.SysProcAttr) {
	if g != nil {
		attr.UseCgroupFD, attr.CgroupFD = true, int(g.fd.Fd())
	}
}

// kill kills every process in the cgroup.
func (g *cmdGroup) kill() {
	if g != nil {
		os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	}
}

// closeWait is how long close waits for the cgroup to go before it
// leaves the rest to the background; backgroundWait is how long that
// goes on (a killed process in uninterruptible sleep on a loaded disk
// can take seconds to die).
var closeWait, backgroundWait = 5 * time.Second, 10 * time.Minute

// close removes the cgroup. Processes still in it (background jobs of a
// command that ended, which keep running by design) are moved to the
// parent cgroup first; after kill, it waits for the dying, for up to
// closeWait here and then in the background. Its gone channel is closed
// once the cgroup is removed (or removal gave up).
func (g *cmdGroup) close() {
	if g == nil {
		return
	}
	g.fd.Close()
	if g.remove(time.Now().Add(closeWait)) {
		close(g.gone)
		return
	}
	go func() {
		defer close(g.gone)
		g.remove(time.Now().Add(backgroundWait))
	}()
}

// done is closed once the cgroup has been removed (or removal gave up);
// it is closed from the start where there is no cgroup.
func (g *cmdGroup) done() <-chan struct{} {
	if g == nil {
		return closedChan
	}
	return g.gone
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// remove removes the cgroup, moving what still runs in it to the parent
// and waiting for the dying, until deadline; it reports whether the
// cgroup is gone.
func (g *cmdGroup) remove(deadline time.Time) bool {
	parent := filepath.Join(filepath.Dir(g.dir), "cgroup.procs")
	pause := time.Millisecond
	for {
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return true
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return false
		}
		procs, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		for _, pid := range bytes.Fields(procs) {
			os.WriteFile(parent, pid, 0) // fails for one that is exiting: it is waited for
		}
		if !waitEmpty(g.dir, deadline) {
			// Empty, yet still busy: the kernel has not quite let go of
			// the last to exit. Try again shortly, not at once.
			time.Sleep(pause)
			pause = min(2*pause, 50*time.Millisecond)
		}
	}
}

// waitEmpty returns once dir's cgroup holds no process, or at deadline;
// it reports whether it waited for a change (false when the cgroup was
// empty, or could not be watched, from the start).
// The kernel signals a change of cgroup.events to inotify.
func waitEmpty(dir string, deadline time.Time) (waited bool) {
	events := filepath.Join(dir, "cgroup.events")
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(in), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(in, events, unix.IN_MODIFY); err != nil {
		return false
	}
	f.SetReadDeadline(deadline)
	buf := make([]byte, 4096)
	for {
		b, err := os.ReadFile(events)
		if err != nil || bytes.Contains(b, []byte("populated 0")) {
			return waited
		}
		if _, err := f.Read(buf); err != nil {
			return waited
		}
		waited = true
	}
}
