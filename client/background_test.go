package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

// Every call carries a progressToken, whether or not its caller listens:
// a server can report progress, and a command left in the background is
// asked about later.
func TestEveryCallSendsAProgressToken(t *testing.T) {
	tokens := make(chan any, 2)
	ms := server.NewMCPServer("tok", "1.0.0")
	ms.AddTool(mcp.NewTool("look", mcp.WithDescription("records its progress token")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var tok any
			if req.Params.Meta != nil {
				tok = req.Params.Meta.ProgressToken
			}
			tokens <- tok
			return mcp.NewToolResultText("ok"), nil
		})
	c := newClient(t, []client.Server{client.Foreign(client.Server{Namespace: "tok"}, ms)}, fastOpts())
	for i := range 2 {
		r := c.Execute(context.Background(), command.Command{Namespace: "tok", ToolName: "look", CallID: fmt.Sprint("t", i)})
		if !r.OK() {
			t.Fatalf("call %d: %+v", i, r)
		}
		tok := <-tokens
		if s, _ := tok.(string); !strings.HasPrefix(s, "tok-") {
			t.Errorf("call %d went without a progress token (%v)", i, tok)
		}
	}
}

// gate is a tool that reports progress as told and returns when released,
// or stops when cancelled.
type gate struct {
	report  chan string // each message is reported, then acknowledged on reported
	release chan struct{}
	stopped chan error // the cause its handler saw when cancelled
}

func newGate() *gate {
	return &gate{report: make(chan string), release: make(chan struct{}), stopped: make(chan error, 1)}
}

func (g *gate) server() *tools.Server {
	s := &tools.Server{Name: "work"}
	s.Add(tools.New("long", "runs until released", tools.Annotations{Risk: tools.RiskRead, Streams: []string{"output"}}, g.run))
	s.Add(tools.New("wait", "waits until released", tools.Annotations{Risk: tools.RiskRead, Waits: true}, g.run))
	return s
}

func (g *gate) run(ctx context.Context, in struct{}) (string, error) {
	n := 0
	for {
		select {
		case msg := <-g.report:
			n++
			tools.ReportProgress(ctx, tools.Progress{Progress: float64(n), Message: msg})
			g.report <- msg // done
		case <-g.release:
			return "finished after " + fmt.Sprint(n) + " lines", nil
		case <-ctx.Done():
			g.stopped <- context.Cause(ctx)
			return "", fmt.Errorf("stopped after %d lines", n)
		}
	}
}

// say makes the tool report msg and waits until it has.
func (g *gate) say(msg string) {
	g.report <- msg
	<-g.report
}

func statusOf(t *testing.T, r command.Result) command.Status {
	t.Helper()
	var s command.Status
	if err := json.Unmarshal(r.Result, &s); err != nil {
		t.Fatalf("not a status: %+v (%v)", r, err)
	}
	return s
}

// progressLog keeps the progress reports it is given, for a test to
// look at; one made by newProgressLog also hands over the first report
// of an end on end.
type progressLog struct {
	mu  sync.Mutex
	got []command.Progress
	end chan command.Progress
}

func newProgressLog() *progressLog { return &progressLog{end: make(chan command.Progress, 1)} }

func (l *progressLog) add(p command.Progress) {
	l.mu.Lock()
	l.got = append(l.got, p)
	l.mu.Unlock()
	if p.State.Terminal() && l.end != nil {
		l.end <- p
	}
}

// context is parent with l as its progress callback.
func (l *progressLog) context(parent context.Context) context.Context {
	return client.WithProgress(parent, l.add)
}

// reports is what l has been given so far.
func (l *progressLog) reports() []command.Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// A command that runs past the threshold is left running: its result says
// so with its latest progress; command_status follows it to its end, and
// its end is reported with its final state.
func TestLongCommandRunsInTheBackground(t *testing.T) {
	g := newGate()
	c := newClient(t, []client.Server{{Namespace: "work", MCP: g.server()}}, fastOpts())
	log := newProgressLog()
	ctx := command.WithDetach(command.WithProgress(context.Background(), log.add), 100*time.Millisecond)

	res := make(chan command.Result, 1)
	go func() { res <- c.Execute(ctx, command.Command{Namespace: "work", ToolName: "long", CallID: "bg-1"}) }()
	g.say("line 1")
	g.say("line 2")
	r := <-res
	if !r.Running() || r.CallID != "bg-1" || r.Namespace != "work" {
		t.Fatalf("a command past the threshold: %+v", r)
	}
	s := statusOf(t, r)
	if s.State != command.StateRunning || s.Message != "line 2" || s.Progress != 2 || !strings.Contains(s.Note, `command_status with {"call_id": "bg-1"}`) {
		t.Errorf("running result %+v", s)
	}

	g.say("line 3")
	st := c.Execute(context.Background(), command.Command{ToolName: command.CommandStatus, CallID: "q1", Parameters: map[string]any{"call_id": "bg-1"}})
	if s := statusOf(t, st); !st.OK() || s.State != command.StateRunning || s.Message != "line 3" || s.Result != nil {
		t.Errorf("status while running: %+v %+v", st, s)
	}

	close(g.release)
	st = c.Execute(context.Background(), command.Command{ToolName: command.CommandStatus, CallID: "q2", Parameters: map[string]any{"call_id": "bg-1", "wait": 30}})
	s = statusOf(t, st)
	if s.State != command.StateCompleted || s.Result == nil || string(s.Result.Result) != `"finished after 3 lines"` {
		t.Errorf("status after the end: %+v", s)
	}
	select {
	case p := <-log.end:
		if p.CallID != "bg-1" || p.State != command.StateCompleted || p.Message != "line 3" {
			t.Errorf("end report %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the background command was not reported")
	}
}

// cancel_command stops a background command: the tool's context is
// cancelled, the answer waits for the tool to return and carries what it
// said.
func TestCancelCommandStopsTheTool(t *testing.T) {
	g := newGate()
	c := newClient(t, []client.Server{{Namespace: "work", MCP: g.server()}}, fastOpts())
	ctx := command.WithDetach(context.Background(), 50*time.Millisecond)
	res := make(chan command.Result, 1)
	go func() { res <- c.Execute(ctx, command.Command{Namespace: "work", ToolName: "long", CallID: "bg-2"}) }()
	g.say("working")
	if r := <-res; !r.Running() {
		t.Fatalf("not left running: %+v", r)
	}
	r := c.Execute(context.Background(), command.Command{ToolName: command.CancelCommand, CallID: "c1", Parameters: map[string]any{"call_id": "bg-2"}})
	s := statusOf(t, r)
	if !r.OK() || s.State != command.StateCancelled || s.Note != "cancelled; the tool has stopped" ||
		s.Result == nil || s.Result.Error != "stopped after 1 lines" {
		t.Errorf("cancel: %+v %+v", r, s)
	}
	select {
	case cause := <-g.stopped:
		if !strings.Contains(fmt.Sprint(cause), "cancel_command") {
			t.Errorf("the tool saw cause %v", cause)
		}
	default:
		t.Error("the tool's context was not cancelled")
	}
	// Cancelling again says it had ended.
	r = c.Execute(context.Background(), command.Command{ToolName: command.CancelCommand, CallID: "c2", Parameters: map[string]any{"call_id": "bg-2"}})
	if s := statusOf(t, r); s.State != command.StateCancelled || !strings.Contains(s.Note, "already ended") {
		t.Errorf("second cancel: %+v", s)
	}
}

// A command that ends before the threshold returns its own result, and a
// caller's cancellation before the threshold is the command's.
func TestShortCommandIsWaitedFor(t *testing.T) {
	g := newGate()
	c := newClient(t, []client.Server{{Namespace: "work", MCP: g.server()}}, fastOpts())
	ctx := command.WithDetach(context.Background(), time.Hour)
	res := make(chan command.Result, 1)
	go func() { res <- c.Execute(ctx, command.Command{Namespace: "work", ToolName: "long", CallID: "s1"}) }()
	g.say("one")
	close(g.release)
	if r := <-res; !r.OK() || string(r.Result) != `"finished after 1 lines"` {
		t.Errorf("short command: %+v", r)
	}

	g2 := newGate()
	c2 := newClient(t, []client.Server{{Namespace: "work", MCP: g2.server()}}, fastOpts())
	cctx, cancel := context.WithCancelCause(command.WithDetach(context.Background(), time.Hour))
	go func() { res <- c2.Execute(cctx, command.Command{Namespace: "work", ToolName: "long", CallID: "s2"}) }()
	g2.say("one")
	cancel(errors.New("the user pressed stop"))
	// The tool's own words, or the client's if it was quicker.
	if r := <-res; r.OK() || r.Running() || (r.Error != "stopped after 1 lines" && !strings.Contains(r.Error, "the user pressed stop")) {
		t.Errorf("cancelled by its caller: %+v", r)
	}
	if cause := <-g2.stopped; !strings.Contains(fmt.Sprint(cause), "the user pressed stop") {
		t.Errorf("the tool saw cause %v", cause)
	}
}

// A tool whose work is to wait (tools.Annotations.Waits) is never left in
// the background, however short the threshold: the model asked to wait for
// its answer. A threshold of a nanosecond detaches any other call at once.
func TestWaitingToolIsNeverDetached(t *testing.T) {
	g := newGate()
	c := newClient(t, []client.Server{{Namespace: "work", MCP: g.server()}}, fastOpts())
	if info := c.Tools("work", ""); len(info) != 2 {
		t.Fatalf("tools %+v", info)
	}
	for _, info := range c.Tools("work", "") {
		if got, _ := info.Meta[tools.MetaWaits].(bool); got != (info.Name == "wait") {
			t.Errorf("%s: meta %s is %v", info.Name, tools.MetaWaits, info.Meta[tools.MetaWaits])
		}
	}
	ctx := command.WithDetach(context.Background(), time.Nanosecond)
	res := make(chan command.Result, 1)
	go func() { res <- c.Execute(ctx, command.Command{Namespace: "work", ToolName: "long", CallID: "d1"}) }()
	g.say("one")
	if r := <-res; !r.Running() {
		t.Fatalf("a call past the threshold was not detached: %+v", r)
	}
	close(g.release)

	g2 := newGate()
	c2 := newClient(t, []client.Server{{Namespace: "work", MCP: g2.server()}}, fastOpts())
	go func() { res <- c2.Execute(ctx, command.Command{Namespace: "work", ToolName: "wait", CallID: "w1"}) }()
	g2.say("one")
	g2.say("two")
	close(g2.release)
	if r := <-res; !r.OK() || r.Running() || string(r.Result) != `"finished after 2 lines"` {
		t.Errorf("a waiting tool's call: %+v", r)
	}
}

// command_status and cancel_command say what is wrong with their input.
func TestBackgroundControlBadInput(t *testing.T) {
	g := newGate()
	close(g.release)
	c := newClient(t, []client.Server{{Namespace: "work", MCP: g.server()}}, fastOpts())
	if r := c.Execute(context.Background(), command.Command{Namespace: "work", ToolName: "long", CallID: "k"}); !r.OK() {
		t.Fatalf("call: %+v", r)
	}
	for _, tc := range []struct {
		tool   string
		params map[string]any
		want   string
	}{
		{command.CommandStatus, nil, `command_status: parameter "call_id" is required`},
		{command.CancelCommand, map[string]any{"call_id": 7}, `cancel_command: parameter "call_id" must be a string`},
		{command.CommandStatus, map[string]any{"call_id": "nope"}, `command_status: no command with call_id "nope" is known on this device`},
		{command.CommandStatus, map[string]any{"call_id": "k", "wait": "soon"}, `command_status: parameter "wait" must be a number of seconds`},
		{command.CommandStatus, map[string]any{"call_id": "k", "wait": -1}, `command_status: parameter "wait" must not be negative`},
	} {
		r := c.Execute(context.Background(), command.Command{ToolName: tc.tool, CallID: "x", Parameters: tc.params})
		if r.OK() || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s %v: %+v, want %q", tc.tool, tc.params, r, tc.want)
		}
	}
	// A call that was waited for: its state, not its result again.
	r := c.Execute(context.Background(), command.Command{ToolName: command.CommandStatus, CallID: "y", Parameters: map[string]any{"call_id": "k"}})
	if s := statusOf(t, r); s.State != command.StateCompleted || s.Result != nil || s.Tool != "long" || s.Namespace != "work" {
		t.Errorf("status of a finished call: %+v", s)
	}
}

// Closing the client stops its background commands.
func TestCloseStopsBackgroundCommands(t *testing.T) {
	g := newGate()
	c, err := client.New(context.Background(), []client.Server{{Namespace: "work", MCP: g.server()}}, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	log := newProgressLog()
	ctx := command.WithDetach(command.WithProgress(context.Background(), log.add), 50*time.Millisecond)
	res := make(chan command.Result, 1)
	go func() { res <- c.Execute(ctx, command.Command{Namespace: "work", ToolName: "long", CallID: "bg-3"}) }()
	g.say("x")
	if r := <-res; !r.Running() {
		t.Fatalf("not left running: %+v", r)
	}
	c.Close()
	select {
	case cause := <-g.stopped:
		if !strings.Contains(fmt.Sprint(cause), "closed") {
			t.Errorf("cause %v", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left the background command running")
	}
	select {
	case p := <-log.end:
		if p.State != command.StateFailed {
			t.Errorf("end report %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the background command was not reported")
	}
}

// Close cancels the commands still running, a background one included,
// and returns only once they have ended: a tool stops on a goroutine of its
// own (os/exec kills a shell command's processes from one), and a process
// that exits once its device is closed must not leave them behind.
func TestCloseWaitsForCancelledCommands(t *testing.T) {
	started, cancelled, proceed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var ended atomic.Bool
	s := &tools.Server{Name: "work"}
	s.Add(tools.New("long", "runs until cancelled, then takes its time to stop", tools.Annotations{Risk: tools.RiskRead},
		func(ctx context.Context, in struct{}) (string, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			<-proceed
			ended.Store(true)
			return "", ctx.Err()
		}))
	c, err := client.New(context.Background(), []client.Server{{Namespace: "work", MCP: s}}, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	ctx := command.WithDetach(context.Background(), time.Nanosecond)
	if r := c.Execute(ctx, command.Command{Namespace: "work", ToolName: "long", CallID: "bg"}); !r.Running() {
		t.Fatalf("not left running: %+v", r)
	}
	<-started
	closed := make(chan bool, 1)
	go func() {
		c.Close()
		closed <- ended.Load()
	}()
	<-cancelled
	close(proceed)
	if !<-closed {
		t.Error("Close returned before the cancelled command had ended")
	}
}
