package trajectory_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/trajectory"
)

// bigCall is a model_call event whose message moves into an artifact of
// text (its file name is the digest of text).
func bigCall(n int, text string) trajectory.Event {
	return trajectory.Event{Type: trajectory.TypeModelCall, Agent: "a", Step: n,
		Call: &trajectory.Call{N: n, Request: llm.Request{Messages: []llm.Message{llm.User(text)}}}}
}

func artifactName(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:]) + ".txt"
}

// TestWriteDoesNotWaitForTheDisk: while the disk does not take an
// artifact (here a FIFO under the artifact's temporary name, which blocks
// its writer until someone reads it), Write still returns; the lines wait
// and reach the file in order, after the artifact, once it goes through.
func TestWriteDoesNotWaitForTheDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := trajectory.Create(dir, trajectory.Options{ArtifactThreshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a large tool output\n", 100)
	os.MkdirAll(filepath.Join(dir, trajectory.ArtifactsDir), 0o755)
	fifo := filepath.Join(dir, trajectory.ArtifactsDir, artifactName(text)+".tmp")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	wrote := make(chan error, 1)
	go func() {
		if err := w.Write(trajectory.Event{Type: trajectory.TypeSessionStart, Session: &trajectory.Session{Format: trajectory.Format}}); err != nil {
			wrote <- err
			return
		}
		for n := 1; n <= 20; n++ {
			if err := w.Write(bigCall(n, text)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Write waited for the disk")
	}
	// The background writer is stuck on the artifact: no line with a
	// reference to it may be on disk before it.
	if b, _ := os.ReadFile(filepath.Join(dir, trajectory.EventsFile)); strings.Contains(string(b), `"model_call"`) {
		t.Fatalf("a line went to disk before its artifact:\n%.300s", b)
	}
	// Let the artifact through: read the FIFO to its end.
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			defer f.Close()
			buf := make([]byte, 4096)
			for {
				if _, err := f.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The FIFO was renamed into the artifact's place: put a file there.
	full := strings.TrimSuffix(fifo, ".tmp")
	if fi, err := os.Lstat(full); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the artifact was not written through its temporary file: %v %v", fi, err)
	}
	os.Remove(full)
	os.WriteFile(full, []byte(text), 0o644)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 21 || tr.Calls()[19].Request.Messages[0].Content != text {
		t.Fatalf("read back %d events", len(tr.Events))
	}
}

// TestWriteErrorSurfaces: an artifact that cannot be written (its
// directory's name is taken by a file) stops the writer: OnError is told
// once, the next Write and Close return the error, and what was written
// before reads back.
func TestWriteErrorSurfaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var told atomic.Int32
	failed := make(chan error, 4)
	w, err := trajectory.Create(dir, trajectory.Options{ArtifactThreshold: 1024, OnError: func(err error) {
		told.Add(1)
		failed <- err
	}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, trajectory.ArtifactsDir), []byte("not a directory"), 0o644)
	if err := w.Write(trajectory.Event{Type: trajectory.TypeSessionStart, Session: &trajectory.Session{Format: trajectory.Format}}); err != nil {
		t.Fatal(err)
	}
	w.Write(trajectory.Event{Type: trajectory.TypeAgentStart, Agent: "a", Role: "app"})
	w.Write(bigCall(1, strings.Repeat("x", 2000)))
	var err1 error
	select {
	case err1 = <-failed:
	case <-time.After(time.Minute):
		t.Fatal("OnError was not told of the failed write")
	}
	if !strings.Contains(err1.Error(), "keeps its first 2 events") {
		t.Errorf("error: %v", err1)
	}
	if err := w.Write(trajectory.Event{Type: trajectory.TypeAgentEnd, Agent: "a", Role: "app"}); err == nil || err.Error() != err1.Error() {
		t.Errorf("a Write after the failure returned %v", err)
	}
	if err := w.Close(); err == nil || err.Error() != err1.Error() {
		t.Errorf("Close returned %v", err)
	}
	if told.Load() != 1 {
		t.Errorf("OnError told %d times", told.Load())
	}
	tr, err := trajectory.Read(dir)
	if err != nil || len(tr.Events) != 2 {
		t.Fatalf("what was written: %v %+v", err, tr)
	}
}
