package remote_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/saucerhq/saucer/internal/remote"
)

// openFDs counts this process's file descriptors open on path.
func openFDs(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// Close releases the journal file: its descriptor is closed, a second
// Close does nothing, and a new client opens the same journal.
func TestCloseReleasesTheJournal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors through /proc/self/fd")
	}
	path := filepath.Join(t.TempDir(), "box.journal")
	c, err := remote.New(peerEcho(t), remote.Options{URL: "ws://127.0.0.1:1/ws", ClientID: "box", Journal: path})
	if err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t, path); n != 1 {
		t.Fatalf("%d descriptors on the journal after New, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t, path); n != 0 {
		t.Fatalf("%d descriptors on the journal after Close, want 0", n)
	}
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	again, err := remote.New(peerEcho(t), remote.Options{URL: "ws://127.0.0.1:1/ws", ClientID: "box", Journal: path})
	if err != nil {
		t.Fatalf("the journal does not open again: %v", err)
	}
	defer again.Close()
	if n := openFDs(t, path); n != 1 {
		t.Errorf("%d descriptors on the journal after a new client, want 1", n)
	}
	// A client without a journal closes too.
	none, err := remote.New(peerEcho(t), remote.Options{URL: "ws://127.0.0.1:1/ws", ClientID: "box"})
	if err != nil {
		t.Fatal(err)
	}
	if err := none.Close(); err != nil {
		t.Errorf("Close without a journal: %v", err)
	}
}
