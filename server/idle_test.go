package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client/remote"
	"github.com/saucerhq/saucer/server"
)

// An idle device costs its reader on each side of its connection and no
// other goroutine: pings and heartbeats run from timers, a heartbeat on a
// change of tools from context.AfterFunc, the server's handler has
// returned, and the client's progress sender waits for a first report.
// The devices are real (Saucer's shell and files servers), so that their
// tool lists are watched. (A server holds thousands of idle devices:
// BenchmarkIdleClients.)
func TestIdleConnectionKeepsOnlyItsReaders(t *testing.T) {
	const n = 20
	s, err := server.New(server.Options{Token: token, NewSession: rounds(nil)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer s.Shutdown(context.Background(), "test over")
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	dev := realDevice(t, t.TempDir())
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{}, n)
	defer func() {
		cancel()
		for range n {
			<-ran
		}
	}()
	for i := range n {
		c, err := remote.New(dev, remote.Options{URL: url, Token: token, ClientID: fmt.Sprintf("idle-%d", i),
			HeartbeatInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		go func() { c.Run(ctx); ran <- struct{}{} }()
		select {
		case <-c.Connected():
		case <-time.After(30 * time.Second):
			t.Fatalf("client %d did not connect", i)
		}
	}
	// Each client's Run goroutine reads; the server has one reader per
	// device. Goroutines that served the handshakes end on their own.
	want := before + 2*n + 4
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := runtime.NumGoroutine()
		if got <= want {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d idle connections keep %d goroutines, want at most %d (two each and a few):\n%s",
				n, got-before, want-before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := len(s.Clients()); got != n {
		t.Errorf("%d devices registered, want %d", got, n)
	}
}
