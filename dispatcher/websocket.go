package dispatcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/clock"
	"github.com/saucerhq/saucer/internal/uuid"
)

// Link carries a WebSocket dispatcher's frames to one device, whichever
// connection the device has at the moment.
type Link interface {
	// Send writes one frame to the device's current connection. It fails
	// at once with ErrNotConnected when the device is not connected; any
	// other error may come after part of the frame was written.
	Send(ctx context.Context, m *aip.ServerMessage) error
}

// ErrNotConnected is what a Link's Send returns (wrapped or not) when the
// device has no connection: nothing was written.
var ErrNotConnected = errors.New("the device is not connected")

// Defaults of WebSocketOptions.
const (
	// DefaultAwayTimeout is how long a device that dropped its connection
	// has to come back.
	DefaultAwayTimeout = time.Minute
	// DefaultCancelGrace is how long a cancelled round waits for the
	// device to report what it ran.
	DefaultCancelGrace = 5 * time.Second
)

// WebSocketOptions configure a WebSocket dispatcher. Zero values mean the
// defaults. Time is read from the clock the calls' contexts carry
// (package internal/clock; the real one unless a test put another there).
type WebSocketOptions struct {
	// CommandTimeout bounds each command; a round of n commands has n times
	// this to come back (DefaultTimeout when zero).
	CommandTimeout time.Duration
	// AwayTimeout is how long a disconnected device has to come back,
	// counted from Disconnected, beyond the reconnection wait it declared
	// (SetReconnectWait): then the rounds waiting for it fail, and so do
	// rounds started later, until it is Connected again.
	AwayTimeout time.Duration
	// CancelGrace bounds the wait for results after cancellation.
	CancelGrace time.Duration
	// NewID makes response ids and call ids; nil means UUIDv4.
	NewID func() string
	// OnGone, when set, is called once the device has been away for
	// AwayFor, before the rounds waiting for it fail: its owner ends
	// what it was doing there.
	OnGone func()
}

// UnknownOutcome is what a command whose state is unknown tells the
// model.
const UnknownOutcome = "the device disconnected while this command may have been running; its outcome is unknown — observe the device before retrying"

// CommandState is one command's lifecycle record (its states are
// command.State's).
type CommandState struct {
	CallID     string        `json:"call_id"`
	ToolName   string        `json:"tool_name"`
	Namespace  string        `json:"namespace,omitempty"`
	ResponseID string        `json:"response_id"`
	State      command.State `json:"state"`
	CreatedAt  time.Time     `json:"created_at"`
	ExpiresAt  time.Time     `json:"expires_at"`
	UpdatedAt  time.Time     `json:"updated_at"`
	QueuedBy   string        `json:"queued_by,omitempty"`
	// ElapsedMS is how long it had run at the last progress report.
	ElapsedMS int64  `json:"elapsed_ms,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Round describes the session a batch of commands belongs to; its values go
// into each command frame.
type Round struct {
	SessionID, TaskName string
	// AgentName is the agent_name of its frames: the agent of the
	// device's client that runs them (UFO's client answers only the
	// agents of its mcp.yaml). Empty: the agent that asks
	// (command.AgentFrom). ProcessName and RootName, when set, pick the
	// app within it.
	AgentName, ProcessName, RootName string
	// QueuedBy says who queued the commands ("api:KEY-ID", "device:ID").
	QueuedBy string
	// TTL is how long after creation a command may still start; zero means
	// the round's deadline.
	TTL time.Duration
	// OnState, when set, is told of every lifecycle change. It must not
	// block.
	OnState func(CommandState)
	// OnProgress, when set, is told of every progress report of the
	// round's commands (the tool's reports, and the end of a command left
	// in the background), as is the callback the round's context carries
	// (command.WithProgress). It must not block.
	OnProgress func(command.Progress)
	// OnFrame, when set, is given each new round's command frame before
	// it is sent (a durable server records it there, so that after a
	// restart it can wait for the same round instead of sending its
	// commands again). An error fails the round's commands unsent.
	OnFrame func(*aip.ServerMessage) error
}

// Errors of Deliver.
var (
	// ErrUnknownRound: no round with that response id is waiting.
	ErrUnknownRound = errors.New("no command round with that response_id is waiting")
	// ErrDuplicateResults: the round already has its results.
	ErrDuplicateResults = errors.New("results for that round were already delivered")
)

// WebSocket dispatches Commands to one remote device over AIP. Each call of
// Execute is a round: one command frame with a fresh response_id and a
// call_id per command, answered by one command_results frame whose
// prev_response_id is that response_id.
//
// It survives reconnections. The owner reports them (Connected,
// Disconnected); rounds wait while their device is away, and when it is
// back their frames are sent again, to a device that answers a frame it
// has seen from its memory (Saucer's client). To one that would run it
// again (UFO's), a frame that may have reached it is not sent again: its
// commands end unknown, and the agents are told to look before they
// retry. A device away for longer than AwayFor fails the rounds
// waiting for it. Results that arrive twice are dropped.
//
// It is safe for concurrent use; one WebSocket serves every session of a
// device.
type WebSocket struct {
	link Link
	opts WebSocketOptions

	mu        sync.Mutex
	connected bool
	// dedupes says the device's connection answers a command frame it
	// has seen from its memory instead of running it again.
	dedupes bool
	// away runs while the device is away; gone is set when it ran out.
	away clock.Timer
	gone bool
	// reconnect is the longest the device's client takes to register
	// again once it can (SetReconnectWait): the away clock runs
	// AwayTimeout plus this.
	reconnect time.Duration
	rounds    map[string]*round // waiting, by response_id
	order     []*round          // waiting, oldest first, for re-sending
	// background are the commands the device left running in the
	// background after their round was answered, by call_id: their
	// progress and their end still arrive.
	background map[string]*backgroundCommand
	finished   map[string]bool // recently answered response ids
	finOrder   []string
}

// round is one command frame waiting for its results.
type round struct {
	frame   *aip.ServerMessage
	info    Round
	clock   clock.Clock
	states  []CommandState
	results *aip.ClientMessage // set once, under mu
	done    chan struct{}      // closed when results are set
	fail    chan ending        // why the round gives up without them
	// sent says the frame may have reached the device (it was written,
	// or sent before a restart of the server). Guarded by mu.
	sent  bool
	ended bool // the round has been settled; no more progress
	// report is the progress callback of the round's context.
	report func(command.Progress)
}

// backgroundCommand is a command left running on the device after its
// round ended.
type backgroundCommand struct {
	r     *round
	state CommandState
	ended bool // its end was reported (perhaps before its round was settled)
}

// ending is how a round ends without results.
type ending struct {
	state command.State
	why   string
}

var _ Dispatcher = (*WebSocket)(nil)

// remembered bounds the set of answered response ids kept to recognise
// duplicates.
const remembered = 4096

// NewWebSocket returns a dispatcher that sends rounds through link. The
// device counts as not connected (and not away: no clock runs) until the
// first Connected; rounds wait for it.
func NewWebSocket(link Link, opts WebSocketOptions) *WebSocket {
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = DefaultTimeout
	}
	if opts.AwayTimeout <= 0 {
		opts.AwayTimeout = DefaultAwayTimeout
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.NewID == nil {
		opts.NewID = uuid.New
	}
	return &WebSocket{link: link, opts: opts, rounds: map[string]*round{}, finished: map[string]bool{},
		background: map[string]*backgroundCommand{}}
}

// Session returns a Dispatcher whose rounds carry r's session values.
func (w *WebSocket) Session(r Round) Dispatcher { return session{w, r} }

type session struct {
	w    *WebSocket
	info Round
}

func (s session) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	return s.w.run(ctx, s.info, cmds)
}

// Execute runs one round without session values; see Session for the
// rules every round follows.
func (w *WebSocket) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	return w.run(ctx, Round{}, cmds)
}

// run sends one round and waits for its results; it always returns one
// Result per command, in order, with the command's call id:
//   - the device's results, matched by call_id (by position when a device
//     leaves call ids out);
//   - when the round's deadline passes (CommandTimeout per command), or
//     the device stays away past AwayTimeout, or the commands expire
//     before they could be sent, or the device came back unable to say
//     what became of a frame it may have run: failure Results that say so;
//   - when ctx is cancelled: the device's results if they come within
//     CancelGrace (the device stops between commands), else cancelled
//     failures.
//
// The frame asks a Saucer device for its commands' progress reports as
// they come (Lifecycle.Progress), which go to Round.OnProgress and to the
// callback ctx carries (command.WithProgress), and to leave a command
// that runs longer than command.DetachFrom(ctx) in the background
// (Lifecycle.DetachAfter): its result then has status none and its state
// stays running until the device reports its end. A UFO device ignores
// both and is waited for.
func (w *WebSocket) run(ctx context.Context, info Round, cmds []command.Command) []command.Result {
	if len(cmds) == 0 {
		return []command.Result{}
	}
	now := clock.From(ctx).Now()
	deadline := w.opts.CommandTimeout * time.Duration(len(cmds))
	ttl := info.TTL
	if ttl <= 0 {
		ttl = deadline
	}
	actions := make([]command.Command, len(cmds))
	frame := &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, Actions: actions,
		SessionID: info.SessionID, TaskName: info.TaskName, AgentName: cmp.Or(info.AgentName, command.AgentFrom(ctx)),
		ProcessName: info.ProcessName, RootName: info.RootName, ResponseID: w.opts.NewID(), Timestamp: aip.Timestamp(now),
		Lifecycle: &aip.Lifecycle{CreatedAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC(), QueuedBy: info.QueuedBy,
			DetachAfter: command.DetachFrom(ctx), Progress: true}}
	for i, c := range cmds {
		if c.CallID == "" {
			c.CallID = w.opts.NewID()
		}
		actions[i] = c
	}
	if info.OnFrame != nil {
		if err := info.OnFrame(frame); err != nil {
			out := make([]command.Result, len(actions))
			for i, c := range actions {
				out[i] = command.Failed(c.CallID, fmt.Sprintf("%s was not sent: the server could not record it: %v", c.ToolName, err))
				out[i].Namespace = c.Namespace
			}
			return out
		}
	}
	return w.wait(ctx, info, frame, deadline, false)
}

// Rejoin waits again for the results of a round sent before, perhaps by
// an earlier process of the server: frame is the recorded command frame,
// re-sent as it was (same response_id and call_ids) to a device that
// answers it from its cache or its journal if it ran it. To a device that
// would run it again it is not sent: its commands end unknown. The
// results follow Execute's rules.
func (w *WebSocket) Rejoin(ctx context.Context, info Round, frame *aip.ServerMessage) []command.Result {
	if len(frame.Actions) == 0 {
		return []command.Result{}
	}
	return w.wait(ctx, info, frame, w.opts.CommandTimeout*time.Duration(len(frame.Actions)), true)
}

// wait registers a round for frame, sends it (sent: it may have reached
// the device before) and waits for its results.
func (w *WebSocket) wait(ctx context.Context, info Round, frame *aip.ServerMessage, deadline time.Duration, sent bool) []command.Result {
	clk := clock.From(ctx)
	now := clk.Now()
	actions := frame.Actions
	r := &round{info: info, frame: frame, clock: clk, done: make(chan struct{}), fail: make(chan ending, 1),
		states: make([]CommandState, len(actions)), sent: sent, report: command.ProgressFrom(ctx)}
	created, expires := now, now.Add(deadline)
	if lc := frame.Lifecycle; lc != nil {
		created, expires = lc.CreatedAt, lc.ExpiresAt
	}
	for i, c := range actions {
		r.states[i] = CommandState{CallID: c.CallID, ToolName: c.ToolName, Namespace: c.Namespace, ResponseID: frame.ResponseID,
			State: command.StatePending, CreatedAt: created, ExpiresAt: expires, UpdatedAt: now, QueuedBy: info.QueuedBy}
		w.notify(r, i)
	}

	w.mu.Lock()
	w.rounds[r.frame.ResponseID] = r
	w.order = append(w.order, r)
	var end *ending
	send := false
	switch {
	case w.gone:
		e := w.goneEnding(r)
		end = &e
	case !w.connected:
		// Connected sends it, or the away clock fails it.
	case r.sent && !w.dedupes:
		end = &ending{command.StateUnknown, UnknownOutcome}
	default:
		send, r.sent = true, true
	}
	w.mu.Unlock()
	defer w.forget(r)
	if end != nil {
		return w.giveUp(r, actions, end.state, end.why)
	}
	if send {
		w.send(ctx, r, sent)
	}

	timer := clk.NewTimer(deadline)
	defer timer.Stop()
	select {
	case <-r.done:
		return w.finish(r, actions, "")
	case e := <-r.fail:
		return w.giveUp(r, actions, e.state, e.why)
	case <-timer.C():
		return w.giveUp(r, actions, command.StateFailed, fmt.Sprintf("no result from the device within the round's deadline (%s for %d command(s))", deadline, len(actions)))
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	grace := clk.NewTimer(w.opts.CancelGrace)
	defer grace.Stop()
	select {
	case <-r.done:
		return w.finish(r, actions, fmt.Sprintf("cancelled: %v", cause))
	case e := <-r.fail:
		return w.giveUp(r, actions, e.state, e.why)
	case <-grace.C():
	}
	return w.giveUp(r, actions, command.StateCancelled, fmt.Sprintf("cancelled (%v); the device did not report whether it ran", cause))
}

// send writes a round's frame, which has been marked sent. A frame the
// link did not write at all (the device is not connected) is marked
// unsent again, unless it had been sent before (wasSent).
func (w *WebSocket) send(ctx context.Context, r *round, wasSent bool) {
	if err := w.link.Send(ctx, r.frame); errors.Is(err, ErrNotConnected) && !wasSent {
		w.mu.Lock()
		r.sent = false
		w.mu.Unlock()
	}
}

// goneEnding is how a round waiting for a device that stayed away too
// long ends. Called with mu held.
func (w *WebSocket) goneEnding(r *round) ending {
	if r.sent {
		return ending{command.StateUnknown, fmt.Sprintf("the device was disconnected for longer than %s while this command may have been running; its outcome is unknown — observe the device before retrying", w.awayForLocked())}
	}
	return ending{command.StateFailed, fmt.Sprintf("the device was disconnected for longer than %s; the command was not sent", w.awayForLocked())}
}

// MaxReconnectWait bounds what SetReconnectWait takes: a device cannot
// make the server wait for it beyond AwayTimeout plus this.
const MaxReconnectWait = 10 * time.Minute

// SetReconnectWait sets the longest the device's client takes to register
// again once the server can be reached, as the client declared it (its
// backoff cap plus its registration timeout; aip.MetaReconnectWithin),
// capped at MaxReconnectWait. The away clock then runs AwayTimeout plus
// that: a client that lost its connection waits up to its backoff cap
// between attempts, so an away clock of AwayTimeout alone could run out
// while the client, still trying, waits for its next attempt (after a
// server restart, the clock starts at the restart while the client may
// have just begun its longest wait). With the extra wait, a device whose
// connection comes back within AwayTimeout of leaving (or of the server's
// restart) is always waited for. It applies from the next Disconnected.
func (w *WebSocket) SetReconnectWait(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reconnect = min(max(d, 0), MaxReconnectWait)
}

// AwayFor is how long the device may be away before the rounds waiting
// for it fail: AwayTimeout plus its reconnection wait.
func (w *WebSocket) AwayFor() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.awayForLocked()
}

func (w *WebSocket) awayForLocked() time.Duration { return w.opts.AwayTimeout + w.reconnect }

// goneAway runs when the away clock runs out: the owner hears of it
// first, then the waiting rounds fail.
func (w *WebSocket) goneAway() {
	w.mu.Lock()
	if w.connected || w.gone {
		w.mu.Unlock()
		return
	}
	w.gone, w.away = true, nil
	var waiting []*round
	for _, r := range w.order {
		if r.results == nil {
			waiting = append(waiting, r)
		}
	}
	// Commands left in the background will not report their end.
	var lost []backgroundCommand
	for id, bg := range w.background {
		bg.state.State, bg.state.Error = command.StateUnknown, fmt.Sprintf("the device was disconnected for longer than %s while this command ran in the background; its outcome is unknown", w.awayForLocked())
		bg.state.UpdatedAt = bg.r.clock.Now()
		lost = append(lost, *bg)
		delete(w.background, id)
	}
	w.mu.Unlock()
	for _, bg := range lost {
		if bg.r.info.OnState != nil {
			bg.r.info.OnState(bg.state)
		}
	}
	if w.opts.OnGone != nil {
		w.opts.OnGone()
	}
	for _, r := range waiting {
		w.mu.Lock()
		e := w.goneEnding(r)
		w.mu.Unlock()
		select {
		case r.fail <- e:
		default:
		}
	}
}

// forget removes a round from the waiting set.
func (w *WebSocket) forget(r *round) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := r.frame.ResponseID
	if w.rounds[id] == r {
		delete(w.rounds, id)
		w.remember(id)
	}
	for i, o := range w.order {
		if o == r {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
}

// remember records an answered (or abandoned) response id. Called with mu
// held.
func (w *WebSocket) remember(id string) {
	if w.finished[id] {
		return
	}
	w.finished[id] = true
	w.finOrder = append(w.finOrder, id)
	if len(w.finOrder) > remembered {
		delete(w.finished, w.finOrder[0])
		w.finOrder = w.finOrder[1:]
	}
}

// finish pairs the delivered results with the commands. cancelNote, when
// set, marks skipped commands as cancelled with that reason.
func (w *WebSocket) finish(r *round, actions []command.Command, cancelNote string) []command.Result {
	w.mu.Lock()
	defer w.notifyAll(r)
	defer w.mu.Unlock()
	r.ended = true
	got := r.results.ActionResults
	// Rounds are small: a map pays only for many results. A call id
	// answered twice counts with its last result either way.
	var byID map[string]command.Result
	if len(got) > 8 {
		byID = make(map[string]command.Result, len(got))
		for _, res := range got {
			if res.CallID != "" {
				byID[res.CallID] = res
			}
		}
	}
	find := func(id string) (command.Result, bool) {
		if byID != nil || id == "" {
			res, ok := byID[id]
			return res, ok
		}
		for j := len(got) - 1; j >= 0; j-- {
			if got[j].CallID == id {
				return got[j], true
			}
		}
		return command.Result{}, false
	}
	now := r.clock.Now()
	out := make([]command.Result, len(actions))
	for i, c := range actions {
		res, ok := find(c.CallID)
		if !ok && i < len(got) && got[i].CallID == "" {
			res, ok = got[i], true // a device that leaves call ids out answers in order
		}
		if !ok {
			res = command.Failed(c.CallID, fmt.Sprintf("the device returned no result for %s (call_id %s)", c.ToolName, c.CallID))
		}
		res.CallID = c.CallID
		if res.Namespace == "" {
			res.Namespace = c.Namespace
		}
		out[i] = res
		st := &r.states[i]
		switch {
		case res.Status == command.Failure:
			st.State, st.Error = command.StateFailed, res.Error
		case res.Status == command.Skipped:
			st.State, st.Error = command.StateCancelled, res.Error
			if cancelNote != "" && st.Error == "" {
				st.Error = cancelNote
			}
		case res.Running(): // left running in the background (Deliver noted it)
			st.State = command.StateRunning
			if bg := w.background[c.CallID]; bg != nil && bg.r == r && bg.ended {
				*st = bg.state // its end came first
				delete(w.background, c.CallID)
			}
		default:
			st.State = command.StateCompleted
		}
		st.UpdatedAt = now
		if bg := w.background[c.CallID]; bg != nil && bg.r == r {
			bg.state = *st
		}
	}
	return out
}

// giveUp ends a round without (all) results: commands that have no result
// get a failure that says why.
func (w *WebSocket) giveUp(r *round, actions []command.Command, state command.State, why string) []command.Result {
	w.mu.Lock()
	defer w.notifyAll(r)
	defer w.mu.Unlock()
	r.ended = true
	now := r.clock.Now()
	out := make([]command.Result, len(actions))
	for i, c := range actions {
		out[i] = command.Failed(c.CallID, fmt.Sprintf("%s: %s", c.ToolName, why))
		out[i].Namespace = c.Namespace
		st := &r.states[i]
		st.State, st.Error, st.UpdatedAt = state, why, now
	}
	return out
}

// notify reports one command's state; callers hold no lock, or own r
// exclusively (before it is registered).
func (w *WebSocket) notify(r *round, i int) {
	if r.info.OnState != nil {
		r.info.OnState(r.states[i])
	}
}

// notifyAll reports every command's final state, after the round ended.
func (w *WebSocket) notifyAll(r *round) {
	if r.info.OnState == nil {
		return
	}
	for i := range r.states {
		r.info.OnState(r.states[i])
	}
}

// Deliver hands a command_results frame to the round it answers (by
// prev_response_id). It returns ErrDuplicateResults for a round already
// answered (the frame is dropped) and ErrUnknownRound when no such round
// is or was waiting.
func (w *WebSocket) Deliver(m *aip.ClientMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.rounds[m.PrevResponseID]
	switch {
	case r == nil && w.finished[m.PrevResponseID]:
		return fmt.Errorf("%w (response_id %s)", ErrDuplicateResults, m.PrevResponseID)
	case r == nil:
		return fmt.Errorf("%w (response_id %s; it may have timed out or never existed)", ErrUnknownRound, m.PrevResponseID)
	case r.results != nil:
		return fmt.Errorf("%w (response_id %s)", ErrDuplicateResults, m.PrevResponseID)
	}
	r.results = m
	// Commands left running in the background are known from now on: the
	// device may report their end before the round is settled.
	for _, res := range m.ActionResults {
		if !res.Running() {
			continue
		}
		for _, st := range r.states {
			if st.CallID == res.CallID {
				st.State = command.StateRunning
				w.background[res.CallID] = &backgroundCommand{r: r, state: st}
			}
		}
	}
	close(r.done)
	return nil
}

// Progress records a device's report that a command is running, and how
// it is doing: the command's state becomes running (OnState), and a
// report that carries the tool's progress, or the end of a command left
// in the background, goes to the round's progress callbacks.
func (w *WebSocket) Progress(p *aip.Progress) {
	w.mu.Lock()
	var st *CommandState
	var r *round
	bg := w.background[p.CallID]
	if bg != nil {
		r, st = bg.r, &bg.state
	} else if r = w.rounds[p.ResponseID]; r != nil && !r.ended {
		for i := range r.states {
			if r.states[i].CallID == p.CallID && !r.states[i].State.Terminal() {
				st = &r.states[i]
				break
			}
		}
	}
	if st == nil || st.State.Terminal() {
		w.mu.Unlock()
		return
	}
	// Only a command left in the background ends by a report; the others
	// end with their round's results.
	state := command.State(p.State)
	if !state.Terminal() || bg == nil {
		state = command.StateRunning
	}
	st.State, st.ElapsedMS, st.UpdatedAt = state, p.ElapsedMS, r.clock.Now()
	if state.Terminal() {
		bg.ended = true
		if r.ended {
			delete(w.background, p.CallID)
		}
	}
	cp := *st
	w.mu.Unlock()
	if r.info.OnState != nil {
		r.info.OnState(cp)
	}
	if p.Progress == 0 && p.Total == 0 && p.Message == "" && !state.Terminal() {
		return // a heartbeat's "still running": nothing new from the tool
	}
	pr := command.Progress{CallID: cp.CallID, Namespace: cp.Namespace, Tool: cp.ToolName, Progress: p.Progress, Total: p.Total,
		Message: p.Message, State: state, ElapsedMS: p.ElapsedMS}
	if r.info.OnProgress != nil {
		r.info.OnProgress(pr)
	}
	if r.report != nil {
		r.report(pr)
	}
}

// Background lists the commands left running in the background on the
// device, as their states.
func (w *WebSocket) Background() []CommandState {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]CommandState, 0, len(w.background))
	for _, bg := range w.background {
		out = append(out, bg.state)
	}
	return out
}

// Disconnected says the device's connection is gone: its away clock
// starts (from the clock ctx carries), unless it is already running.
func (w *WebSocket) Disconnected(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.connected = false
	if w.away == nil && !w.gone {
		w.away = clock.From(ctx).AfterFunc(w.awayForLocked(), w.goneAway)
	}
}

// Connected says the device is (back) on a new connection; dedupes says
// that connection answers a command frame it has seen from its memory
// instead of running it again. The frames of rounds still waiting are
// sent again, oldest first, except a frame whose commands have expired
// (its round fails) and, when the device does not dedupe, a frame that
// may have reached it before (its commands end unknown).
func (w *WebSocket) Connected(ctx context.Context, dedupes bool) {
	type resend struct {
		r       *round
		wasSent bool
	}
	type settle struct {
		r *round
		e ending
	}
	var sends []resend
	var ends []settle
	w.mu.Lock()
	w.connected, w.dedupes, w.gone = true, dedupes, false
	if w.away != nil {
		w.away.Stop()
		w.away = nil
	}
	for _, r := range w.order {
		switch {
		case r.results != nil:
		case r.sent && !dedupes:
			ends = append(ends, settle{r, ending{command.StateUnknown, UnknownOutcome}})
		case r.frame.Lifecycle.Expired(r.clock.Now()):
			ends = append(ends, settle{r, ending{command.StateExpired, fmt.Sprintf("the commands expired at %s while the device was away",
				r.frame.Lifecycle.ExpiresAt.Format(time.RFC3339))}})
		default:
			sends = append(sends, resend{r, r.sent})
			r.sent = true
		}
	}
	w.mu.Unlock()
	for _, s := range ends {
		select {
		case s.r.fail <- s.e:
		default:
		}
	}
	for _, s := range sends {
		w.send(ctx, s.r, s.wasSent)
	}
}

// Gone reports a device that has been away for longer than AwayFor (and
// has not come back).
func (w *WebSocket) Gone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gone
}

// Waiting is the number of rounds waiting for results.
func (w *WebSocket) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rounds)
}
