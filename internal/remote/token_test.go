package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/internal/remote"
)

// keyServer is an AIP server on loopback that checks the key one way
// only: UFO's reads ?token= (its /ws endpoint knows no header), another
// reads X-API-Key only. It acknowledges registrations and tells of them.
type keyServer struct {
	url        string
	refused    atomic.Int32 // handshakes refused for their key
	registered chan registration
}

// registration is a registered connection, the server's side of it.
type registration struct {
	conn *aip.Conn
	// keyInURL says its URL had the key; refused is how many handshakes
	// had been refused before it.
	keyInURL bool
	refused  int32
}

func newKeyServer(t *testing.T, key string, inQuery bool) *keyServer {
	ks := &keyServer{registered: make(chan registration, 10)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-API-Key")
		if inQuery {
			got = r.URL.Query().Get("token")
		}
		if got != key {
			ks.refused.Add(1)
			http.Error(w, "Invalid or missing token", http.StatusForbidden)
			return
		}
		conn := acceptRegistration(w, r)
		if conn == nil {
			return
		}
		defer conn.CloseNow()
		ks.registered <- registration{conn, r.URL.Query().Get("token") != "", ks.refused.Load()}
		for {
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	}))
	t.Cleanup(hs.Close)
	ks.url = "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	return ks
}

// logs collects what a client logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(f string, a ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
	l.mu.Unlock()
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestTokenBothWays: --token logs in to a server that reads the key from
// ?token= only (UFO's: the header alone gets 403, so the client asks
// again at once with the key in the URL, and keeps doing so there), and to
// one that reads the X-API-Key header only (the key never goes in its
// URL). No log line carries the key.
func TestTokenBothWays(t *testing.T) {
	const key = "secret-api-key-0123456789"
	for _, inQuery := range []bool{true, false} {
		name := map[bool]string{true: "query only (UFO)", false: "header only"}[inQuery]
		t.Run(name, func(t *testing.T) {
			ks := newKeyServer(t, key, inQuery)
			var l logs
			c, err := remote.New(peerEcho(t), remote.Options{URL: ks.url, Token: key, ClientID: "box",
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Logf: l.logf})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			defer func() {
				cancel()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Error("Run did not return")
				}
			}()
			for n := range 2 { // the second time, after the server dropped it
				var reg registration
				select {
				case reg = <-ks.registered:
				case err := <-done:
					done <- err // for the deferred wait
					t.Fatalf("Run ended: %v\n%s", err, &l)
				case <-time.After(10 * time.Second):
					t.Fatalf("connection %d: not registered\n%s", n+1, &l)
				}
				reg.conn.CloseNow()
				// UFO's: refused once, then the key goes in the URL from
				// the start; the other never sees it there.
				if wantRefused := map[bool]int32{true: 1}[inQuery]; reg.keyInURL != inQuery || reg.refused != wantRefused {
					t.Errorf("connection %d: key in the URL %v, %d handshake(s) refused before; want %v and %d\n%s",
						n+1, reg.keyInURL, reg.refused, inQuery, wantRefused, &l)
				}
			}
			if strings.Contains(l.String(), key) {
				t.Errorf("the key is in the logs:\n%s", &l)
			}
		})
	}
}

// TestTokenNotLogged: the API key never appears in what the client logs
// or returns, neither from --token nor from a URL that carries it
// (?token=KEY, as UFO's clients are given it): not in failed dials, whose
// errors name the URL, nor in a refusal.
func TestTokenNotLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every dial fails
	const key = "secret-api-key-0123456789"
	wrong := newKeyServer(t, "another-key-9876543210", true)
	for _, tc := range []struct {
		name, url, token string
		refused          bool
	}{
		{"token option", "ws://" + addr + "/ws", key, false},
		{"token in the URL", "ws://" + addr + "/ws?token=" + key, "", false},
		{"escaped token in the URL", "ws://" + addr + "/ws?a=1&token=" + url.QueryEscape(key+"/+") + "&b=2", "", false},
		{"refused", wrong.url, key, true},
		{"refused, token in the URL", wrong.url + "?token=" + key, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l logs
			c, err := remote.New(peerEcho(t), remote.Options{URL: tc.url, Token: tc.token, ClientID: "box",
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Logf: l.logf})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			runErr := c.Run(ctx)
			if tc.refused != errors.Is(runErr, remote.ErrRefused) {
				t.Errorf("Run: %v", runErr)
			}
			all := l.String()
			if runErr != nil {
				all += "\n" + runErr.Error()
			}
			if !tc.refused && (len(l.lines) == 0 || !strings.Contains(all, addr)) {
				t.Fatalf("no failed dial was logged:\n%s", all)
			}
			for _, form := range []string{key, url.QueryEscape(key + "/+"), "secret-api-key"} {
				if strings.Contains(all, form) {
					t.Errorf("the key is in the logs or the error (as %q):\n%s", form, all)
				}
			}
		})
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
