package server

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// stalledWriter is a browser that stops reading: writes block while
// stalled.
type stalledWriter struct {
	header http.Header
	mu     sync.Mutex
	buf    bytes.Buffer
	gate   chan struct{} // closed: writes go through
	wrote  chan struct{} // told of each write
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              {}
func (w *stalledWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	gate := w.gate
	w.mu.Unlock()
	<-gate
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.buf.Write(b)
}

// TestSlowSubscriberResyncs: a subscriber that stops reading never holds
// up the server (publishing goes on at once), and when it reads again it
// is told it lost events (resync) and gets a new snapshot.
func TestSlowSubscriberResyncs(t *testing.T) {
	s, err := New(Options{Token: "k", NewSession: func(SessionSpec) (Runner, error) { return nil, fmt.Errorf("none") }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background(), "test over")
	open := make(chan struct{})
	close(open)
	w := &stalledWriter{header: http.Header{}, gate: open, wrote: make(chan struct{}, 1)}
	req := httptest.NewRequest("GET", "/api/events", nil)
	req.Header.Set("X-API-Key", "k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { s.Handler().ServeHTTP(w, req.WithContext(ctx)); close(done) }()
	// The snapshot is written: stall the reader.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-w.wrote:
		case <-deadline:
			t.Fatal("no snapshot written")
		}
		w.mu.Lock()
		got := strings.Contains(w.buf.String(), "event: snapshot")
		if got {
			w.gate = make(chan struct{})
		}
		w.mu.Unlock()
		if got {
			break
		}
	}
	published := make(chan struct{})
	go func() {
		for i := 0; i < 2*subscriberBuffer; i++ {
			s.events.publish(EventClient, "", map[string]int{"n": i})
		}
		close(published)
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing waited for a subscriber that does not read")
	}
	w.mu.Lock()
	close(w.gate)
	w.mu.Unlock()
	for {
		select {
		case <-w.wrote:
		case <-time.After(10 * time.Second):
			w.mu.Lock()
			t.Fatalf("no resync followed by a snapshot; the stream:\n%s", w.buf.String())
		}
		w.mu.Lock()
		out := w.buf.String()
		w.mu.Unlock()
		if i := strings.Index(out, "event: resync"); i >= 0 && strings.Contains(out[i:], "event: snapshot") {
			if n := strings.Count(out, "event: client"); n >= 2*subscriberBuffer {
				t.Errorf("all %d events were sent to a subscriber that lost some", n)
			}
			break
		}
	}
	cancel()
	<-done
}

func TestPNGSizeReadsTheHeader(t *testing.T) {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 7, 5))); err != nil {
		t.Fatal(err)
	}
	if w, h := pngSize(b.Bytes()); w != 7 || h != 5 {
		t.Fatalf("pngSize = %d×%d, want 7×5", w, h)
	}
	if w, h := pngSize([]byte("\xff\xd8\xff a JPEG")); w != 0 || h != 0 {
		t.Fatalf("pngSize of a JPEG = %d×%d, want 0×0", w, h)
	}
}
