package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// What a sandbox shows of the host. Over an image root (Options.Root, a
// root filesystem built from Debian packages) it shows nothing of the
// host but the working folder and Options.Show. Over the host's own root
// it shows the system folders programs need (SystemFolders) and
// Options.Show; every other folder of the host is empty inside and every
// other file is absent, so other projects' checkouts, homes, service
// data and logs stay out of sight. In both, Options.Hide is hidden even
// within a shown folder (credentials), and the host's password hashes are
// not in /etc/shadow and /etc/gshadow (their accounts are).
//
// The view is a small overlay layer above the root: opaque folders for
// what is hidden, whiteouts for hidden files, cleaned copies of the
// account files. Saucer builds it in the sandbox's host folder, and the
// sandbox copies it onto its writable layer before mounting (a layer may
// not lie inside another).

// SystemFolders are the host folders a sandbox over the host's root shows.
var SystemFolders = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr", "/etc", "/var/lib/dpkg", "/var/lib/apt"}

// DefaultHide is hidden inside whatever the root: homes, temporary and
// runtime folders (empty inside), and credentials in /etc.
var DefaultHide = []string{"/home", "/root", "/tmp", "/var/tmp", "/run", "/mnt", "/media",
	"/etc/ssh", "/etc/ssl/private", "/etc/shadow-", "/etc/gshadow-", "/etc/security/opasswd"}

// DefaultImageRoot is where an image root is looked for when Options.Root
// is empty: if it holds a root filesystem, sandboxes use it rather than
// the host's root. docs/sandbox.md gives the command that builds it.
var DefaultImageRoot = "/var/lib/saucer/rootfs"

// accountFiles keep their accounts inside, without password hashes.
var accountFiles = []string{"/etc/shadow", "/etc/gshadow"}

// shown reports whether p is one of folders or inside one.
func shown(p string, folders []string) bool {
	for _, f := range folders {
		if p == f || strings.HasPrefix(p, f+"/") || f == "/" {
			return true
		}
	}
	return false
}

// buildView writes the view layer of o into dir.
func buildView(dir string, o Options) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if o.Root == "/" {
		folders := append(slices.Clone(SystemFolders), o.Show...)
		// Every folder above a shown one shows only the way down.
		above := map[string]bool{}
		for _, f := range folders {
			for p := filepath.Dir(f); ; p = filepath.Dir(p) {
				above[p] = true
				if p == "/" {
					break
				}
			}
		}
		for _, a := range slices.Sorted(func(yield func(string) bool) {
			for p := range above {
				if !yield(p) {
					return
				}
			}
		}) {
			if shown(a, folders) {
				continue
			}
			entries, err := os.ReadDir(a)
			if err != nil {
				continue // not on this host
			}
			for _, e := range entries {
				p := filepath.Join(a, e.Name())
				switch {
				case shown(p, folders):
				case above[p]:
					if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
						return err
					}
				case e.Type()&fs.ModeSymlink != 0:
					// A link shows nothing by itself; its target is in or out.
				case e.IsDir():
					if err := hideFolder(dir, p); err != nil {
						return err
					}
				default:
					if err := hideFile(dir, p); err != nil {
						return err
					}
				}
			}
		}
		for _, f := range accountFiles {
			if shown(f, folders) && !slices.Contains(o.Hide, f) {
				if err := cleanAccounts(dir, f); err != nil {
					return err
				}
			}
		}
	}
	for _, h := range o.Hide {
		st, err := os.Lstat(filepath.Join(o.Root, h))
		switch {
		case err != nil:
			continue
		case st.IsDir():
			err = hideFolder(dir, h)
		default:
			err = hideFile(dir, h)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// hideFolder makes p an empty folder inside: an opaque one in the layer.
func hideFolder(dir, p string) error {
	at := filepath.Join(dir, p)
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	return unix.Setxattr(at, "trusted.overlay.opaque", []byte("y"), 0)
}

// hideFile makes p absent inside: a whiteout (a 0/0 character device).
func hideFile(dir, p string) error {
	at := filepath.Join(dir, p)
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return err
	}
	if err := unix.Mknod(at, syscall.S_IFCHR, 0); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// cleanAccounts copies an account file of the host with every password
// hash replaced by "*" (no password); short values ("", "*", "!", "!*",
// "x") say no hash and are kept.
func cleanAccounts(dir, p string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil // none on this host
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		f := strings.Split(line, ":")
		if len(f) > 1 && len(f[1]) > 2 {
			f[1] = "*"
			lines[i] = strings.Join(f, ":")
		}
	}
	at := filepath.Join(dir, p)
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(at, []byte(strings.Join(lines, "\n")), st.Mode().Perm()); err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return os.Chown(at, int(sys.Uid), int(sys.Gid))
	}
	return nil
}

// autoRoot is DefaultImageRoot where it holds a root filesystem, else the
// host's root.
func autoRoot() string {
	if rootMissing(DefaultImageRoot) == "" {
		return DefaultImageRoot
	}
	return "/"
}

// rootMissing names what a root filesystem for the sandbox lacks, if
// anything.
func rootMissing(root string) string {
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/usr/bin/setpriv"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			return p
		}
	}
	return ""
}
