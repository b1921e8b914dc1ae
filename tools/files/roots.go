package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// roots confines paths to a set of allowed directories. Every access goes
// through os.Root, so ".." and symlinks cannot leave the directory even if
// the tree changes between a check and the access.
type roots struct {
	dirs []string // absolute, cleaned, as configured
	real []string // the same with symlinks resolved, for matching absolute paths
}

func newRoots(dirs []string) (*roots, error) {
	if len(dirs) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("files: no roots given and the working directory is unknown: %w", err)
		}
		dirs = []string{wd}
	}
	r := &roots{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("files: root %q: %w", d, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("files: root %s: %w", abs, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("files: root %s is not a directory", abs)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("files: root %s: %w", abs, err)
		}
		r.dirs = append(r.dirs, abs)
		r.real = append(r.real, real)
	}
	return r, nil
}

// target is one resolved path: the allowed directory it lies in and its
// name relative to that directory.
type target struct {
	dir string // root directory (as configured)
	rel string // path inside dir, "." for dir itself
}

// abs is the path as shown to the model.
func (t target) abs() string { return filepath.Join(t.dir, t.rel) }

// resolve maps a path given by the model to a root and a relative name:
// relative paths are taken from the first root; absolute ones must lie
// inside some root (the most specific one wins).
func (r *roots) resolve(p string) (target, error) {
	if p == "" {
		p = "."
	}
	if !filepath.IsAbs(p) {
		rel := filepath.Clean(p)
		if !filepath.IsLocal(rel) && rel != "." {
			return target{}, r.outside(p)
		}
		return target{dir: r.dirs[0], rel: rel}, nil
	}
	if t, ok := r.match(filepath.Clean(p), r.dirs); ok {
		return t, nil
	}
	// The model may write the symlink-free spelling of a root (/private/tmp
	// for /tmp, say).
	if t, ok := r.match(filepath.Clean(p), r.real); ok {
		return t, nil
	}
	return target{}, r.outside(p)
}

func (r *roots) match(p string, dirs []string) (target, bool) {
	best := -1
	var bestRel string
	for i, d := range dirs {
		rel, err := filepath.Rel(d, p)
		if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
			continue
		}
		if best < 0 || len(d) > len(dirs[best]) {
			best, bestRel = i, rel
		}
	}
	if best < 0 {
		return target{}, false
	}
	return target{dir: r.dirs[best], rel: bestRel}, true
}

func (r *roots) outside(p string) error {
	return fmt.Errorf("path %s is outside the allowed roots [%s]", p, strings.Join(r.dirs, " "))
}

// do runs op on the root that holds p. If the access is refused because a
// symlink on the way leads out of that root, the symlink-free form of the
// path is tried once: os.Root refuses absolute symlinks even when they
// point back inside, and a link from one allowed root into another is fine.
// Anything that really leaves the roots gives the "outside" error.
func (r *roots) do(p string, op func(root *os.Root, t target) error) (target, error) {
	t, err := r.resolve(p)
	if err != nil {
		return t, err
	}
	err = r.doIn(t, op)
	if !escapes(err) {
		return t, err
	}
	real, rerr := evalSymlinksAllowMissing(t.abs())
	if rerr != nil {
		return t, r.outside(p)
	}
	t2, ok := r.match(real, r.real)
	if !ok {
		return t, r.outside(p)
	}
	if err := r.doIn(t2, op); err != nil {
		if escapes(err) {
			return t, r.outside(p)
		}
		return t, err
	}
	return t, nil
}

func (r *roots) doIn(t target, op func(root *os.Root, t target) error) error {
	root, err := os.OpenRoot(t.dir)
	if err != nil {
		return fmt.Errorf("open root %s: %w", t.dir, err)
	}
	defer root.Close()
	return op(root, t)
}

// escapes reports whether os.Root refused err's access because the path
// leaves the root. The os package does not export that error, so its
// message is matched; TestSymlinkEscapes fails if it ever changes.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// evalSymlinksAllowMissing resolves symlinks in p; a final component that
// does not exist yet (a file about to be written) is kept as it is.
func evalSymlinksAllowMissing(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(p)), nil
}
