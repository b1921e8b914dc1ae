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
	f.logs.waitFor(t, 1, "device warm disconnected") // the server has let it go
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
	// The server has let every one go ...
	f.logs.waitFor(t, 100, "device leak-", " disconnected")
	var list struct {
		Clients []server.ClientInfo `json:"clients"`
	}
	if f.api(t, "GET", "/api/clients", nil, &list); len(list.Clients) != 0 {
		t.Fatalf("clients still registered: %+v", list.Clients)
	}
	// ... and what their goroutines held goes as they return, which
	// nothing announces: the counts are read until they are back (or
	// the deadline), each time the scheduler has run others.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if openFDs(t) <= fds+2 && runtime.NumGoroutine() <= gos+5 {
			return
		}
		runtime.Gosched()
	}
	t.Errorf("after 100 clients came and went: %d open files (were %d), %d goroutines (were %d)", openFDs(t), fds, runtime.NumGoroutine(), gos)
}
