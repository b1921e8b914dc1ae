//go:build linux

package shell

import (
	"fmt"
	"os"
)

// heldDir is a directory opened at its check: path names that very
// directory (through /proc/self/fd, which the child process, having the
// same descriptors until it executes the shell, resolves to it) whatever
// its name points to by the time the command starts.
type heldDir struct {
	f    *os.File
	real string // where it was when opened
	path string // what to give as the command's directory
}

func holdDir(dir string) (*heldDir, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	link := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	real, err := os.Readlink(link)
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return &heldDir{f: f, real: real, path: link}, nil
}

func (h *heldDir) Close() error { return h.f.Close() }
