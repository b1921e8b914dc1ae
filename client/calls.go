package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/saucerhq/saucer/command"
)

// keptCalls bounds how many ended commands the client remembers for
// command_status.
const keptCalls = 256

// DefaultCancelWait bounds how long cancel_command waits for a cancelled
// tool to return.
const DefaultCancelWait = 10 * time.Second

// maxStatusWait caps command_status's wait.
const maxStatusWait = 60 * time.Second

// errCancelledByCommand is the cause of a call stopped by cancel_command.
var errCancelledByCommand = errors.New("cancelled by cancel_command")

// call is one command the client runs or ran, by call id: what
// command_status and cancel_command answer about.
type call struct {
	cmd     command.Command
	started time.Time
	cancel  context.CancelCauseFunc
	// report is the caller's progress callback (nil: none); a background
	// command's end is reported to it too.
	report func(command.Progress)
	done   chan struct{} // closed when the result is in
	// settled is closed when the tool call itself returned (an in-process
	// tool's handler returned; for another server, the client stopped
	// waiting for it). It can come after done: a call that times out
	// returns at once.
	settled chan struct{}

	mu        sync.Mutex
	ns        string
	inProcess bool // Saucer's own server in the same process: its end is its handler's
	latest    command.Progress
	detached  bool
	cancelled bool // by cancel_command
	result    command.Result
	ended     time.Time
}

// calls keeps the running commands and the latest ended ones.
type calls struct {
	mu    sync.Mutex
	byID  map[string]*call
	ended []string // ids of ended calls, oldest first
}

func (cs *calls) start(cmd command.Command, cancel context.CancelCauseFunc, report func(command.Progress)) *call {
	cl := &call{cmd: cmd, started: time.Now(), cancel: cancel, report: report, done: make(chan struct{}),
		settled: make(chan struct{}), ns: cmd.Namespace}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byID == nil {
		cs.byID = map[string]*call{}
	}
	cs.byID[cmd.CallID] = cl
	return cl
}

func (cs *calls) get(id string) *call {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byID[id]
}

// end records a call's result. A background call's end is reported to
// its caller's progress callback.
func (cs *calls) end(cl *call, r command.Result) {
	cl.mu.Lock()
	if !cl.detached {
		// Its result went back with it: keep what command_status says
		// of it, not its payload.
		r.Result = nil
	}
	cl.result, cl.ended = r, time.Now()
	if r.Namespace != "" {
		cl.ns = r.Namespace
	}
	detached := cl.detached
	p := cl.progressLocked()
	cl.mu.Unlock()
	if detached && cl.report != nil {
		// Before done: whoever waits for the end (command_status with a
		// wait) answers after the caller was told of it, so a remote
		// server hears of the end before that answer.
		cl.report(p)
	}
	close(cl.done)
	cs.mu.Lock()
	cs.ended = append(cs.ended, cl.cmd.CallID)
	for len(cs.ended) > keptCalls {
		if old := cs.byID[cs.ended[0]]; old != nil && old.isDone() {
			delete(cs.byID, cs.ended[0])
		}
		cs.ended = cs.ended[1:]
	}
	cs.mu.Unlock()
}

// running lists the calls that have not ended.
func (cs *calls) running() []*call {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []*call
	for _, cl := range cs.byID {
		if !cl.isDone() {
			out = append(out, cl)
		}
	}
	return out
}

func (cl *call) isDone() bool {
	select {
	case <-cl.done:
		return true
	default:
		return false
	}
}

// progress records a report of the tool and passes it on, tagged.
func (cl *call) progress(p command.Progress) {
	cl.mu.Lock()
	p.CallID, p.Namespace, p.Tool = cl.cmd.CallID, cl.ns, cl.cmd.ToolName
	p.State, p.ElapsedMS = command.StateRunning, time.Since(cl.started).Milliseconds()
	cl.latest = p
	cl.mu.Unlock()
	if cl.report != nil {
		cl.report(p)
	}
}

// progressLocked is the call's latest progress with its state now.
func (cl *call) progressLocked() command.Progress {
	p := cl.latest
	p.CallID, p.Namespace, p.Tool = cl.cmd.CallID, cl.ns, cl.cmd.ToolName
	p.State, p.ElapsedMS = cl.stateLocked(), cl.elapsedLocked().Milliseconds()
	return p
}

func (cl *call) elapsedLocked() time.Duration {
	if !cl.ended.IsZero() {
		return cl.ended.Sub(cl.started)
	}
	return time.Since(cl.started)
}

func (cl *call) stateLocked() command.State {
	switch {
	case cl.ended.IsZero():
		return command.StateRunning
	case cl.cancelled && cl.result.Status != command.Success:
		return command.StateCancelled
	case cl.result.Status == command.Success:
		return command.StateCompleted
	}
	return command.StateFailed
}

// status is what command_status says of the call. A background call's
// result is part of it once it has ended; a call that was waited for
// returned its result itself.
func (cl *call) status() command.Status {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	p := cl.progressLocked()
	s := command.Status{CallID: p.CallID, Namespace: p.Namespace, Tool: p.Tool, State: p.State, ElapsedMS: p.ElapsedMS,
		Progress: p.Progress, Total: p.Total, Message: p.Message}
	if !cl.ended.IsZero() && cl.detached {
		r := cl.result
		s.Result = &r
	}
	return s
}

// runningNote tells the model what it can do about a command still
// running.
func runningNote(id string) string {
	return fmt.Sprintf("still running in the background; call %s with {\"call_id\": %q} to see how it is doing (add \"wait\": seconds to wait for it to end), "+
		"or %s with {\"call_id\": %q} to stop it", command.CommandStatus, id, command.CancelCommand, id)
}

// detach marks a call as left running in the background and returns the
// Result that says so; detached is false when the call ended meanwhile.
func (cl *call) detach() (_ command.Result, detached bool) {
	cl.mu.Lock()
	if !cl.ended.IsZero() {
		cl.mu.Unlock()
		return command.Result{}, false
	}
	cl.detached = true
	cl.mu.Unlock()
	s := cl.status()
	s.Note = runningNote(s.CallID)
	return command.Running(s), true
}

// Execute runs one command and always returns its Result, carrying the
// command's call id and the namespace that ran it. Nothing is returned as a
// Go error: an unknown tool (with the closest names), arguments that do not
// fit the tool's input schema (naming the argument), a tool of a forbidden
// risk class, a dead server (with its last words), a tool's own error, a
// transport failure, a panic in an in-process tool, a timeout (per tool,
// per server or Options.CallTimeout) and a result over
// Options.MaxResultBytes all come back as failure Results the model can
// read. Progress reports go to the callback set with WithProgress (every
// tool call carries a progressToken).
//
// A command that runs longer than the duration set with
// command.WithDetach is left running in the background: its Result (status
// none, command.Running) says how it is doing, and the built-in commands
// command_status and cancel_command look after it. It keeps the deadline
// ctx had, but no longer ctx's cancellation; its end is reported to the
// progress callback, with its final state. A tool that declares that
// waiting is its work (tools.Annotations.Waits) is never detached: its own
// timeout bounds it.
//
// The built-in commands get_mcp_tools ({namespace?, tool_type?}),
// list_tools ({tool_type?}), get_device_info, describe ({namespace?}),
// get_state, command_status ({call_id, wait?}), cancel_command
// ({call_id}) and, where a display exists, screenshot are answered by the
// client itself, unless the command's namespace names a server that has a
// tool of that name. An empty tool name succeeds with "No action taken.".
//
// A tool is found by the command's namespace and name; without a namespace,
// by name alone when exactly one server offers it. The command's tool_type
// is not checked: routing is by name.
func (c *Client) Execute(ctx context.Context, cmd command.Command) command.Result {
	var r command.Result
	switch {
	case cmd.CallID == "" || command.IsBackgroundControl(cmd.ToolName) || cmd.ToolName == "":
		r = c.execute(ctx, cmd, nil)
	case command.DetachFrom(ctx) > 0 && !c.waits(cmd):
		r = c.background(ctx, cmd, command.DetachFrom(ctx))
	default:
		rctx, cancel := context.WithCancelCause(ctx)
		cl := c.calls.start(cmd, cancel, command.ProgressFrom(ctx))
		r = c.execute(rctx, cmd, cl)
		cancel(nil)
		c.calls.end(cl, r)
	}
	r.CallID = cmd.CallID
	return r
}

// waits reports whether cmd's tool declares that waiting is its work.
func (c *Client) waits(cmd command.Command) bool {
	_, t, _ := c.resolve(cmd)
	return t != nil && t.waits
}

// background runs cmd in a goroutine of its own and waits for it until
// after; then it leaves it running and says so.
func (c *Client) background(ctx context.Context, cmd command.Command, after time.Duration) command.Result {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopDeadline := func() {}
	if dl, ok := ctx.Deadline(); ok {
		rctx, stopDeadline = context.WithDeadline(rctx, dl)
	}
	cl := c.calls.start(cmd, cancel, command.ProgressFrom(ctx))
	// Until it is left in the background, the caller's cancellation is
	// the command's.
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	res := make(chan command.Result, 1)
	go func() {
		defer stopDeadline()
		r := c.execute(rctx, cmd, cl)
		r.CallID = cmd.CallID
		cancel(nil)
		res <- r // before end, which keeps the payload only of a detached call
		c.calls.end(cl, r)
	}()
	timer := time.NewTimer(after)
	defer timer.Stop()
	select {
	case r := <-res:
		stop()
		return r
	case <-timer.C:
	}
	if !stop() {
		return <-res // the caller's cancellation came first
	}
	if r, detached := cl.detach(); detached {
		return r
	}
	return <-res
}

// control answers command_status and cancel_command.
func (c *Client) control(ctx context.Context, cmd command.Command) command.Result {
	id, err := stringParam(cmd.Parameters, "call_id")
	if err == nil && id == "" {
		err = errors.New(`parameter "call_id" is required: the call_id of the command, as its result gave it`)
	}
	if err != nil {
		return command.Failed(cmd.CallID, cmd.ToolName+": "+err.Error())
	}
	cl := c.calls.get(id)
	if cl == nil {
		return command.Failed(cmd.CallID, fmt.Sprintf("%s: no command with call_id %q is known on this device (it never ran here, or ended long ago: the latest %d are kept)",
			cmd.ToolName, id, keptCalls))
	}
	if cmd.ToolName == command.CancelCommand {
		return command.Succeeded(cmd.CallID, c.cancelCall(ctx, cl))
	}
	wait, err := waitParam(cmd.Parameters)
	if err != nil {
		return command.Failed(cmd.CallID, cmd.ToolName+": "+err.Error())
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-cl.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	s := cl.status()
	if s.State == command.StateRunning {
		s.Note = runningNote(id)
	}
	return command.Succeeded(cmd.CallID, s)
}

// cancelCall stops a call and waits (DefaultCancelWait at most) for its
// tool to return.
func (c *Client) cancelCall(ctx context.Context, cl *call) command.Status {
	cl.mu.Lock()
	ended := !cl.ended.IsZero()
	if !ended {
		cl.cancelled = true
	}
	inProcess := cl.inProcess
	cl.mu.Unlock()
	if ended {
		s := cl.status()
		s.Note = "it had already ended; nothing was cancelled"
		return s
	}
	cl.cancel(errCancelledByCommand)
	t := time.NewTimer(DefaultCancelWait)
	defer t.Stop()
	stopped := false
	for _, ch := range []chan struct{}{cl.done, cl.settled} {
		select {
		case <-ch:
			stopped = true
		case <-t.C:
			stopped = false
		case <-ctx.Done():
			stopped = false
		}
		if !stopped {
			break
		}
	}
	s := cl.status()
	if r := cl.resultIfEnded(); r != nil {
		s.Result = r
	}
	switch {
	case !stopped:
		s.Note = fmt.Sprintf("cancelled; the tool had not returned after %s", DefaultCancelWait)
	case inProcess:
		s.Note = "cancelled; the tool has stopped"
	default:
		s.Note = "cancelled; the server was told to stop the tool (MCP notifications/cancelled) but does not confirm that it did"
	}
	return s
}

func (cl *call) resultIfEnded() *command.Result {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.ended.IsZero() {
		return nil
	}
	r := cl.result
	return &r
}

// waitParam reads command_status's wait, in seconds, capped.
func waitParam(params map[string]any) (time.Duration, error) {
	v, ok := params["wait"]
	if !ok || v == nil {
		return 0, nil
	}
	n := number(v)
	if _, isNum := v.(float64); !isNum && n == 0 {
		return 0, fmt.Errorf("parameter \"wait\" must be a number of seconds, got %T", v)
	}
	if n < 0 {
		return 0, fmt.Errorf("parameter \"wait\" must not be negative, got %v", n)
	}
	return min(time.Duration(n*float64(time.Second)), maxStatusWait), nil
}

// cancelAll stops every running call, for Close, and waits up to wait in
// all for them to end. A cancelled tool stops on its own goroutine (os/exec
// kills a shell command's processes from one): without the wait, a process
// that exits after closing its device could leave them running.
func (cs *calls) cancelAll(cause error, wait time.Duration) {
	running := cs.running()
	for _, cl := range running {
		cl.cancel(cause)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for _, cl := range running {
		select {
		case <-cl.done:
		case <-t.C:
			return
		}
		// A result can come before an in-process tool's handler returns;
		// another server's process is stopped with its connection.
		cl.mu.Lock()
		inProcess := cl.inProcess
		cl.mu.Unlock()
		if inProcess {
			select {
			case <-cl.settled:
			case <-t.C:
				return
			}
		}
	}
}
