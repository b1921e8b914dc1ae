package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a buffer two goroutines may use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestServeAndClient runs the README's remote commands in-process: `saucer
// serve` with the scripted demo model and `saucer client --request` on a
// fresh folder; the task runs on the server's agents and the client's real
// tools, and serve stops cleanly on its context.
func TestServeAndClient(t *testing.T) {
	addr := freeAddr(t)

	runs := t.TempDir()
	t.Setenv("SAUCER_RUNS", runs)
	ctx, cancel := context.WithCancel(context.Background())
	serveOut := &syncBuffer{}
	served := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetOut(serveOut)
		root.SetErr(serveOut)
		root.SetArgs([]string{"serve", "--model", "scripted:../../examples/demo.yaml", "--addr", addr, "--token", "k"})
		served <- root.ExecuteContext(ctx)
	}()

	dir := t.TempDir()
	out, code := saucer(t, "client", "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", dir, "--journal", filepath.Join(dir, ".journal"),
		"--request", "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if code != 0 || !strings.Contains(out, "completed") || !strings.Contains(out, "Hello from Saucer") {
		t.Fatalf("client exit %d\n%s\nserver:\n%s", code, out, serveOut.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes", "hello.txt")); err != nil || string(b) != "Hello from Saucer\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}

	if out, code := saucer(t, "client", "--server", "ws://"+addr+"/ws", "--token", "wrong", "--id", "x", "-C", dir, "--journal", "off"); code == 0 ||
		!strings.Contains(out, "refused") {
		t.Errorf("a wrong token: exit %d\n%s", code, out)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(serveOut.String(), "on ws://"+addr+"/ws") {
		t.Errorf("serve output:\n%s", serveOut.String())
	}
	// The remote task was recorded, and replays offline like a local run.
	rec := onlyRun(t, runs)
	if out, code := saucer(t, "replay", rec); code != 0 || !strings.Contains(out, "identical to the recording: 7 model calls") {
		t.Errorf("replay of the remote task: exit %d\n%s", code, out)
	}
}

// TestServeNeedsToken: no key, no server.
func TestServeNeedsToken(t *testing.T) {
	t.Setenv("SAUCER_TOKEN", "")
	out, code := saucer(t, "serve", "--model", "scripted:../../examples/demo.yaml", "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(out, "--token") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, err := tlsConfig("/nonexistent.pem"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing CA file: %v", err)
	}
}
