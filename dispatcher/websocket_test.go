package dispatcher_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/clock"
)

// memLink is a device link in memory: frames go to a channel; up says
// whether sending works.
type memLink struct {
	mu     sync.Mutex
	up     bool
	frames chan *aip.ServerMessage
}

func newLink() *memLink { return &memLink{up: true, frames: make(chan *aip.ServerMessage, 16)} }

func (l *memLink) Send(ctx context.Context, m *aip.ServerMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.up {
		return errors.New("not connected")
	}
	l.frames <- m
	return nil
}

func (l *memLink) setUp(up bool) { l.mu.Lock(); l.up = up; l.mu.Unlock() }

func (l *memLink) next(t *testing.T) *aip.ServerMessage {
	t.Helper()
	select {
	case m := <-l.frames:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no frame sent")
		return nil
	}
}

// answer builds the device's results for a frame: success for each action,
// in reverse order (correlation must be by call_id, not position).
func answer(m *aip.ServerMessage) *aip.ClientMessage {
	res := make([]command.Result, len(m.Actions))
	for i, a := range m.Actions {
		res[len(res)-1-i] = command.Succeeded(a.CallID, "ran "+a.ToolName)
	}
	return &aip.ClientMessage{Type: aip.TypeCommandResults, Status: m.Status, PrevResponseID: m.ResponseID, ActionResults: res}
}

func cmds(names ...string) []command.Command {
	var out []command.Command
	for _, n := range names {
		out = append(out, command.Command{ToolName: n, ToolType: command.Action})
	}
	return out
}

func goExecute(ctx context.Context, d dispatcher.Dispatcher, c []command.Command) chan []command.Result {
	ch := make(chan []command.Result, 1)
	go func() { ch <- d.Execute(ctx, c) }()
	return ch
}

// connected is a dispatcher over link whose device is connected, and
// answers re-sent frames from its memory (as Saucer's client does).
func connected(link dispatcher.Link, opts dispatcher.WebSocketOptions) *dispatcher.WebSocket {
	w := dispatcher.NewWebSocket(link, opts)
	w.Connected(context.Background(), true)
	return w
}

// fakeClock is a context carrying a fake clock, and the clock.
func fakeClock() (context.Context, *clock.Fake) {
	c := clock.NewFake(time.Date(2026, 11, 22, 2, 23, 36, 0, time.UTC))
	return clock.With(context.Background(), c), c
}

// armed waits until n timers of c are armed: the code under test waits
// on its clock.
func armed(t *testing.T, c *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitTimers(ctx, n); err != nil {
		t.Fatalf("%d timer(s) never armed: %v", n, err)
	}
}

// lastStates keeps the last state each command reached, by a key of its
// CommandState (the tool's name or the call's id), as a round's OnState
// tells them.
type lastStates struct {
	key  func(dispatcher.CommandState) string
	mu   sync.Mutex
	last map[string]command.State
}

func byTool(cs dispatcher.CommandState) string { return cs.ToolName }
func byCall(cs dispatcher.CommandState) string { return cs.CallID }

func (l *lastStates) onState(cs dispatcher.CommandState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]command.State{}
	}
	l.last[l.key(cs)] = cs.State
}

// check fails the test unless each key of want last reached its state.
func (l *lastStates) check(t *testing.T, want map[string]command.State) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, st := range want {
		if l.last[k] != st {
			t.Errorf("states %v", l.last)
			return
		}
	}
}

func wait(t *testing.T, ch chan []command.Result) []command.Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("Execute did not return")
		return nil
	}
}

// TestWebSocketCorrelation: a round is one command frame with a fresh
// response_id, a call_id per command and the session values; results come
// back matched by call_id; the lifecycle goes pending → completed.
func TestWebSocketCorrelation(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{})
	var mu sync.Mutex
	var states []dispatcher.CommandState
	d := w.Session(dispatcher.Round{SessionID: "s1", TaskName: "t", QueuedBy: "api-key:ab", TTL: time.Minute,
		OnState: func(cs dispatcher.CommandState) { mu.Lock(); states = append(states, cs); mu.Unlock() }})
	given := cmds("a", "b", "c")
	given[1].CallID = "mine"
	ch := goExecute(context.Background(), d, given)
	m := link.next(t)
	if m.Type != aip.TypeCommand || m.Status != aip.StatusContinue || m.SessionID != "s1" || m.TaskName != "t" || m.ResponseID == "" {
		t.Fatalf("frame %v", m)
	}
	if m.Lifecycle == nil || m.Lifecycle.QueuedBy != "api-key:ab" || m.Lifecycle.ExpiresAt.Sub(m.Lifecycle.CreatedAt) != time.Minute {
		t.Errorf("lifecycle %+v", m.Lifecycle)
	}
	if m.Actions[1].CallID != "mine" || m.Actions[0].CallID == "" || m.Actions[0].CallID == m.Actions[2].CallID {
		t.Errorf("call ids %q %q %q", m.Actions[0].CallID, m.Actions[1].CallID, m.Actions[2].CallID)
	}
	if given[0].CallID != "" {
		t.Error("the caller's slice was modified")
	}
	w.Progress(&aip.Progress{ResponseID: m.ResponseID, CallID: "mine", State: "running"})
	if err := w.Deliver(answer(m)); err != nil {
		t.Fatal(err)
	}
	res := wait(t, ch)
	for i, r := range res {
		if r.CallID != m.Actions[i].CallID || string(r.Result) != `"ran `+m.Actions[i].ToolName+`"` {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if err := w.Deliver(answer(m)); !errors.Is(err, dispatcher.ErrDuplicateResults) {
		t.Errorf("second delivery: %v, want ErrDuplicateResults", err)
	}
	if err := w.Deliver(&aip.ClientMessage{PrevResponseID: "nope"}); !errors.Is(err, dispatcher.ErrUnknownRound) {
		t.Errorf("unknown round: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[command.State]int{}
	for _, s := range states {
		seen[s.State]++
	}
	if seen[command.StatePending] != 3 || seen[command.StateRunning] != 1 || seen[command.StateCompleted] != 3 {
		t.Errorf("lifecycle states %v", seen)
	}
}

// TestWebSocketMissingAndPositional: a result missing from the reply
// becomes a failure; a device that leaves call ids out is matched by
// position; failure and skipped map to failed and cancelled.
func TestWebSocketMissingAndPositional(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{})
	var final []dispatcher.CommandState
	var mu sync.Mutex
	d := w.Session(dispatcher.Round{OnState: func(cs dispatcher.CommandState) {
		if cs.State.Terminal() {
			mu.Lock()
			final = append(final, cs)
			mu.Unlock()
		}
	}})
	ch := goExecute(context.Background(), d, cmds("a", "b", "c"))
	m := link.next(t)
	w.Deliver(&aip.ClientMessage{PrevResponseID: m.ResponseID, ActionResults: []command.Result{
		{Status: command.Failure, Error: "boom"}, {Status: command.Skipped, Error: "skipped"}}})
	res := wait(t, ch)
	if res[0].Status != command.Failure || res[0].CallID != m.Actions[0].CallID || res[1].Status != command.Skipped {
		t.Errorf("positional results %+v", res[:2])
	}
	if res[2].Status != command.Failure || !strings.Contains(res[2].Error, "no result") {
		t.Errorf("missing result %+v", res[2])
	}
	mu.Lock()
	defer mu.Unlock()
	want := []command.State{command.StateFailed, command.StateCancelled, command.StateFailed}
	for i, cs := range final {
		if cs.State != want[i] {
			t.Errorf("command %d ended %s, want %s", i, cs.State, want[i])
		}
	}
}

// TestWebSocketDeadline: a device that never answers fails the round at
// its deadline (CommandTimeout per command), never hangs.
func TestWebSocketDeadline(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{CommandTimeout: 30 * time.Second})
	ctx, clk := fakeClock()
	ch := goExecute(ctx, w, cmds("a", "b"))
	link.next(t)
	armed(t, clk, 1)
	clk.Advance(59 * time.Second)
	select {
	case res := <-ch:
		t.Fatalf("the round gave up before its deadline of 60s for 2 commands: %+v", res)
	default:
	}
	clk.Advance(time.Second)
	for _, r := range wait(t, ch) {
		if r.Status != command.Failure || !strings.Contains(r.Error, "deadline (1m0s for 2 command(s))") {
			t.Errorf("result %+v", r)
		}
	}
	if w.Waiting() != 0 {
		t.Errorf("%d rounds still waiting", w.Waiting())
	}
}

// TestWebSocketReconnect: while the device is away the round waits; when
// it is back the frame goes out again (same response_id) to a device that
// answers a frame it has seen from its memory; the device's results are
// taken once, duplicates dropped.
func TestWebSocketReconnect(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{AwayTimeout: 5 * time.Second})
	ch := goExecute(context.Background(), w, cmds("a"))
	first := link.next(t)
	link.setUp(false)
	w.Disconnected(context.Background())
	link.setUp(true)
	w.Connected(context.Background(), true)
	again := link.next(t)
	if again.ResponseID != first.ResponseID || again.Actions[0].CallID != first.Actions[0].CallID {
		t.Fatalf("re-sent frame differs: %v vs %v", again, first)
	}
	if err := w.Deliver(answer(first)); err != nil {
		t.Fatal(err)
	}
	if err := w.Deliver(answer(again)); !errors.Is(err, dispatcher.ErrDuplicateResults) {
		t.Errorf("duplicate: %v", err)
	}
	if res := wait(t, ch); !res[0].OK() {
		t.Errorf("result %+v", res[0])
	}
}

// TestWebSocketNoResendToARunAgainDevice: a device that would run a
// command frame it gets again (UFO's client) is not sent one that may have
// reached it: its commands end unknown, and the agents are told to look
// before they retry. A round it has not been sent goes out when it is
// back; a round sent before the server restarted (Rejoin) is not sent.
func TestWebSocketNoResendToARunAgainDevice(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{AwayTimeout: time.Minute})
	ctx, clk := fakeClock()
	states := &lastStates{key: byTool}
	d := w.Session(dispatcher.Round{OnState: states.onState})
	sent := goExecute(ctx, d, cmds("ran-maybe"))
	link.next(t)
	link.setUp(false)
	w.Disconnected(ctx)
	unsent := goExecute(ctx, d, cmds("not-yet"))
	armed(t, clk, 3) // both rounds' deadlines and the away clock: both wait
	link.setUp(true)
	w.Connected(ctx, false)
	res := wait(t, sent)
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, dispatcher.UnknownOutcome) {
		t.Errorf("a frame that may have run: %+v", res[0])
	}
	m := link.next(t)
	if m.Actions[0].ToolName != "not-yet" {
		t.Fatalf("sent again after the reconnection: %v", m)
	}
	w.Deliver(answer(m))
	if res := wait(t, unsent); !res[0].OK() {
		t.Errorf("the round that had not gone out: %+v", res[0])
	}
	select {
	case m := <-link.frames:
		t.Errorf("a frame that may have run was sent again: %v", m)
	default:
	}
	states.check(t, map[string]command.State{"ran-maybe": command.StateUnknown, "not-yet": command.StateCompleted})

	rec := &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, ResponseID: "before-restart",
		Actions: []command.Command{{ToolName: "journaled", CallID: "c1"}}}
	res = w.Rejoin(context.Background(), dispatcher.Round{}, rec)
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "its outcome is unknown") {
		t.Errorf("a round sent before the restart: %+v", res[0])
	}
	select {
	case m := <-link.frames:
		t.Errorf("a round sent before the restart was sent again: %v", m)
	default:
	}
	w.Connected(context.Background(), true)
	go w.Rejoin(context.Background(), dispatcher.Round{}, rec)
	if m := link.next(t); m.ResponseID != "before-restart" {
		t.Errorf("to a device that answers from memory, the recorded frame goes again: %v", m)
	}
}

// TestWebSocketAway: a device away for AwayTimeout, counted from
// Disconnected, fails the rounds waiting for it, after telling OnGone; a
// round that went out ends unknown, one that never did failed. A round
// started while it is away gets no more time of its own; one started
// after fails at once. Coming back resets it.
func TestWebSocketAway(t *testing.T) {
	link := newLink()
	gone := make(chan struct{})
	w := connected(link, dispatcher.WebSocketOptions{AwayTimeout: 40 * time.Second, OnGone: func() { close(gone) }})
	ctx, clk := fakeClock()
	states := &lastStates{key: byTool}
	d := w.Session(dispatcher.Round{OnState: states.onState})
	out := goExecute(ctx, d, cmds("out"))
	link.next(t)
	link.setUp(false)
	w.Disconnected(ctx)
	armed(t, clk, 2) // the round's deadline and the away clock
	clk.Advance(30 * time.Second)
	later := goExecute(ctx, d, cmds("later"))
	armed(t, clk, 3)
	clk.Advance(10 * time.Second)
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("OnGone was not called")
	}
	res := wait(t, out)
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "disconnected for longer than 40s") ||
		!strings.Contains(res[0].Error, "its outcome is unknown") {
		t.Errorf("the round that went out: %+v", res[0])
	}
	res = wait(t, later)
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "disconnected for longer than 40s; the command was not sent") {
		t.Errorf("the round started while away: %+v", res[0])
	}
	if !w.Gone() {
		t.Error("not gone")
	}
	res = w.Execute(ctx, cmds("after"))
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "the command was not sent") {
		t.Errorf("a round started after: %+v", res[0])
	}
	states.check(t, map[string]command.State{"out": command.StateUnknown, "later": command.StateFailed})
	link.setUp(true)
	w.Connected(ctx, true)
	if w.Gone() {
		t.Error("still gone after coming back")
	}
	ch := goExecute(ctx, w, cmds("back"))
	w.Deliver(answer(link.next(t)))
	if res := wait(t, ch); !res[0].OK() {
		t.Errorf("after coming back: %+v", res[0])
	}
}

// TestWebSocketAwayCoversTheReconnectWait: the away clock runs
// AwayTimeout plus the reconnection wait the device declared, so that a
// device whose client waits out its backoff is not given up on before it
// could have come back; the wait is capped.
func TestWebSocketAwayCoversTheReconnectWait(t *testing.T) {
	link := newLink()
	gone := make(chan struct{})
	w := connected(link, dispatcher.WebSocketOptions{AwayTimeout: 40 * time.Second, OnGone: func() { close(gone) }})
	w.SetReconnectWait(45 * time.Second)
	if got := w.AwayFor(); got != 85*time.Second {
		t.Fatalf("AwayFor %s, want 1m25s", got)
	}
	ctx, clk := fakeClock()
	out := goExecute(ctx, w, cmds("out"))
	link.next(t)
	link.setUp(false)
	w.Disconnected(ctx)
	armed(t, clk, 2) // the round's deadline and the away clock
	clk.Advance(84 * time.Second)
	if w.Gone() {
		t.Fatal("given up on after 84s: AwayTimeout alone was counted, not the device's reconnection wait")
	}
	clk.Advance(time.Second)
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("OnGone was not called at 1m25s")
	}
	if res := wait(t, out); res[0].Status != command.Failure || !strings.Contains(res[0].Error, "disconnected for longer than 1m25s") {
		t.Errorf("the round that went out: %+v", res[0])
	}
	w.SetReconnectWait(time.Hour)
	if got, want := w.AwayFor(), 40*time.Second+dispatcher.MaxReconnectWait; got != want {
		t.Errorf("a declared wait of an hour: AwayFor %s, want %s (capped)", got, want)
	}
	w.SetReconnectWait(-time.Second)
	if got := w.AwayFor(); got != 40*time.Second {
		t.Errorf("a negative wait: AwayFor %s, want 40s", got)
	}
}

// TestWebSocketExpired: commands that expire while the device is away are
// not sent when it comes back.
func TestWebSocketExpired(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{AwayTimeout: 5 * time.Minute})
	ctx, clk := fakeClock()
	ch := goExecute(ctx, w.Session(dispatcher.Round{TTL: 20 * time.Second}), cmds("a"))
	link.next(t)
	w.Disconnected(ctx)
	clk.Advance(21 * time.Second)
	w.Connected(ctx, true)
	res := wait(t, ch)
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "expired") {
		t.Errorf("result %+v", res[0])
	}
	select {
	case m := <-link.frames:
		t.Errorf("an expired frame was sent again: %v", m)
	default:
	}
}

// TestWebSocketCancel: on cancellation the round waits CancelGrace for the
// device's report; without one the commands end cancelled.
func TestWebSocketCancel(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{CommandTimeout: time.Minute, CancelGrace: 30 * time.Second})
	states := &lastStates{key: byCall}
	d := w.Session(dispatcher.Round{OnState: states.onState})

	base, clk := fakeClock()
	ctx, cancel := context.WithCancelCause(base)
	ch := goExecute(ctx, d, cmds("a", "b"))
	m := link.next(t)
	armed(t, clk, 1) // the round's deadline
	cancel(errors.New("user said stop"))
	armed(t, clk, 2) // ... and the grace: the round has seen the cancellation
	// The device finished a, skipped b, and says so within the grace.
	w.Deliver(&aip.ClientMessage{PrevResponseID: m.ResponseID, ActionResults: []command.Result{
		command.Succeeded(m.Actions[0].CallID, "ok"), command.SkippedResult(m.Actions[1].CallID, "cancelled before it ran")}})
	res := wait(t, ch)
	if !res[0].OK() || res[1].Status != command.Skipped {
		t.Errorf("results %+v", res)
	}
	states.check(t, map[string]command.State{m.Actions[0].CallID: command.StateCompleted, m.Actions[1].CallID: command.StateCancelled})

	base, clk = fakeClock()
	ctx2, cancel2 := context.WithCancelCause(base)
	ch = goExecute(ctx2, d, cmds("c"))
	link.next(t)
	armed(t, clk, 1)
	cancel2(errors.New("user said stop"))
	armed(t, clk, 2)
	clk.Advance(30 * time.Second)
	res = wait(t, ch)
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "user said stop") {
		t.Errorf("unreported cancel %+v", res[0])
	}
}
