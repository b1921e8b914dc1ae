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
