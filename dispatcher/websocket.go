package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
)

// Link carries a WebSocket dispatcher's frames to one device, whichever
// connection the device has at the moment.
type Link interface {
	// Send writes one frame to the device's current connection. It fails
	// at once when the device is not connected.
	Send(ctx context.Context, m *aip.ServerMessage) error
}

// Defaults of WebSocketOptions.
const (
	// DefaultAwayTimeout is how long a round waits for a device that
	// dropped its connection to come back.
	DefaultAwayTimeout = time.Minute
	// DefaultCancelGrace is how long a cancelled round waits for the
	// device to report what it ran.
	DefaultCancelGrace = 5 * time.Second
)

// WebSocketOptions configure a WebSocket dispatcher. Zero values mean the
// defaults.
type WebSocketOptions struct {
	// CommandTimeout bounds each command; a round of n commands has n times
	// this to come back (DefaultTimeout when zero).
	CommandTimeout time.Duration
	// AwayTimeout bounds the wait for a disconnected device.
	AwayTimeout time.Duration
	// CancelGrace bounds the wait for results after cancellation.
	CancelGrace time.Duration
	// NewID makes response ids and call ids; nil means UUIDv4.
	NewID func() string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// State is a command's place in its lifecycle.
type State string

// The lifecycle: pending (queued, sent or not), running (the device said it
// started), then one of completed, failed, cancelled or expired (its time
// to start passed while it waited for its device).
const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
	StateExpired   State = "expired"
)

// Terminal reports whether the state is final.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled || s == StateExpired
}

// CommandState is one command's lifecycle record.
type CommandState struct {
	CallID     string    `json:"call_id"`
	ToolName   string    `json:"tool_name"`
	Namespace  string    `json:"namespace,omitempty"`
	ResponseID string    `json:"response_id"`
	State      State     `json:"state"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	QueuedBy   string    `json:"queued_by,omitempty"`
	// ElapsedMS is how long it had run at the last progress report.
	ElapsedMS int64  `json:"elapsed_ms,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Round describes the session a batch of commands belongs to; its values go
// into each command frame.
type Round struct {
	SessionID, TaskName, AgentName string
	// QueuedBy says who queued the commands ("api:KEY-ID", "device:ID").
	QueuedBy string
	// TTL is how long after creation a command may still start; zero means
	// the round's deadline.
	TTL time.Duration
	// OnState, when set, is told of every lifecycle change. It must not
	// block.
	OnState func(CommandState)
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
// It survives reconnections. The owner reports them (Disconnected,
// Connected); a round keeps waiting while its device is away, for at most
// AwayTimeout, and its frame is sent again when the device is back (a
// device that already ran it answers again from its cache instead of
// running it twice). Results that arrive twice are dropped.
//
// It is safe for concurrent use; one WebSocket serves every session of a
// device.
type WebSocket struct {
	link Link
	opts WebSocketOptions

	mu        sync.Mutex
	connected bool
	rounds    map[string]*round // waiting, by response_id
	order     []*round          // waiting, oldest first, for re-sending
	finished  map[string]bool   // recently answered response ids
	finOrder  []string
}

// round is one command frame waiting for its results.
type round struct {
	frame   *aip.ServerMessage
	info    Round
	states  []CommandState
	results *aip.ClientMessage // set once, under mu
	done    chan struct{}      // closed when results are set
	fail    chan string        // timers report why the round gives up
	away    *time.Timer
	ended   bool // the round has been settled; no more progress
}

var _ Dispatcher = (*WebSocket)(nil)

// expiredPrefix starts the reason of a round whose commands expired.
const expiredPrefix = "the commands expired"

// remembered bounds the set of answered response ids kept to recognise
// duplicates.
const remembered = 4096

// NewWebSocket returns a dispatcher that sends rounds through link. The
// device counts as connected from the start; call Disconnected if not.
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
		opts.NewID = NewUUID
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &WebSocket{link: link, opts: opts, connected: true, rounds: map[string]*round{}, finished: map[string]bool{}}
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
//     before they could be sent: failure Results that say so;
//   - when ctx is cancelled: the device's results if they come within
//     CancelGrace (the device stops between commands), else cancelled
//     failures.
func (w *WebSocket) run(ctx context.Context, info Round, cmds []command.Command) []command.Result {
	if len(cmds) == 0 {
		return []command.Result{}
	}
	now := w.opts.Now()
	deadline := w.opts.CommandTimeout * time.Duration(len(cmds))
	ttl := info.TTL
	if ttl <= 0 {
		ttl = deadline
	}
	actions := make([]command.Command, len(cmds))
	frame := &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, Actions: actions,
		SessionID: info.SessionID, TaskName: info.TaskName, AgentName: info.AgentName,
		ResponseID: w.opts.NewID(), Timestamp: aip.Timestamp(now),
		Lifecycle: &aip.Lifecycle{CreatedAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC(), QueuedBy: info.QueuedBy}}
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
	return w.wait(ctx, info, frame, deadline)
}

// Rejoin waits again for the results of a round sent before, perhaps by
// an earlier process of the server: frame is the recorded command frame,
// re-sent as it was (same response_id and call_ids). A device that already
// ran it answers from its cache or its journal instead of running it
// again. The results follow Execute's rules.
func (w *WebSocket) Rejoin(ctx context.Context, info Round, frame *aip.ServerMessage) []command.Result {
	if len(frame.Actions) == 0 {
		return []command.Result{}
	}
	return w.wait(ctx, info, frame, w.opts.CommandTimeout*time.Duration(len(frame.Actions)))
}

// wait registers a round for frame, sends it and waits for its results.
func (w *WebSocket) wait(ctx context.Context, info Round, frame *aip.ServerMessage, deadline time.Duration) []command.Result {
	now := w.opts.Now()
	actions := frame.Actions
	r := &round{info: info, frame: frame, done: make(chan struct{}), fail: make(chan string, 1), states: make([]CommandState, len(actions))}
	created, expires := now, now.Add(deadline)
	if lc := frame.Lifecycle; lc != nil {
		created, expires = lc.CreatedAt, lc.ExpiresAt
	}
	for i, c := range actions {
		r.states[i] = CommandState{CallID: c.CallID, ToolName: c.ToolName, Namespace: c.Namespace, ResponseID: frame.ResponseID,
			State: StatePending, CreatedAt: created, ExpiresAt: expires, UpdatedAt: now, QueuedBy: info.QueuedBy}
		w.notify(r, i)
	}

	w.mu.Lock()
	w.rounds[r.frame.ResponseID] = r
	w.order = append(w.order, r)
	connected := w.connected
	if !connected {
		w.startAway(r)
	}
	w.mu.Unlock()
	defer w.forget(r)

	if connected {
		if err := w.link.Send(ctx, r.frame); err != nil {
			// The connection broke under us: wait for the device to come
			// back, as if it had been away from the start.
			w.mu.Lock()
			if r.results == nil && r.away == nil {
				w.startAway(r)
			}
			w.mu.Unlock()
		}
	}

	timer := time.NewTimer(deadline)
	defer timer.Stop()
	select {
	case <-r.done:
		return w.finish(r, actions, "")
	case why := <-r.fail:
		state := StateFailed
		if strings.HasPrefix(why, expiredPrefix) {
			state = StateExpired
		}
		return w.giveUp(r, actions, state, why)
	case <-timer.C:
		return w.giveUp(r, actions, StateFailed, fmt.Sprintf("no result from the device within the round's deadline (%s for %d command(s))", deadline, len(actions)))
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	grace := time.NewTimer(w.opts.CancelGrace)
	defer grace.Stop()
	select {
	case <-r.done:
		return w.finish(r, actions, fmt.Sprintf("cancelled: %v", cause))
	case <-grace.C:
	case <-r.fail:
	}
	return w.giveUp(r, actions, StateCancelled, fmt.Sprintf("cancelled (%v); the device did not report whether it ran", cause))
}

// startAway starts the clock of a round whose device is away. Called with
// mu held.
func (w *WebSocket) startAway(r *round) {
	if r.away != nil {
		return
	}
	r.away = time.AfterFunc(w.opts.AwayTimeout, func() {
		select {
		case r.fail <- fmt.Sprintf("the device was disconnected for longer than %s and did not return the results", w.opts.AwayTimeout):
		default:
		}
	})
}

// forget removes a round from the waiting set.
func (w *WebSocket) forget(r *round) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.away != nil {
		r.away.Stop()
	}
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
	now := w.opts.Now()
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
		switch res.Status {
		case command.Failure:
			st.State, st.Error = StateFailed, res.Error
		case command.Skipped:
			st.State, st.Error = StateCancelled, res.Error
			if cancelNote != "" && st.Error == "" {
				st.Error = cancelNote
			}
		default:
			st.State = StateCompleted
		}
		st.UpdatedAt = now
	}
	return out
}

// giveUp ends a round without (all) results: commands that have no result
// get a failure that says why.
func (w *WebSocket) giveUp(r *round, actions []command.Command, state State, why string) []command.Result {
	w.mu.Lock()
	defer w.notifyAll(r)
	defer w.mu.Unlock()
	r.ended = true
	out := make([]command.Result, len(actions))
	for i, c := range actions {
		out[i] = command.Failed(c.CallID, fmt.Sprintf("%s: %s", c.ToolName, why))
		out[i].Namespace = c.Namespace
		st := &r.states[i]
		st.State, st.Error, st.UpdatedAt = state, why, w.opts.Now()
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
	close(r.done)
	return nil
}

// Progress records a device's report that a command is running.
func (w *WebSocket) Progress(p *aip.Progress) {
	w.mu.Lock()
	r := w.rounds[p.ResponseID]
	if r == nil || r.ended {
		w.mu.Unlock()
		return
	}
	for i := range r.states {
		st := &r.states[i]
		if st.CallID == p.CallID && !st.State.Terminal() {
			st.State, st.ElapsedMS, st.UpdatedAt = StateRunning, p.ElapsedMS, w.opts.Now()
			cp := *st
			w.mu.Unlock()
			if r.info.OnState != nil {
				r.info.OnState(cp)
			}
			return
		}
	}
	w.mu.Unlock()
}

// Disconnected says the device's connection is gone: waiting rounds start
// their AwayTimeout clocks.
func (w *WebSocket) Disconnected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.connected = false
	for _, r := range w.order {
		if r.results == nil {
			w.startAway(r)
		}
	}
}

// Connected says the device is (back) on a new connection: the frames of
// rounds still waiting are sent again, oldest first. A frame whose commands
// have expired is not sent; its round fails.
func (w *WebSocket) Connected(ctx context.Context) {
	w.mu.Lock()
	w.connected = true
	var resend []*round
	for _, r := range w.order {
		if r.results != nil {
			continue
		}
		if r.away != nil {
			r.away.Stop()
			r.away = nil
		}
		resend = append(resend, r)
	}
	w.mu.Unlock()
	for _, r := range resend {
		if r.frame.Lifecycle.Expired(w.opts.Now()) {
			select {
			case r.fail <- fmt.Sprintf("%s at %s while the device was away", expiredPrefix, r.frame.Lifecycle.ExpiresAt.Format(time.RFC3339)):
			default:
			}
			continue
		}
		if err := w.link.Send(ctx, r.frame); err != nil {
			w.mu.Lock()
			if r.results == nil {
				w.startAway(r)
			}
			w.mu.Unlock()
		}
	}
}

// Waiting is the number of rounds waiting for results.
func (w *WebSocket) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rounds)
}
