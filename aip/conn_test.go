package aip_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
)

// serve starts a loopback server whose handler gets each accepted Conn.
func serve(t *testing.T, opts aip.ConnOptions, handle func(*aip.Conn)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := aip.Accept(w, r, opts)
		if err != nil {
			return
		}
		handle(c)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// TestConnConcurrentSends: many goroutines send at once; every frame arrives
// whole (one writer at a time) and decodes.
func TestConnConcurrentSends(t *testing.T) {
	const senders, each = 20, 25
	got := make(chan string, senders*each)
	url := serve(t, aip.ConnOptions{}, func(c *aip.Conn) {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			m, err := aip.DecodeClient(b)
			if err != nil {
				t.Errorf("frame garbled: %v", err)
				return
			}
			got <- m.RequestID
		}
	})
	ctx := context.Background()
	c, _, err := aip.Dial(ctx, url, aip.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				m := &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: "d",
					RequestID: fmt.Sprintf("%d-%d", s, i), Error: strings.Repeat("x", 1000*i)}
				if err := c.Send(ctx, m); err != nil {
					t.Errorf("send: %v", err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for range senders * each {
		select {
		case id := <-got:
			seen[id] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d frames arrived", len(seen))
		}
	}
	if len(seen) != senders*each {
		t.Errorf("%d distinct frames, want %d", len(seen), senders*each)
	}
}

// TestConnReadLimit: a frame over the limit closes the connection with
// 1009; a frame under it passes. The default limit is 100 MiB.
func TestConnReadLimit(t *testing.T) {
	if aip.DefaultReadLimit != 100<<20 {
		t.Errorf("default read limit %d, want 100 MiB", aip.DefaultReadLimit)
	}
	result := make(chan error, 2)
	url := serve(t, aip.ConnOptions{ReadLimit: 4096}, func(c *aip.Conn) {
		for {
			_, _, err := c.Read(context.Background())
			result <- err
			if err != nil {
				return
			}
		}
	})
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte(strings.Repeat("a", 4000))); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil {
		t.Fatalf("a frame under the limit failed: %v", err)
	}
	ws.Write(ctx, websocket.MessageText, []byte(strings.Repeat("a", 5000)))
	if err := <-result; err == nil || !strings.Contains(err.Error(), "read limited") {
		t.Errorf("oversized frame: err %v, want the read limit", err)
	}
	_, _, err = ws.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("peer saw %v, want close 1009", err)
	}
}

// TestConnLiveness: a peer that reads (and so answers pings) stays
// connected; one that never reads is closed as dead after DeadAfter.
func TestConnLiveness(t *testing.T) {
	// A live peer under a loaded, race-instrumented test run may take a
	// while to pong: DeadAfter leaves it room, the silent one still goes.
	opts := aip.ConnOptions{PingInterval: 50 * time.Millisecond, DeadAfter: 2 * time.Second}
	conns := make(chan *aip.Conn, 2)
	url := serve(t, opts, func(c *aip.Conn) {
		conns <- c
		c.Read(context.Background()) // the reader that sees pongs
	})
	ctx := context.Background()

	alive, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer alive.CloseNow()
	aliveCtx := alive.CloseRead(ctx) // reads, so answers pings
	_ = aliveCtx
	serverAlive := <-conns

	silent, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.CloseNow()
	serverSilent := <-conns

	select {
	case <-serverSilent.Context().Done():
		if !strings.Contains(context.Cause(serverSilent.Context()).Error(), "no frame or pong") &&
			!strings.Contains(context.Cause(serverSilent.Context()).Error(), "closed") {
			t.Errorf("silent peer closed for %v", context.Cause(serverSilent.Context()))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a peer that never answers pings was not closed")
	}
	select {
	case <-serverAlive.Context().Done():
		t.Fatalf("a live peer was closed: %v", context.Cause(serverAlive.Context()))
	default:
	}
	if time.Since(serverAlive.LastSeen()) > time.Second { // pings go every 50ms
		t.Errorf("pongs do not refresh LastSeen (%v ago)", time.Since(serverAlive.LastSeen()))
	}
}

// TestConnSendAfterClose: sending on a closed connection fails at once.
func TestConnSendAfterClose(t *testing.T) {
	url := serve(t, aip.ConnOptions{}, func(c *aip.Conn) { c.Read(context.Background()) })
	c, _, err := aip.Dial(context.Background(), url, aip.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.CloseNow()
	err = c.Send(context.Background(), &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK})
	if err == nil {
		t.Fatal("send on a closed connection succeeded")
	}
}

// TestReadFuncFramesOutliveTheBuffer: ReadFunc hands out a pooled buffer
// that the next read reuses, so a frame decoded inside it must keep
// copies only. Each side decodes a frame, reads a second one of the same
// size into the same buffer, and finds the first message intact: every
// field, the tool's raw result and the command's parameters included.
func TestReadFuncFramesOutliveTheBuffer(t *testing.T) {
	results := func(s string) *aip.ClientMessage {
		return &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientType: aip.ClientDevice,
			ClientID: "dev-" + s, SessionID: "session-" + s, PrevResponseID: "resp-" + s, RequestID: "req-" + s,
			Timestamp: "2026-01-01T00:00:00.000000+00:00", Metadata: map[string]any{"k": "meta-" + s},
			ActionResults: []command.Result{{Status: command.Success, Result: json.RawMessage(`{"out":"result-` + s + `"}`),
				Error: "error-" + s, Namespace: "ns-" + s, CallID: "call-" + s}}}
	}
	commands := func(s string) *aip.ServerMessage {
		return &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, SessionID: "session-" + s, TaskName: "task-" + s,
			ResponseID: "resp-" + s, Timestamp: "2026-01-01T00:00:00.000000+00:00", Result: json.RawMessage(`"result-` + s + `"`),
			Actions: []command.Command{{ToolName: "tool-" + s, ToolType: command.Action, CallID: "call-" + s,
				Parameters: map[string]any{"text": "param-" + s, "list": []any{"item-" + s}}}}}
	}
	encode := func(f aip.Frame) string {
		b, err := f.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// readTwo decodes two frames with ReadFunc and returns the first
	// re-encoded after the second was read.
	readTwo := func(c *aip.Conn, decode func([]byte) (aip.Frame, error)) (string, error) {
		var first aip.Frame
		for i := range 2 {
			var derr error
			err := c.ReadFunc(context.Background(), func(_ bool, b []byte) {
				f, err := decode(b)
				if i == 0 {
					first, derr = f, err
				}
			})
			if err != nil || derr != nil {
				return "", fmt.Errorf("frame %d: read: %v, decode: %v", i+1, err, derr)
			}
		}
		return encode(first), nil
	}
	serverGot := make(chan string, 1)
	url := serve(t, aip.ConnOptions{}, func(c *aip.Conn) {
		got, err := readTwo(c, func(b []byte) (aip.Frame, error) { return aip.DecodeClient(b) })
		if err != nil {
			t.Error(err)
		}
		serverGot <- got
		for _, s := range []string{"a", "b"} {
			c.Send(context.Background(), commands(s))
		}
		c.Read(context.Background()) // until the client closes
	})
	c, _, err := aip.Dial(context.Background(), url, aip.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, s := range []string{"a", "b"} {
		if err := c.Send(context.Background(), results(s)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-serverGot:
		if want := encode(results("a")); got != want {
			t.Errorf("the first results frame changed when the second was read:\n got %s\nwant %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server read no frames")
	}
	got, err := readTwo(c, func(b []byte) (aip.Frame, error) { return aip.DecodeServer(b) })
	if err != nil {
		t.Fatal(err)
	}
	if want := encode(commands("a")); got != want {
		t.Errorf("the first command frame changed when the second was read:\n got %s\nwant %s", got, want)
	}
}
