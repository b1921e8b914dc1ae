package shell

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A command's cgroup holds every process it starts, wherever they go: a
// child that called setsid and cleared its environment (env -i) leaves
// the process group and the environment tag behind, not the cgroup. So
// a timeout kills the cgroup (cgroup.kill), and with it all of them.
// Commands start inside it (clone into cgroup), so none can fork before
// it is there. It needs cgroup v2, writable at this process's own cgroup;
// where it is not, timeouts fall back to the process group and the tag.

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
	return dir, nil
})

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
	dir string
	fd  *os.File // the directory, open, for clone into cgroup
}

// newCmdGroup makes a cgroup for the command tagged tag, or returns nil
// where there can be none.
func newCmdGroup(tag string) *cmdGroup {
	base, why := cgroupBase()
	if why != nil {
		return nil
	}
	dir := filepath.Join(base, "saucer-"+tag)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil
	}
	return &cmdGroup{dir: dir, fd: fd}
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

// close removes the cgroup. Processes still in it (background jobs of a
// command that ended, which keep running by design) are moved to the
// parent cgroup first; after kill, it waits a moment for the dying.
func (g *cmdGroup) close() {
	if g == nil {
		return
	}
	g.fd.Close()
	parent := filepath.Join(filepath.Dir(g.dir), "cgroup.procs")
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return
		}
		procs, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		for _, pid := range bytes.Fields(procs) {
			os.WriteFile(parent, pid, 0) // fails for one that is exiting: it is waited for
		}
		waitEmpty(g.dir, deadline)
	}
}

// waitEmpty returns once dir's cgroup holds no process, or at deadline.
// The kernel signals a change of cgroup.events to inotify.
func waitEmpty(dir string, deadline time.Time) {
	events := filepath.Join(dir, "cgroup.events")
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(in), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(in, events, unix.IN_MODIFY); err != nil {
		return
	}
	f.SetReadDeadline(deadline)
	buf := make([]byte, 4096)
	for {
		b, err := os.ReadFile(events)
		if err != nil || bytes.Contains(b, []byte("populated 0")) {
			return
		}
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}
