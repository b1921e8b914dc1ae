package remote_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client/remote"
)

// The API key never appears in what the client logs: it goes in a header,
// not in the URL that failed dials name.
func TestTokenNotLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every dial fails
	const key = "secret-api-key-0123456789"
	var mu sync.Mutex
	var logs []string
	c, err := remote.New(peerEcho(t), remote.Options{URL: "ws://" + addr + "/ws", Token: key, ClientID: "box",
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		Logf: func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(logs, "\n")
	if len(logs) == 0 || !strings.Contains(all, addr) {
		t.Fatalf("no failed dial was logged:\n%s", all)
	}
	if strings.Contains(all, key) {
		t.Errorf("the key is in the logs:\n%s", all)
	}
}

// A device that cannot reach its server waits by Saucer's one retry
// policy: doubling from MinBackoff, capped at MaxBackoff, jittered, each
// wait told to the user.
func TestReconnectBackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	var waits []time.Duration
	c, err := remote.New(peerEcho(t), remote.Options{URL: "ws://" + addr + "/ws", ClientID: "box",
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		Logf: func(f string, a ...any) {
			line := fmt.Sprintf(f, a...)
			_, after, ok := strings.Cut(line, "; retrying in ")
			if !ok {
				return
			}
			d, err := time.ParseDuration(after)
			if err != nil {
				t.Errorf("the wait does not read: %q", line)
			}
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	c.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(waits) < 5 {
		t.Fatalf("only %d waits told: %v", len(waits), waits)
	}
	distinct := map[time.Duration]bool{}
	for n, d := range waits {
		full := min(20*time.Millisecond<<n, 80*time.Millisecond)
		if d < full/2-time.Millisecond || d > full+time.Millisecond { // the told wait is rounded to the millisecond
			t.Errorf("wait %d: %s, want within [%s, %s]", n, d, full/2, full)
		}
		if n >= 2 {
			distinct[d] = true
		}
	}
	if len(distinct) < 2 {
		t.Errorf("waits %v: no jitter", waits)
	}
}
