//go:build !linux

package shell

import (
	"os"
	"path/filepath"
)

// heldDir is the checked directory; elsewhere than Linux it is named, not
// held, so a symlink swapped after the check can still move the command.
type heldDir struct {
	real, path string
}

func holdDir(dir string) (*heldDir, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, os.ErrNotExist
	}
	return &heldDir{real: real, path: real}, nil
}

func (h *heldDir) Close() error { return nil }
