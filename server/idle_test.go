package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
)

// An idle device costs its reader on each side of its connection, and on
// the client's side Run's goroutine, parked until the connection ends (it
// does not read: the reader runs the rounds it reads, and Run must be free
// to connect again when the connection drops in the middle of a long
// command), and no other goroutine: pings and heartbeats run from timers, a heartbeat on a
// change of tools from context.AfterFunc, the server's handler has
// returned, and the client's progress sender waits for a first report.
// The devices are real (Saucer's shell and files servers), so that their
// tool lists are watched. (A server holds thousands of idle devices:
// BenchmarkIdleClients.)
func TestIdleConnectionKeepsOnlyItsReaders(t *testing.T) {
	const n = 20
	f := newFixture(t, server.Options{NewSession: rounds(nil)})
	s, url := f.srv, f.wsURL
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
	// Each client has a reader and its Run goroutine; the server has one
	// reader per device. Goroutines that served the handshakes end on
	// their own.
	want := before + 3*n + 4
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := runtime.NumGoroutine()
		if got <= want {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d idle connections keep %d goroutines, want at most %d (three each and a few):\n%s",
				n, got-before, want-before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := len(s.Clients()); got != n {
		t.Errorf("%d devices registered, want %d", got, n)
	}
}

// An idle device's reader waits on a 4 KiB stack on the server. Go keeps
// a stack that has grown until a collection finds less than a quarter
// of it in use, and a waiting reader uses more than a quarter of 8 KiB
// (coder/websocket's read path): a reader that once grew to 8 KiB kept
// 8 KiB for as long as its device stayed connected (80 MiB at 10,000
// devices). The server's readers grew so twice over: registration ran on
// the goroutine that then read, and answering a heartbeat went through
// a handler with a 1.3 KiB stack frame. The devices here are plain AIP
// connections that register and send heartbeats, then leave their
// connections unread: the stacks counted are the server's alone.
// (Pings are off: see docs/rough_edges.md on the pongs coder/websocket
// writes from the reader.)
func TestIdleReadersKeepSmallStacks(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation makes every frame larger")
	}
	const n = 200
	opts := aip.ConnOptions{PingInterval: pingsEnv(-1)}
	url := newFixture(t, server.Options{NewSession: rounds(nil), Conn: opts}).wsURL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := stackBytes()
	for i := range n {
		conn, _, err := aip.Dial(ctx, url, aip.DialOptions{ConnOptions: opts, Header: http.Header{"X-Api-Key": {token}}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		id := fmt.Sprintf("idle-%d", i)
		frames := []*aip.ClientMessage{{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientDevice, ClientID: id,
			Timestamp: aip.Timestamp(time.Now()), Metadata: map[string]any{"platform": "linux"}}}
		for range 3 {
			frames = append(frames, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientType: aip.ClientDevice,
				ClientID: id, Timestamp: aip.Timestamp(time.Now())})
		}
		for _, f := range frames {
			if err := conn.Send(ctx, f); err != nil {
				t.Fatal(err)
			}
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m, err := aip.DecodeServer(b); err != nil || m.Status != aip.StatusOK {
				t.Fatalf("%s: %s answered with %s (%v)", id, f.Type, b, err)
			}
			if f.Type == aip.TypeRegister {
				// Registered as UFO's client, the device is asked for
				// its tools once, and answers as UFO's client does.
				answerToolList(t, conn, id, readServer(t, conn), "LinuxAgent")
			}
		}
	}
	perDevice := (stackBytes() - before) / n
	// A reader of 4 KiB; 8 KiB when it has grown.
	if perDevice > 6<<10 {
		t.Errorf("each idle device keeps %d bytes of goroutine stacks on the server, want at most 6 KiB (a reader of 4 KiB)", perDevice)
	}
	t.Logf("stacks per idle device on the server: %d bytes", perDevice)
}

// pingsEnv is the ping interval SAUCER_TEST_PINGS names, else def: a
// way to see what pings do to the stacks above.
func pingsEnv(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SAUCER_TEST_PINGS")); err == nil {
		return d
	}
	return def
}

// stackBytes is the memory in goroutine stacks after two collections
// (a collection halves the stacks that use less than a quarter of
// themselves; the second sees what the first freed).
func stackBytes() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.StackInuse)
}
