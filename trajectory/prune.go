package trajectory

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Keep says which recorded runs a runs directory keeps (record.keep). The
// zero value keeps them all.
type Keep struct {
	// Age, when positive, removes runs last written longer ago.
	Age time.Duration
	// Size, when positive, removes the oldest runs until those left take
	// at most that many bytes.
	Size int64
}

// RunningGrace is how recently a run without a session_end must have been
// written to for Prune to take it as running (in another process, say)
// and keep it whatever its size.
const RunningGrace = 24 * time.Hour

// Prune removes from dir the recorded runs that keep does not keep, the
// oldest first, and returns the directories it removed. Only directories
// holding a trajectory.jsonl are runs: anything else in dir (a server's
// store, say) is left alone, as are the runs named in except and any run
// without a session_end written to within RunningGrace (it may be running
// elsewhere). A run's age is the time its trajectory was last written.
func Prune(dir string, keep Keep, now time.Time, except ...string) ([]string, error) {
	if keep.Age <= 0 && keep.Size <= 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type run struct {
		path     string
		modified time.Time
		size     int64
		running  bool
	}
	var runs []run
	var total int64
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(filepath.Join(path, EventsFile))
		if err != nil {
			continue // not a run
		}
		r := run{path: path, modified: fi.ModTime(), size: dirSize(path)}
		r.running = now.Sub(r.modified) < RunningGrace && !endsSession(filepath.Join(path, EventsFile), fi.Size())
		if slices.Contains(except, e.Name()) || slices.Contains(except, path) {
			r.running = true
		}
		runs = append(runs, r)
		total += r.size
	}
	slices.SortFunc(runs, func(a, b run) int { return a.modified.Compare(b.modified) })
	var removed []string
	var errs []error
	for _, r := range runs {
		old := keep.Age > 0 && now.Sub(r.modified) > keep.Age
		over := keep.Size > 0 && total > keep.Size
		if r.running || !old && !over {
			continue
		}
		if err := os.RemoveAll(r.path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, r.path)
		total -= r.size
	}
	return removed, errors.Join(errs...)
}

// dirSize is the bytes of the files under path.
func dirSize(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// endsSession reports whether the trajectory file's last line is a
// session_end (its type comes before its other fields).
func endsSession(path string, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for tail := int64(4096); ; tail *= 8 {
		n := min(size, tail)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-int64(len(buf))); err != nil && err != io.EOF {
			return false
		}
		buf = bytes.TrimRight(buf, "\n")
		i := bytes.LastIndexByte(buf, '\n')
		if i < 0 && n < size {
			continue // the last line starts further back
		}
		line := buf[i+1:]
		return bytes.Contains(line[:min(len(line), 200)], []byte(`"type":"`+string(TypeSessionEnd)+`"`))
	}
}
