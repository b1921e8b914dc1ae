package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/shell"
)

// peer is a stdio server run from this test binary in the given mode.
func peer(mode string) client.Server {
	return client.Server{Namespace: "peer", Description: "a test peer", Command: os.Args[0],
		Env: []string{peerEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, InitTimeout: 5 * time.Second}
}

// quiet keeps the expected warnings out of the test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fastOpts restart quickly and ping often, to keep tests short.
func fastOpts() client.Options {
	return client.Options{Logger: quiet, MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}
}

// noLeaks records the goroutine count and, at cleanup, waits for it to
// come back, failing with a dump if it does not: nothing the client
// started may outlive Close.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
}

// logWatch is a slog handler a test waits on: the client logs each step
// of a server's life ("mcp server restarted", "tool list refreshed"), so a
// test can wait for the step itself instead of polling the status.
type logWatch struct {
	mu      sync.Mutex
	seen    map[string]int
	changed chan struct{} // closed and replaced at every message
}

func newLogWatch() *logWatch {
	return &logWatch{seen: map[string]int{}, changed: make(chan struct{})}
}

func (w *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *logWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *logWatch) WithGroup(string) slog.Handler            { return w }
func (w *logWatch) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen[r.Message]++
	close(w.changed)
	w.changed = make(chan struct{})
	return nil
}

// count is how many times msg has been logged so far.
func (w *logWatch) count(msg string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[msg]
}

// wait returns once msg has been logged n times in all, and fails the test
// if that has not happened within 10 s.
func (w *logWatch) wait(t *testing.T, msg string, n int) {
	t.Helper()
	// A deadline only for a test that fails: it waits past the longest
	// timeout a test sets (10s) on a loaded machine.
	const limit = time.Minute
	timeout := time.After(limit)
	for {
		w.mu.Lock()
		got, changed := w.seen[msg], w.changed
		w.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%q logged %d times in %s, want %d", msg, got, limit, n)
		}
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func newClient(t *testing.T, servers []client.Server, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.New(context.Background(), servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func run(c *client.Client, ns, tool string, params map[string]any) command.Result {
	return c.Execute(context.Background(), command.Command{Namespace: ns, ToolName: tool, Parameters: params, CallID: "c1"})
}

func text(t *testing.T, r command.Result) string {
	t.Helper()
	if !r.OK() {
		t.Fatalf("command failed: %s", r.Error)
	}
	var s string
	if err := json.Unmarshal(r.Result, &s); err != nil {
		return string(r.Result)
	}
	return s
}

func TestStdioServer(t *testing.T) {
	noLeaks(t)
	c := newClient(t, []client.Server{peer("good")}, fastOpts())
	st := c.Status()[0]
	if st.State != client.StateReady || st.Kind != "stdio" || st.PID == 0 || st.Tools != 8 {
		t.Fatalf("status: %+v", st)
	}
	echo := c.Tools("peer", command.DataCollection)
	if len(echo) != 1 || echo[0].Key != "data_collection::echo" || client.RiskOf(echo[0]) != client.RiskRead {
		t.Errorf("data collection tools: %+v", echo)
	}
	for _, tl := range c.Tools("peer", command.Action) {
		if client.RiskOf(tl) != client.RiskDestructive { // no hints: MCP's defaults say it may destroy
			t.Errorf("%s: risk %q", tl.Name, client.RiskOf(tl))
		}
	}
	d := dispatcher.NewLocal(c, dispatcher.LocalOptions{})
	res := d.Execute(context.Background(), []command.Command{
		{ToolName: "echo", Parameters: map[string]any{"text": "hello"}},
		{ToolName: "pid", Namespace: "peer"},
	})
	if got := text(t, res[0]); got != "hello" || res[0].Namespace != "peer" {
		t.Errorf("echo: %q %+v", got, res[0])
	}
	if text(t, res[1]) != strconv.Itoa(st.PID) {
		t.Errorf("pid %s, status says %d", res[1].Result, st.PID)
	}
}

func TestValidationNamesTheArgument(t *testing.T) {
	c := newClient(t, []client.Server{peer("good")}, fastOpts())
	tests := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"text": 5}, `invalid arguments for peer.echo: argument "text": got number, want string`},
		{map[string]any{}, `invalid arguments for peer.echo: missing required argument "text"`},
		{nil, `missing required argument "text"`},
	}
	for _, tt := range tests {
		r := run(c, "peer", "echo", tt.params)
		if r.OK() || !strings.Contains(r.Error, tt.want) {
			t.Errorf("%v: got %+v, want error %q", tt.params, r, tt.want)
		}
	}
	if r := run(c, "peer", "ecko", nil); !strings.Contains(r.Error, `unknown tool "ecko" in namespace "peer"; did you mean echo`) {
		t.Errorf("unknown tool: %s", r.Error)
	}
}

func TestProgressReachesTheDispatchersCaller(t *testing.T) {
	for _, kind := range []string{"stdio", "builtin"} {
		t.Run(kind, func(t *testing.T) {
			srv := peer("good")
			if kind == "builtin" {
				srv = client.Foreign(client.Server{Namespace: "peer"}, goodServer())
			}
			c := newClient(t, []client.Server{srv}, fastOpts())
			var log progressLog
			ctx := log.context(context.Background())
			res := dispatcher.NewLocal(c, dispatcher.LocalOptions{}).Execute(ctx, []command.Command{
				{ToolName: "progress", Namespace: "peer", CallID: "long-1", Parameters: map[string]any{"steps": 3}}})
			if text(t, res[0]) != "did 3 steps" {
				t.Fatalf("result %+v", res[0])
			}
			got := log.reports()
			want := []client.Progress{
				{CallID: "long-1", Namespace: "peer", Tool: "progress", Progress: 1, Total: 3, Message: "step 1", State: command.StateRunning},
				{CallID: "long-1", Namespace: "peer", Tool: "progress", Progress: 2, Total: 3, Message: "step 2", State: command.StateRunning},
				{CallID: "long-1", Namespace: "peer", Tool: "progress", Progress: 3, Total: 3, Message: "step 3", State: command.StateRunning},
			}
			if !slices.Equal(untimed(got), want) {
				t.Errorf("progress events before the result:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestListChangedRefreshesTools(t *testing.T) {
	watch := newLogWatch()
	opts := fastOpts()
	opts.Logger = slog.New(watch)
	c := newClient(t, []client.Server{peer("good")}, opts)
	if r := run(c, "peer", "added", nil); r.OK() {
		t.Fatal("added exists before add_tool")
	}
	refreshed := watch.count("tool list refreshed")
	text(t, run(c, "peer", "add_tool", nil))
	watch.wait(t, "tool list refreshed", refreshed+1)
	if got := text(t, run(c, "peer", "added", nil)); got != "I am new" {
		t.Errorf("added: %q", got)
	}
	if r := run(c, "", command.GetMCPTools, map[string]any{"namespace": "peer"}); !strings.Contains(string(r.Result), `"tool_key":"action::added"`) {
		t.Errorf("get_mcp_tools does not show the new tool: %s", r.Result)
	}
}

func TestDeathMidCallThenRestart(t *testing.T) {
	noLeaks(t)
	opts := fastOpts()
	opts.MinBackoff = 300 * time.Millisecond
	watch := newLogWatch()
	opts.Logger = slog.New(watch)
	c := newClient(t, []client.Server{peer("good"), {Namespace: "shell", MCP: shell.New(shell.Options{})}}, opts)
	firstPID := c.Status()[0].PID

	r := run(c, "peer", "die", nil)
	for _, want := range []string{`stdio server "peer"`, "exited during the call", "exit status 7", "dying on purpose"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q lacks %q", r.Error, want)
		}
	}
	// While it is down, calls fail fast with the reason.
	deadline := time.Now().Add(2 * time.Second)
	var fast command.Result
	for time.Now().Before(deadline) {
		// "is not running" comes from the client itself: the call never
		// waited for the server.
		fast = run(c, "peer", "echo", map[string]any{"text": "x"})
		if strings.Contains(fast.Error, "is not running") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(fast.Error, `server "peer" is not running`) || !strings.Contains(fast.Error, "starts it again in") {
		t.Errorf("while dead: %+v", fast)
	}
	// The session goes on: other servers answer meanwhile.
	if r := run(c, "shell", "execute_command", map[string]any{"command": "echo still here"}); !r.OK() {
		t.Errorf("shell while peer is dead: %+v", r)
	}
	// It comes back.
	watch.wait(t, "mcp server restarted", 1)
	st := c.Status()[0]
	if st.State != client.StateReady || st.Restarts != 1 || st.PID == firstPID || alive(firstPID) {
		t.Fatalf("after restart: %+v (first pid %d alive %v)", st, firstPID, alive(firstPID))
	}
	if got := text(t, run(c, "peer", "echo", map[string]any{"text": "back"})); got != "back" {
		t.Errorf("echo after restart: %q", got)
	}
}

func TestBadServersAtStart(t *testing.T) {
	tests := []struct {
		mode string
		want []string
	}{
		{"crash", []string{"exited while starting (exit status 3)", "the config file /etc/peer.conf is missing"}},
		// The hang's limit leaves a loaded machine's start (a race-built
		// test binary) time to write its stderr; the others end at once.
		{"hang", []string{"did not finish starting (initialize and tools/list) within 5s", "thinking very hard"}},
		{"garbage", []string{"wrote non-JSON to stdout", "Welcome to PeerServer"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			noLeaks(t)
			srv := peer(tt.mode)
			srv.InitTimeout = 10 * time.Second
			if tt.mode == "hang" {
				srv.InitTimeout = 5 * time.Second
			}
			start := time.Now()
			c, err := client.New(context.Background(), []client.Server{srv, {Namespace: "shell", MCP: shell.New(shell.Options{})}}, fastOpts())
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > srv.InitTimeout+30*time.Second { // not forever
				t.Errorf("New took %s with an init timeout of %s", d, srv.InitTimeout)
			}
			st := c.Status()[0]
			if st.State != client.StateDead {
				t.Errorf("state %s", st.State)
			}
			r := run(c, "peer", "echo", map[string]any{"text": "x"})
			for _, want := range append(tt.want, `server "peer" is not running`) {
				if !strings.Contains(r.Error, want) {
					t.Errorf("error %q lacks %q", r.Error, want)
				}
			}
			if r := run(c, "shell", "execute_command", map[string]any{"command": "true"}); !r.OK() {
				t.Errorf("the other server: %+v", r)
			}
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}

			strict := fastOpts()
			strict.RequireAll = true
			if _, err := client.New(context.Background(), []client.Server{srv}, strict); err == nil || !strings.Contains(err.Error(), tt.want[0]) {
				t.Errorf("RequireAll: %v", err)
			}
		})
	}
}

func TestHugeResults(t *testing.T) {
	noLeaks(t)
	opts := fastOpts()
	opts.MaxResultBytes = 1 << 20
	opts.MaxMessageBytes = 4 << 20
	srv := peer("good")
	// Long enough never to be reached under any load: a reply too big to
	// pass on must fail its call at once, not by this timeout.
	srv.ToolTimeouts = map[string]time.Duration{"huge": 10 * time.Minute}
	c := newClient(t, []client.Server{srv}, opts)
	if got := text(t, run(c, "peer", "huge", map[string]any{"bytes": 1000})); len(got) != 1000 {
		t.Errorf("small result: %d bytes", len(got))
	}
	r := run(c, "peer", "huge", map[string]any{"bytes": 2 << 20})
	if !strings.Contains(r.Error, "over the limit of 1048576 bytes") {
		t.Errorf("over MaxResultBytes: %+v", r.Error)
	}
	r = run(c, "peer", "huge", map[string]any{"bytes": 5 << 20})
	if r.OK() || !strings.Contains(r.Error, "a message of more than 4194304 bytes, which was dropped") || strings.Contains(r.Error, "timed out") {
		t.Errorf("over MaxMessageBytes: %.300s", r.Error)
	}
	if got := text(t, run(c, "peer", "echo", map[string]any{"text": "fine"})); got != "fine" {
		t.Errorf("after a dropped message: %q", got)
	}
}

func TestDroppedResponseID(t *testing.T) {
	for _, tt := range []struct {
		head, tail, want string
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxx`, `xxx"}]}}`, "7"},
		{`{"result":{"content":[{"type":"text","text":"xxx`, `xxx"}]},"jsonrpc":"2.0","id":"a\"b"}` + "\n", `"a\"b"`},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"xxx`, `xxx"}}`, "3"},
		{`{"method":"roots/list","params":{"x":"xxx`, `xxx"},"jsonrpc":"2.0","id":4}`, ""}, // a request, not a response
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"xxx`, `xxx"}}`, ""},
	} {
		id, ok := client.ResponseID([]byte(tt.head), []byte(tt.tail))
		if got := string(id); ok != (tt.want != "") || got != tt.want {
			t.Errorf("%.40s…%s: id %q (%v), want %q", tt.head, tt.tail, got, ok, tt.want)
		}
	}
}

func TestTimeoutsPerToolAndServer(t *testing.T) {
	srv := peer("good")
	srv.CallTimeout = 300 * time.Millisecond
	srv.ToolTimeouts = map[string]time.Duration{"progress": 5 * time.Second}
	c := newClient(t, []client.Server{srv}, fastOpts())
	// Had the timeout not cut it, the sleep would end well and say so.
	if r := run(c, "peer", "sleep", map[string]any{"seconds": 5}); !strings.Contains(r.Error, "sleep timed out after 300ms") {
		t.Errorf("server timeout: %+v", r)
	}
	if got := text(t, run(c, "peer", "progress", map[string]any{"steps": 20})); got != "did 20 steps" { // 400ms, under its own 5s
		t.Errorf("tool timeout: %q", got)
	}
}

func TestCloseStopsTheProcessGroup(t *testing.T) {
	noLeaks(t)
	c, err := client.New(context.Background(), []client.Server{peer("good")}, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Status()[0].PID
	child, err := strconv.Atoi(text(t, run(c, "peer", "spawn_child", nil)))
	if err != nil || !alive(child) || !alive(pid) {
		t.Fatalf("child %d (%v) server %d", child, err, pid)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for (alive(pid) || alive(child)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) || alive(child) {
		t.Errorf("after Close: server %d alive %v, grandchild %d alive %v", pid, alive(pid), child, alive(child))
	}
	if st := c.Status()[0]; st.State != client.StateClosed {
		t.Errorf("state after close: %s", st.State)
	}
	if r := run(c, "peer", "echo", map[string]any{"text": "x"}); !strings.Contains(r.Error, "closed") {
		t.Errorf("call after close: %+v", r)
	}
}

func TestPingFindsAStuckServer(t *testing.T) {
	noLeaks(t)
	opts := fastOpts()
	opts.PingInterval = 100 * time.Millisecond
	watch := newLogWatch()
	opts.Logger = slog.New(watch)
	srv := peer("good")
	// Also the ping's deadline: long enough for a race-built test binary
	// to start on a loaded machine (2s failed under load 40).
	srv.InitTimeout = 10 * time.Second
	c := newClient(t, []client.Server{srv}, opts)
	st := c.Status()[0]
	// A signal to PID 0 would stop this test's whole process group (go
	// test and CI with it): stop only a server known to be running.
	if st.State != client.StateReady || st.PID <= 0 {
		t.Fatalf("the server did not start: %+v", st)
	}
	pid := st.PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil { // alive, but answers nothing
		t.Fatal(err)
	}
	watch.wait(t, "mcp server restarted", 1)
	st = c.Status()[0]
	if st.Restarts != 1 || st.PID == pid || alive(pid) {
		t.Fatalf("after SIGSTOP: %+v, old pid alive %v", st, alive(pid))
	}
	if got := text(t, run(c, "peer", "echo", map[string]any{"text": "awake"})); got != "awake" {
		t.Errorf("echo: %q", got)
	}
}

func TestHTTPServer(t *testing.T) {
	noLeaks(t)
	mcpSrv := goodServer()
	hs := httptest.NewServer(server.NewStreamableHTTPServer(mcpSrv))
	t.Cleanup(hs.Close) // after the client's Close, which ends its listening stream
	c := newClient(t, []client.Server{{Namespace: "web", URL: hs.URL + "/mcp", Headers: map[string]string{"X-Test": "1"}}}, fastOpts())
	if st := c.Status()[0]; st.State != client.StateReady || st.Kind != "http" || st.Tools != 8 {
		t.Fatalf("status %+v", st)
	}
	if got := text(t, run(c, "web", "echo", map[string]any{"text": "over http"})); got != "over http" {
		t.Errorf("echo: %q", got)
	}
	// mcp-go's HTTP server sends progress on the session's listening
	// stream, so reports may trail the result; those are dropped.
	var log progressLog
	ctx := log.context(context.Background())
	r := c.Execute(ctx, command.Command{Namespace: "web", ToolName: "progress", CallID: "h1", Parameters: map[string]any{"steps": 2}})
	if text(t, r) != "did 2 steps" {
		t.Errorf("progress over http: %+v", r)
	}
	for _, p := range log.reports() {
		if p.CallID != "h1" || p.Tool != "progress" || p.Total != 2 {
			t.Errorf("progress event %+v", p)
		}
	}
	text(t, run(c, "web", "add_tool", nil))
	deadline := time.Now().Add(5 * time.Second)
	for len(c.Tools("web", "")) != 9 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(c.Tools("web", "")) != 9 {
		t.Errorf("list_changed over http not seen: %d tools", len(c.Tools("web", "")))
	}
}

func TestFiltersAndPolicy(t *testing.T) {
	srv := peer("good")
	srv.Allow = []string{"echo", "p*"}
	srv.Deny = []string{"progress"}
	srv.Risks = map[string]client.Risk{"pid": client.RiskRead}
	opts := fastOpts()
	opts.Forbid = []client.Risk{client.RiskDestructive}
	c := newClient(t, []client.Server{srv, {Namespace: "shell", MCP: shell.New(shell.Options{})}}, opts)
	var names []string
	for _, tl := range c.Tools("peer", "") {
		names = append(names, tl.Name+":"+string(client.RiskOf(tl)))
	}
	if !slices.Equal(names, []string{"echo:read", "pid:read"}) {
		t.Errorf("visible tools: %v", names)
	}
	if r := run(c, "peer", "progress", nil); !strings.Contains(r.Error, `unknown tool "progress"`) {
		t.Errorf("denied tool: %+v", r)
	}
	if r := run(c, "peer", "pid", nil); !r.OK() {
		t.Errorf("pid (read by config): %+v", r)
	}
	r := run(c, "shell", "execute_command", map[string]any{"command": "touch should-not-exist"})
	if r.OK() || r.Error != "policy: shell.execute_command is a destructive tool, and this device does not run destructive tools" {
		t.Errorf("forbidden risk: %+v", r)
	}
}

func TestBadServerDefinitions(t *testing.T) {
	tests := []struct {
		srv  client.Server
		want string
	}{
		{client.Server{Namespace: "a", Command: "x", URL: "http://127.0.0.1:1"}, "more than one of MCP, Command and URL"},
		{client.Server{Namespace: "describe", Command: "x"}, "reserved"},
		{client.Server{Namespace: "a", Command: "x", Deny: []string{"[a"}}, `tool pattern "[a" is malformed`},
		{client.Server{Namespace: "a", Command: "x", Risks: map[string]client.Risk{"*": "scary"}}, `risk "scary"`},
		{client.Server{Namespace: "a", Command: "/no/such/server"}, "cannot start /no/such/server"},
	}
	for _, tt := range tests {
		opts := fastOpts()
		opts.RequireAll = true
		_, err := client.New(context.Background(), []client.Server{tt.srv}, opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %q", tt.srv, err, tt.want)
		}
	}
}

func TestDeclaredInterface(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	c := newClient(t, []client.Server{peer("good")}, fastOpts())
	r := run(c, "", client.Describe, nil)
	var in client.Interface
	if err := json.Unmarshal(r.Result, &in); err != nil {
		t.Fatal(err, r)
	}
	echo := in.Commands["peer.echo"]
	if echo.Risk != client.RiskRead || !strings.Contains(string(echo.Args), `"text"`) || !slices.Equal(echo.Streams, []string{"progress"}) {
		t.Errorf("peer.echo: %+v", echo)
	}
	for _, name := range []string{"get_mcp_tools", "list_tools", "get_device_info", "describe", "get_state"} {
		if _, ok := in.Commands[name]; !ok {
			t.Errorf("built-in %s not declared", name)
		}
	}
	if _, ok := in.Commands["screenshot"]; ok {
		t.Error("screenshot declared without a display")
	}
	if r := run(c, "", client.Screenshot, nil); !strings.Contains(r.Error, `unknown tool "screenshot"`) {
		t.Errorf("undeclared screenshot: %+v", r)
	}
	if _, ok := in.Events["progress"]; !ok {
		t.Error("progress event not declared")
	}
	r = run(c, "", client.GetState, nil)
	var state struct {
		Servers []client.ServerStatus
		Device  command.DeviceInfo
	}
	if err := json.Unmarshal(r.Result, &state); err != nil || state.Servers[0].State != client.StateReady || state.Device.Hostname == "" {
		t.Errorf("get_state: %s (%v)", r.Result, err)
	}

	opts := fastOpts()
	opts.Screenshot = func(context.Context) ([]byte, error) { return []byte("\x89PNG"), nil }
	c2 := newClient(t, []client.Server{{Namespace: "shell", MCP: shell.New(shell.Options{})}}, opts)
	r = run(c2, "", client.Describe, nil)
	if !strings.Contains(string(r.Result), `"screenshot"`) {
		t.Errorf("screenshot not declared with a display: %s", r.Result)
	}
	if r = run(c2, "", client.Screenshot, nil); !strings.Contains(string(r.Result), `"data":"iVBORw=="`) {
		t.Errorf("screenshot: %+v", r)
	}
}
