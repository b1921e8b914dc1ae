package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/server/serve"
)

// scripted is a config whose model needs no key.
func scripted(t *testing.T) *config.Config {
	cfg := config.Default()
	cfg.Model = "scripted:../../examples/demo.yaml"
	cfg.Record.Dir = t.TempDir()
	return cfg
}

// logs collects what a server says.
type logs struct {
	mu    sync.Mutex
	lines []string
	said  chan string
}

func newLogs() *logs { return &logs{said: make(chan string, 64)} }

func (l *logs) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	select {
	case l.said <- line:
	default:
	}
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestStartRefuses: what Start cannot serve with is refused before it
// listens, saying what to give.
func TestStartRefuses(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		opts serve.Options
		want string
	}{
		{serve.Options{Config: scripted(t)}, "set Options.Token"},
		{serve.Options{Config: scripted(t), Token: "k", TLSCert: "cert.pem"}, "give both, or neither"},
		{serve.Options{Config: scripted(t), Token: "k", Store: "mysql://u:hunter2@h/db"}, "use sqlite:PATH, postgres://"},
	} {
		s, err := serve.Start(ctx, c.opts)
		if err == nil {
			s.Stop()
			t.Errorf("%+v: started", c.opts)
		} else if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%+v: %v, want it to say %q", c.opts, err, c.want)
		}
	}
}

// TestSafeDefaults: the HTTP server has the limits saucer serve has
// always had, and the API, the console and the AIP endpoint are on it.
func TestSafeDefaults(t *testing.T) {
	l := newLogs()
	s, err := serve.Start(context.Background(), serve.Options{Config: scripted(t), Token: "k", Addr: "127.0.0.1:0", Store: "memory", Logf: l.logf})
	if err != nil {
		t.Fatal(err)
	}
	hs := serve.HTTPServer(s)
	if hs.ReadHeaderTimeout != 10*time.Second || hs.IdleTimeout != 60*time.Second || hs.MaxHeaderBytes != 1<<20 {
		t.Errorf("HTTP limits: header %s, idle %s, header bytes %d", hs.ReadHeaderTimeout, hs.IdleTimeout, hs.MaxHeaderBytes)
	}
	if !strings.HasPrefix(s.URL(), "ws://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/ws") || s.ConsoleURL() != "http://"+s.Addr().String()+"/" {
		t.Errorf("URLs: %s %s", s.URL(), s.ConsoleURL())
	}
	for path, want := range map[string]int{"api/health": 200, "api/clients": 401, "api/constellations": 401, "": 200} {
		resp, err := http.Get(s.ConsoleURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.String(), "running tasks end as failed (the memory store keeps nothing)") {
		t.Errorf("the stop on a memory store:\n%s", l)
	}
	if _, err := http.Get(s.ConsoleURL() + "api/health"); err == nil {
		t.Error("still serving after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// TestOneServerPerStore: a server holds its SQLite store; a second is
// refused while it runs, a standby waits for it and takes over when it
// stops, which leaves its tasks to resume.
func TestOneServerPerStore(t *testing.T) {
	cfg := scripted(t)
	spec := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := newLogs()
	a, err := serve.Start(ctx, serve.Options{Config: cfg, Token: "k", Addr: "127.0.0.1:0", Store: spec, Logf: first.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	if _, err := serve.Start(ctx, serve.Options{Config: cfg, Token: "k", Addr: "127.0.0.1:0", Store: spec, Logf: newLogs().logf}); err == nil ||
		!strings.Contains(err.Error(), "another saucer serve is using this store") {
		t.Fatalf("a second server on the store: %v", err)
	}
	standby := newLogs()
	type started struct {
		s   *serve.Server
		err error
	}
	took := make(chan started, 1)
	go func() {
		s, err := serve.Start(ctx, serve.Options{Config: cfg, Token: "k", Addr: "127.0.0.1:0", Store: spec, Standby: true, Logf: standby.logf})
		took <- started{s, err}
	}()
	for waiting := false; !waiting; {
		select {
		case line := <-standby.said:
			waiting = strings.Contains(line, "standby: waiting")
		case st := <-took:
			t.Fatalf("the standby started before it waited: %v", st.err)
		case <-ctx.Done():
			t.Fatal("the standby never said it waits")
		}
	}
	select {
	case st := <-took:
		t.Fatalf("the standby started while the first server held the store: %v", st.err)
	default:
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.String(), "running tasks resume when it starts again on the same store") {
		t.Errorf("the stop on an SQLite store:\n%s", first)
	}
	select {
	case st := <-took:
		if st.err != nil {
			t.Fatalf("the standby: %v", st.err)
		}
		if err := st.s.Stop(); err != nil {
			t.Error(err)
		}
	case <-ctx.Done():
		t.Fatal("the standby did not take over")
	}
}

// TestKeyLabel: remote.key_label names who holds the key: the login reply
// says the name the server records the session's actions under.
func TestKeyLabel(t *testing.T) {
	cfg := scripted(t)
	cfg.Remote.KeyLabel = "dana"
	s, err := serve.Start(context.Background(), serve.Options{Config: cfg, Token: "k", Addr: "127.0.0.1:0", Store: "memory", Logf: newLogs().logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	resp, err := http.Post(s.ConsoleURL()+"api/login", "application/json", strings.NewReader(`{"key":"k"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		As string `json:"as"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || got.As != "dana" {
		t.Fatalf("login: %d %+v %v", resp.StatusCode, got, err)
	}
}
