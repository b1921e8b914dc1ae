package server_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server"
)

func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestNoLeaksAfterClientsGo: 100 devices register and then vanish — half
// close cleanly, half are cut off (their sockets closed with no close
// frame) — and the server's open files and goroutines come back to where
// they were.
func TestNoLeaksAfterClientsGo(t *testing.T) {
	f := newFixture(t, server.Options{})
	ctx := context.Background()
	// One client first, so that the lazily started parts of the HTTP
	// server and the client transport are in the baseline.
	warm := f.rawConn(t)
	register(t, warm, "warm")
	warm.CloseNow()
	for {
		var list struct {
			Clients []server.ClientInfo `json:"clients"`
		}
		if f.api(t, "GET", "/api/clients", nil, &list); len(list.Clients) == 0 {
			break // the server has let it go
		}
		time.Sleep(5 * time.Millisecond)
	}
	fds, gos := openFDs(t), runtime.NumGoroutine()

	for i := range 100 {
		c, _, err := aip.Dial(ctx, f.wsURL+"?token="+token, aip.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		register(t, c, fmt.Sprintf("leak-%d", i))
		if i%2 == 0 {
			c.Close(websocket.StatusNormalClosure, "bye")
		} else {
			c.CloseNow() // killed: no close frame
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var list struct {
			Clients []server.ClientInfo `json:"clients"`
		}
		f.api(t, "GET", "/api/clients", nil, &list)
		if openFDs(t) <= fds+2 && runtime.NumGoroutine() <= gos+5 && len(list.Clients) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("after 100 clients came and went: %d open files (were %d), %d goroutines (were %d)", openFDs(t), fds, runtime.NumGoroutine(), gos)
}
