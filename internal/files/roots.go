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
	jail Jail     // where dirs are, or nil for the host
}

func newRoots(dirs []string, jail Jail) (*roots, error) {
	if jail != nil {
		return newJailRoots(dirs, jail)
	}
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
	var real string
	var rerr error
	if r.jail != nil {
		real, rerr = r.resolveInside(t.abs())
	} else {
		real, rerr = evalSymlinksAllowMissing(t.abs())
	}
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
	dir := t.dir
	if r.jail != nil {
		dir = r.jail.Path(t.dir)
	}
	root, err := os.OpenRoot(dir)
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

// newJailRoots are roots inside a jail: the paths are the jail's, and
// symlinks are resolved inside it (resolveInside), never by the host.
func newJailRoots(dirs []string, jail Jail) (*roots, error) {
	if len(dirs) == 0 {
		dirs = []string{"/root"}
	}
	r := &roots{jail: jail}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("files: root %q must be an absolute path inside the sandbox", d)
		}
		d = filepath.Clean(d)
		real, err := r.resolveInside(d)
		if err != nil {
			return nil, fmt.Errorf("files: root %s: %w", d, err)
		}
		st, err := os.Stat(jail.Path(real)) // real has no links left, but "/" is the jail's own
		if err != nil {
			return nil, fmt.Errorf("files: root %s: %w", d, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("files: root %s is not a directory", d)
		}
		// Opened through the host's view: a link in the root's own path
		// is resolved here, inside, once.
		r.dirs = append(r.dirs, real)
		r.real = append(r.real, real)
	}
	return r, nil
}

// resolveInside resolves the symlinks of a path inside the jail the way the
// jail's own processes would: absolute link targets start at the jail's
// root. Each step looks at one name whose parent is already resolved, so
// no link is ever followed by the host. A missing last name is kept.
func (r *roots) resolveInside(p string) (string, error) {
	rest := strings.Split(strings.TrimPrefix(filepath.Clean("/"+p), "/"), "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		st, err := os.Lstat(r.jail.Path(next))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && len(rest) == 0 {
				return next, nil
			}
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("too many symlinks in %s", p)
		}
		target, err := os.Readlink(r.jail.Path(next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, nil
}
