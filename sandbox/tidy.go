package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The work folder is a host folder that root inside writes: what it leaves
// there is opened later by the folder's owner on the host, as the host's
// user, with the host's files around. Three things left there would harm
// that user: a symbolic link that leads out of the folder (ln -s
// /etc/shadow x: a host program that follows it reads or writes the
// host's file), a file given to another user (chown 1234 x: host user
// 1234 may then change a file its owner will run or read), and a setuid or
// setgid file (the seccomp filter refuses the calls that make one; this is
// the second line). tidy removes the first and gives the others back.
//
// It runs at Close, once every process inside is dead, and not after each
// command: commands are not the only writers (a persistent shell's
// background jobs, daemons a task started, sandboxed MCP servers all run
// between commands and for the whole session), so a folder tidied after a
// command could hold a new link a moment later. At Close nothing inside
// can write any more, and the folder stays as tidy leaves it. During a
// session the folder is the sandbox's; docs/sandbox.md says so.
//
// Only what changed since the sandbox started is touched (an entry's
// ctime, which no call can set back): the owner's own links and files of
// other users from before are theirs. A host program that writes in the
// folder during the session is not told apart from the sandbox: the folder
// is the sandbox's while it runs. File systems mounted within the folder
// are left alone.

// noteName is the file in the work folder where tidy says which links it
// removed.
const noteName = ".saucer-removed-links"

// workState is the work folder as the sandbox found it.
type workState struct {
	uid, gid uint32
	dev      uint64 // its file system: tidy does not leave it
	mode     fs.FileMode
	since    time.Time // before the sandbox's first process could write
}

func statWork(dir string) (workState, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return workState{}, err
	}
	sys := st.Sys().(*syscall.Stat_t)
	// time.Now is read before bwrap starts; what runs inside changes files
	// tens of milliseconds later at the earliest, more than the coarse
	// clock the file systems stamp with lags behind it (a tick).
	return workState{uid: sys.Uid, gid: sys.Gid, dev: uint64(sys.Dev), mode: st.Mode(), since: time.Now()}, nil
}

// tidy makes the work folder safe for its owner, as above. It returns the
// links it removed, as "path -> target", and what it could not do.
func tidy(dir string, w workState) ([]string, error) {
	var removed []string
	var errs []error
	since := w.since.UnixNano()
	changed := func(st *syscall.Stat_t) bool {
		return st.Ctim.Nano() >= since
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		st := info.Sys().(*syscall.Stat_t)
		if path == dir {
			// The folder itself, as it was: chown or chmod of /root inside
			// changes it.
			if st.Uid != w.uid || st.Gid != w.gid {
				errs = append(errs, os.Lchown(path, int(w.uid), int(w.gid)))
			}
			if info.Mode() != w.mode {
				errs = append(errs, os.Chmod(path, w.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)))
			}
			return nil
		}
		if uint64(st.Dev) != w.dev {
			// Another file system mounted in the folder: not the owner's
			// ordinary files, and perhaps not files at all (find -xdev).
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !changed(st) {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			if leadsOut(dir, filepath.Dir(rel), target) {
				if err := os.Remove(path); err != nil {
					errs = append(errs, err)
				} else {
					removed = append(removed, rel+" -> "+target)
				}
				return nil
			}
		}
		if st.Uid != w.uid || st.Gid != w.gid {
			errs = append(errs, os.Lchown(path, int(w.uid), int(w.gid)))
		}
		if info.Mode().IsRegular() && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			// Not a link (checked above), and nothing runs inside to swap
			// one in: Chmod cannot be led elsewhere.
			errs = append(errs, os.Chmod(path, info.Mode()&fs.ModePerm))
		}
		return nil
	})
	errs = append(errs, err)
	if len(removed) > 0 {
		errs = append(errs, writeNote(dir, w, removed))
	}
	return removed, errors.Join(errs...)
}

// leadsOut reports whether a symbolic link in folder at (relative to
// root) with target leads out of root, resolved as the kernel would on
// the host: an absolute target does, and so does a relative one whose ".."
// climb above root, through other links too. A name that does not exist
// is taken as a folder (it may be made later); a loop counts as leading
// out.
func leadsOut(root, at, target string) bool {
	var stack []string // where we are, below root
	for _, c := range strings.Split(filepath.ToSlash(at), "/") {
		if c != "" && c != "." {
			stack = append(stack, c)
		}
	}
	queue := strings.Split(target, "/")
	if strings.HasPrefix(target, "/") {
		return true
	}
	for hops := 0; len(queue) > 0; {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return true
			}
			stack = stack[:len(stack)-1]
			continue
		}
		p := filepath.Join(append([]string{root}, append(stack, c)...)...)
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			stack = append(stack, c)
			continue
		}
		if hops++; hops > 40 { // the kernel's limit (ELOOP)
			return true
		}
		t, err := os.Readlink(p)
		if err != nil || strings.HasPrefix(t, "/") {
			return true
		}
		queue = append(strings.Split(t, "/"), queue...)
	}
	return false
}

// writeNote adds the removed links to the note in the work folder, which
// belongs to the folder's owner. The note is opened without following a
// link and without blocking on a FIFO of the same name.
func writeNote(dir string, w workState, removed []string) error {
	path := filepath.Join(dir, noteName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("sandbox: the note of removed links %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("sandbox: the note of removed links %s is not a plain file: remove it", path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: symbolic links the sandbox left in this folder that led out of it, removed when it closed (docs/sandbox.md)\n",
		time.Now().Format(time.RFC3339))
	for _, r := range removed {
		b.WriteString(r + "\n")
	}
	if _, err := f.WriteString(b.String()); err != nil {
		return err
	}
	slog.Warn("sandbox: removed symbolic links that led out of the working folder", "count", len(removed), "list", path)
	return f.Chown(int(w.uid), int(w.gid))
}
