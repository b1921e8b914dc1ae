package display

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/saucerhq/saucer/internal/proctag"
)

// A display's folder is named after its owner, "saucer-display-PID.START-…"
// (START is the owner's start time, so that a reused PID is not taken for
// it), and every process the display starts, and what those start, carries
// the folder's name in SAUCER_DISPLAY. A Saucer killed with SIGKILL takes
// its direct children with it (parent-death signal), but not what they
// started (the buses' services, an application's helpers), nor its folder:
// the first Start of a later process kills the tagged processes of owners
// that are gone and removes their folders. A live owner's display is never
// touched.

const (
	dirPrefix = "saucer-display-"
	tagVar    = "SAUCER_DISPLAY"
)

var sweepOnce sync.Once

// ownerTag is this process's part of the names: PID.START.
var ownerTag = sync.OnceValue(func() string {
	return fmt.Sprintf("%d.%d", os.Getpid(), startTime(os.Getpid()))
})

// startTime is a process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), or 0 if it is not running.
func startTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// ownerAlive reports whether the owner named in a display folder's name
// still runs; ok is false for a name that names no owner.
func ownerAlive(name string) (alive, ok bool) {
	rest, found := strings.CutPrefix(name, dirPrefix)
	if !found {
		return false, false
	}
	tag, _, _ := strings.Cut(rest, "-")
	pidText, startText, found := strings.Cut(tag, ".")
	pid, err1 := strconv.Atoi(pidText)
	start, err2 := strconv.ParseUint(startText, 10, 64)
	if !found || err1 != nil || err2 != nil || pid <= 0 {
		return false, false
	}
	return startTime(pid) == start, true
}

// sweep stops what displays of dead owners left running and removes their
// folders. Processes are found by their tag, not through the folders, so
// that one whose folder is already gone is found too.
func sweep() {
	for _, tag := range runningTags() {
		if alive, ok := ownerAlive(tag); ok && !alive {
			killTagged(tag)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		if alive, ok := ownerAlive(filepath.Base(d)); ok && !alive {
			killTagged(filepath.Base(d))
			unmountUnder(d)
			os.RemoveAll(d)
		}
	}
}

// runningTags are the display tags in running processes' environments.
func runningTags() []string {
	seen := map[string]bool{}
	proctag.Each(tagVar, func(_ int, tag string) { seen[tag] = true })
	return slices.Collect(maps.Keys(seen))
}

// killTagged kills every process whose environment carries the display's
// tag, waiting up to 2s while a dying parent forks once more.
func killTagged(tag string) { proctag.Kill(tagVar, tag, 2*time.Second) }

// unmountUnder detaches what is mounted under dir, deepest first: the
// session bus may have activated xdg-document-portal, which mounts its
// FUSE file system at XDG_RUNTIME_DIR/doc and, killed with the display,
// leaves the mount behind, where RemoveAll fails on it. Root detaches
// it; another user asks fusermount, the FUSE mount's own tool.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	prefix := filepath.Clean(dir) + "/"
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// The mount point is the fifth field, with space, tab, newline
		// and backslash as octal escapes.
		if mp := unescapeMountPoint(f[4]); strings.HasPrefix(mp, prefix) {
			points = append(points, mp)
		}
	}
	// Deepest first: a mount inside another goes before it.
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, mp := range points {
		if syscall.Unmount(mp, syscall.MNT_DETACH) == nil {
			continue
		}
		for _, tool := range []string{"fusermount3", "fusermount"} {
			if path, err := exec.LookPath(tool); err == nil && exec.Command(path, "-u", "-z", mp).Run() == nil {
				break
			}
		}
	}
}

// unescapeMountPoint undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPoint(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}
