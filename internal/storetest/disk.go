package storetest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TinyDisk mounts a file system of size bytes (a tmpfs) on a new
// temporary directory and returns the directory: a disk that a test can
// fill. It is unmounted when the test ends (close what it holds open
// first, with t.Cleanup registered after TinyDisk). Mounting needs root:
// without it the test is skipped, or fails when CI is set (CI runs as
// root).
func TinyDisk(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		msg := "cannot mount a small tmpfs to fill (" + err.Error() + "): the full-disk tests need root"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill takes every free byte of the file system that holds dir, with a
// file in dir, and returns a function that removes the file.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}
