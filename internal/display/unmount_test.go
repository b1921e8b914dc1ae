package display

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file system left mounted in a display's folder (xdg-document-portal's
// FUSE mount at xdg/doc, killed with the display) is detached before the
// folder is removed; a mount point with a space in its name too, which
// mountinfo writes as \040.
func TestUnmountUnderFreesTheFolder(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := t.TempDir()
	var points []string
	for _, p := range []string{"xdg/doc", "xdg/a b", "xdg/doc/inner"} {
		mp := filepath.Join(dir, p)
		if err := os.MkdirAll(mp, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", mp, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("this host does not let a test mount tmpfs: %v", err)
		}
		points = append(points, mp)
	}
	t.Cleanup(func() {
		for _, mp := range points {
			_ = syscall.Unmount(mp, syscall.MNT_DETACH)
		}
	})
	if err := os.RemoveAll(dir); err == nil {
		t.Fatal("the folder was removed with file systems mounted in it: the test proves nothing")
	}
	unmountUnder(dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("after unmountUnder: %v", err)
	}
}

func TestUnescapeMountPoint(t *testing.T) {
	for in, want := range map[string]string{`/tmp/a\040b`: "/tmp/a b", `/x\134y`: `/x\y`, "/plain": "/plain", `/end\04`: `/end\04`} {
		if got := unescapeMountPoint(in); got != want {
			t.Errorf("unescapeMountPoint(%q) = %q, want %q", in, got, want)
		}
	}
}
