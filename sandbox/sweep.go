package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/saucerhq/saucer/internal/owner"
)

// A sandbox leaves a host folder (its mount points) and a cgroup while it
// runs; Close removes them. A Saucer killed with SIGKILL cannot, and its
// sandbox ends with it (its first process reads EOF, bwrap dies with its
// parent) but the folder and the cgroup stay. Their names carry their
// owner, "saucer-sandbox-PID.START-…" (START is the process's start time,
// so that a reused PID is not taken for the owner): the first Start of a
// process removes what owners that are no longer running left. A folder
// or cgroup of a live process is never touched; a cgroup that still holds
// processes cannot be removed and stays.

const dirPrefix = "saucer-sandbox-"

var sweepOnce sync.Once

// ownerTag is this process's part of the names: PID.START.
var ownerTag = owner.Tag

// ownerAlive reports whether the owner named in a sandbox folder's or
// cgroup's name still runs; ok is false for a name that names no owner
// (made by another version): those are left alone.
func ownerAlive(name string) (alive, ok bool) {
	i := strings.Index(name, dirPrefix)
	if i < 0 {
		return false, false
	}
	tag, _, found := strings.Cut(name[i+len(dirPrefix):], "-")
	if !found {
		return false, false
	}
	return owner.Alive(tag)
}

// sweep removes the folders and cgroups of sandboxes whose owner is gone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		if alive, ok := ownerAlive(filepath.Base(d)); ok && !alive {
			os.RemoveAll(d)
		}
	}
	for _, pattern := range cgroupPatterns() {
		groups, _ := filepath.Glob(pattern)
		for _, g := range groups {
			if alive, ok := ownerAlive(filepath.Base(g)); ok && !alive {
				os.Remove(g) // fails, and stays, while processes are in it
			}
		}
	}
}
