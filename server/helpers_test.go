package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/files"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/strategy"
)

const token = "test-token"

// fixture is a server on a loopback port.
type fixture struct {
	srv   *server.Server
	http  *httptest.Server
	wsURL string
	logs  *logWatch
}

func newFixture(t testing.TB, opts server.Options) *fixture {
	t.Helper()
	if opts.Token == "" {
		opts.Token = token
	}
	if opts.NewSession == nil {
		opts.NewSession = func(server.SessionSpec) (server.Runner, error) {
			return nil, fmt.Errorf("this test runs no agents")
		}
	}
	logs := testLogs(t)
	opts.Logf = logs.logf
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx, "test over"); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		hs.Close()
	})
	return &fixture{srv: s, http: hs, wsURL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", logs: logs}
}

// logWatch passes the servers' log to the test's and lets the test wait
// for a line: what a server logs is how it tells of its own events (a
// device that left, a question asked, a task that ended). The servers of
// one test share one.
type logWatch struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
	wake  chan struct{} // closed and replaced at each line
}

var logWatches sync.Map // testing.TB → *logWatch

// testLogs is the log of t's servers.
func testLogs(t testing.TB) *logWatch {
	w, loaded := logWatches.LoadOrStore(t, &logWatch{t: t, wake: make(chan struct{})})
	if !loaded {
		t.Cleanup(func() { logWatches.Delete(t) })
	}
	return w.(*logWatch)
}

// next waits for the next line the servers log after mark (a count of
// lines, from mark), and returns the new count; false when ctx ends.
func (w *logWatch) next(ctx context.Context, mark int) (int, bool) {
	for {
		w.mu.Lock()
		n, wake := len(w.lines), w.wake
		w.mu.Unlock()
		if n > mark {
			return n, true
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return n, false
		}
	}
}

// mark is the number of lines logged so far.
func (w *logWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lines)
}

func (w *logWatch) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	w.t.Log(line)
	w.mu.Lock()
	w.lines = append(w.lines, line)
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
}

// waitFor waits until n lines of the log (since the server started)
// contain all of parts, and returns the last of them.
func (w *logWatch) waitFor(t testing.TB, n int, parts ...string) string {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		found, last, wake := 0, "", w.wake
		for _, l := range w.lines {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				found, last = found+1, l
			}
		}
		w.mu.Unlock()
		if found >= n {
			return last
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("the server never logged %q (%d time(s))", parts, n)
		}
	}
}

// api calls the HTTP API with the token and decodes the JSON answer.
func (f *fixture) api(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, f.http.URL+path, r)
	req.Header.Set("X-API-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

// waitTask waits for a task to end, as a client of the API does: GET
// /api/tasks/{id}?wait=, which answers when it has ended.
func (f *fixture) waitTask(t *testing.T, id string) server.TaskInfo {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var info server.TaskInfo
		if code := f.api(t, "GET", "/api/tasks/"+id+"?wait=5s", nil, &info); code != 200 {
			t.Fatalf("GET task: %d", code)
		}
		if info.Status != server.StatusRunning {
			return info
		}
	}
	t.Fatalf("task %s still running", id)
	return server.TaskInfo{}
}

// realDevice is Saucer's real shell and files MCP servers working in dir.
func realDevice(t testing.TB, dir string) *client.Client {
	t.Helper()
	fs, err := files.New(files.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := client.New(context.Background(), []client.Server{
		{Namespace: "shell", Description: "Run shell commands on the device.", MCP: shell.New(shell.Options{Dir: dir})},
		{Namespace: "files", Description: "Read and write files.", MCP: fs},
	}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// connect runs a remote device client until the test ends and waits for it
// to register. Its reconnection wait (aip.MetaReconnectWithin), which a
// server adds to its away timeout, is 2.05s: a 50ms backoff cap and a 2s
// registration timeout.
func connect(t testing.TB, url, id string, dev remote.Device, tweak func(*remote.Options)) *remote.Client {
	t.Helper()
	opts := remote.Options{URL: url, Token: token, ClientID: id, MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond, RegisterTimeout: 2 * time.Second, Logf: func(f string, a ...any) { t.Logf(id+": "+f, a...) }}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := remote.New(dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Run: %v", id, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Run did not return", id)
		}
	})
	select {
	case <-c.Connected():
	case err := <-done:
		t.Fatalf("%s: Run ended: %v", id, err)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not register", id)
	}
	return c
}

// scriptedSessions builds agents driven by a scripted model, one fresh
// script per task.
func scriptedSessions(t *testing.T, script string) func(server.SessionSpec) (server.Runner, error) {
	t.Helper()
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scripted.Parse([]byte(script), "yaml"); err != nil {
		t.Fatalf("script: %v", err)
	}
	return func(spec server.SessionSpec) (server.Runner, error) {
		s, _ := scripted.Parse([]byte(script), "yaml")
		return agent.New(agent.Options{Model: scripted.New(*s), Dispatcher: spec.Dispatcher, Prompts: set,
			AppDescriptions: spec.AppDescriptions, Observer: spec.Observer,
			Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
	}
}

// scriptedConfig is the default config with a scripted model playing
// script, and no wait between retries.
func scriptedConfig(t testing.TB, script string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model = "scripted:" + path
	cfg.Agent.RetryBackoff = config.Duration(time.Millisecond)
	return cfg
}

// openStore opens the store a spec names, closed when the test is over
// (after the servers on it, which a test starts later).
func openStore(t testing.TB, spec string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// sqliteStore is an SQLite store in a temporary directory, held as
// saucer serve holds it.
func sqliteStore(t testing.TB) store.Store {
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "state.db"))
	if err := st.(*store.SQL).Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// member is a server's store on the PostgreSQL database at url, joined
// to the servers sharing it as id; it leaves them when the test is over.
func member(t testing.TB, url, id string) (store.Store, *store.Member) {
	t.Helper()
	st := openStore(t, url)
	m, err := st.(*store.SQL).Join(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() }) // before the store closes
	return st, m
}

// rawConn dials /ws without the device client, for frame-level tests.
func (f *fixture) rawConn(t *testing.T) *aip.Conn {
	t.Helper()
	c, _, err := aip.Dial(context.Background(), f.wsURL+"?token="+token, aip.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// readServer reads the server's next frame on c. On a connection that
// register registered, it answers the server's list_tools question as
// UFO's client would (with rawTools) and reads on.
func readServer(t *testing.T, c *aip.Conn) *aip.ServerMessage {
	t.Helper()
	m := readFrame(t, c)
	if id, ok := ufoConns.Load(c); ok && isToolQuestion(m) {
		answerToolList(t, c, id.(string), m, "LinuxAgent", rawTools...)
		m = readFrame(t, c)
	}
	return m
}

// readFrame reads the next frame within a deadline.
func readFrame(t *testing.T, c *aip.Conn) *aip.ServerMessage {
	t.Helper()
	type read struct {
		b   []byte
		err error
	}
	ch := make(chan read, 1)
	go func() { _, b, err := c.Read(context.Background()); ch <- read{b, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		m, err := aip.DecodeServer(r.b)
		if err != nil {
			t.Fatalf("server sent a bad frame: %v\n%s", err, r.b)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no frame from the server")
	}
	return nil
}

// register registers c as UFO's device client on Linux, and
// answers the server's one question that follows an accepted
// registration, list_tools for the LinuxAgent, as UFO's client would,
// with rawTools: the tools the raw-frame tests' rounds call.
func register(t *testing.T, c *aip.Conn, id string) *aip.ServerMessage {
	t.Helper()
	send(t, c, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientID: id,
		Metadata: map[string]any{"platform": "linux", "system_info": map[string]any{"platform": "linux", "hostname": "h"}}})
	ack := readServer(t, c)
	if ack.Type == aip.TypeHeartbeat && ack.Status == aip.StatusOK {
		ufoConns.Store(c, id)
		t.Cleanup(func() { ufoConns.Delete(c) })
	}
	return ack
}

// ufoConns are the connections register registered, by their client
// id: readServer answers the server's list_tools question on them.
var ufoConns sync.Map

// rawTools are the tools of the raw-frame tests' device, in the
// namespace "Device" unless toolNamespace says otherwise.
var rawTools = []string{"block", "click", "click_input", "count", "execute_command", "write_file"}

var toolNamespace = map[string]string{"execute_command": "shell", "write_file": "files"}

// answerToolList answers m, which must be the server's list_tools
// question to agent (sent as UFO's own server sends it: an action, no
// filter), with tools, action tools of the namespace "Device".
func answerToolList(t *testing.T, c *aip.Conn, id string, m *aip.ServerMessage, agent string, tools ...string) {
	t.Helper()
	infos := make([]command.ToolInfo, 0, len(tools))
	for _, n := range tools {
		infos = append(infos, command.ToolInfo{Name: n, Namespace: cmp.Or(toolNamespace[n], "Device"), ToolType: command.Action, Description: n + " something"})
	}
	answerToolListWith(t, c, id, m, agent, infos)
}

// isToolQuestion says m is the server's list_tools question.
func isToolQuestion(m *aip.ServerMessage) bool {
	return m.Type == aip.TypeCommand && len(m.Actions) == 1 && m.Actions[0].ToolName == command.ListTools &&
		m.Actions[0].ToolType == command.Action && len(m.Actions[0].Parameters) == 0
}

// answerToolListWith answers the list_tools question m with infos.
func answerToolListWith(t *testing.T, c *aip.Conn, id string, m *aip.ServerMessage, agent string, infos []command.ToolInfo) {
	t.Helper()
	if !isToolQuestion(m) || m.AgentName != agent {
		t.Fatalf("want list_tools as an action with no parameters for %s, got %s/%s agent %q %+v", agent, m.Type, m.Status, m.AgentName, m.Actions)
	}
	b, err := json.Marshal(infos)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientID: id,
		PrevResponseID: m.ResponseID, ActionResults: []command.Result{{Status: command.Success, Result: b, CallID: m.Actions[0].CallID}}})
}

func send(t *testing.T, c *aip.Conn, m aip.Frame) {
	t.Helper()
	if err := c.Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func newHTTP(t *testing.T, s *server.Server) *httptest.Server {
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// recordWatch is a store that tells a test when the server has written a
// task's record, once watch has been called. From then on each record is
// written before the test hears of it (the server only queues most of
// them), so that the test reads it back; before, the store's own way
// with queued records is what a test sees.
type recordWatch struct {
	store.Store
	on      atomic.Bool
	written chan struct{}
}

func watchRecords(st store.Store) *recordWatch {
	return &recordWatch{Store: st, written: make(chan struct{}, 1)}
}

// watch starts telling of records.
func (w *recordWatch) watch() { w.on.Store(true) }

func (w *recordWatch) PutTask(ctx context.Context, t store.Task, wait bool) error {
	if !w.on.Load() {
		return w.Store.PutTask(ctx, t, wait)
	}
	err := w.Store.PutTask(ctx, t, true)
	select {
	case w.written <- struct{}{}:
	default: // one is pending: the test reads the store again anyway
	}
	return err
}

// until reads task id's record from the store, again after each record
// the server writes, until done holds for it, and returns it. Records
// written before watch was called may not be read.
func (w *recordWatch) until(t testing.TB, id string, done func(server.TaskInfo) bool) server.TaskInfo {
	t.Helper()
	for {
		rec, err := w.Task(context.Background(), id)
		if err != nil {
			t.Fatalf("task %s is not in the store: %v", id, err)
		}
		var info server.TaskInfo
		if err := json.Unmarshal(rec.Data, &info); err != nil {
			t.Fatal(err)
		}
		if done(info) {
			return info
		}
		<-w.written
	}
}

// ufoAgents are the agents of UFO's device client's mcp.yaml
// (config/ufo/mcp.yaml in microsoft/UFO), as the transcripts'
// client ran with them.
var ufoAgents = []string{"HostAgent", "AppAgent", "ConstellationAgent", "HardwareAgent", "LinuxAgent", "MobileAgent"}

// ufoRoute is what UFO's client says of a command frame it cannot route:
// it runs a frame through the agent its agent_name names, and answers
// nothing to one that names none of its agents (it logs the error).
func ufoRoute(m *aip.ServerMessage) error {
	if !slices.Contains(ufoAgents, m.AgentName) {
		name := m.AgentName
		if name == "" {
			name = "None" // Python's null
		}
		return fmt.Errorf("UFO's client: Agent configuration for %s not found.", name)
	}
	return nil
}
