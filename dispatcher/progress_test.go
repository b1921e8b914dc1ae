package dispatcher_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
)

// progressLog collects what a round is told.
type progressLog struct {
	mu       sync.Mutex
	states   map[string][]command.State
	reports  []command.Progress
	fromCtx  []command.Progress
	reported chan struct{}
}

func newProgressLog() *progressLog {
	return &progressLog{states: map[string][]command.State{}, reported: make(chan struct{}, 16)}
}

func (l *progressLog) onState(cs dispatcher.CommandState) {
	l.mu.Lock()
	l.states[cs.CallID] = append(l.states[cs.CallID], cs.State)
	l.mu.Unlock()
}

func (l *progressLog) onProgress(p command.Progress) {
	l.mu.Lock()
	l.reports = append(l.reports, p)
	l.mu.Unlock()
	l.reported <- struct{}{}
}

func (l *progressLog) last(id string) command.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.states[id]
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// A round asks the device for its commands' progress and, when its
// context says so, to leave a long command in the background. The tool's
// reports reach Round.OnProgress and the context's callback, named with
// the command's tool; a bare heartbeat only says the command runs. A
// command left in the background stays running after its round, until
// the device reports its end.
func TestWebSocketProgressAndBackground(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{})
	log := newProgressLog()
	d := w.Session(dispatcher.Round{SessionID: "s", OnState: log.onState, OnProgress: log.onProgress})
	ctx := command.WithDetach(context.Background(), 2*time.Second)
	ctx = command.WithProgress(ctx, func(p command.Progress) {
		log.mu.Lock()
		log.fromCtx = append(log.fromCtx, p)
		log.mu.Unlock()
	})
	ch := goExecute(ctx, d, []command.Command{{ToolName: "build", Namespace: "shell", ToolType: command.Action}, {ToolName: "after", ToolType: command.Action}})
	m := link.next(t)
	if l := m.Lifecycle; l == nil || !l.Progress || l.DetachAfter != 2*time.Second {
		t.Fatalf("the frame's lifecycle asks for %+v", m.Lifecycle)
	}
	id := m.Actions[0].CallID

	w.Progress(&aip.Progress{ResponseID: m.ResponseID, CallID: id, State: "running", ElapsedMS: 100})
	if got := log.last(id); got != command.StateRunning {
		t.Errorf("a heartbeat's report: state %q", got)
	}
	w.Progress(&aip.Progress{ResponseID: m.ResponseID, CallID: id, State: "running", ElapsedMS: 300, Progress: 2, Message: "compiling a\ncompiling b"})
	<-log.reported
	log.mu.Lock()
	if len(log.reports) != 1 || log.reports[0] != (command.Progress{CallID: id, Namespace: "shell", Tool: "build", Progress: 2,
		Message: "compiling a\ncompiling b", State: command.StateRunning, ElapsedMS: 300}) {
		t.Errorf("reports %+v", log.reports)
	}
	if len(log.fromCtx) != 1 || log.fromCtx[0] != log.reports[0] {
		t.Errorf("the context's callback got %+v", log.fromCtx)
	}
	log.mu.Unlock()

	// The device leaves it in the background and skips the next.
	running := command.Running(command.Status{CallID: id, Tool: "build", State: command.StateRunning, ElapsedMS: 2000})
	w.Deliver(&aip.ClientMessage{PrevResponseID: m.ResponseID, ActionResults: []command.Result{running,
		command.SkippedResult(m.Actions[1].CallID, "skipped: an earlier command is still running in the background")}})
	res := wait(t, ch)
	if !res[0].Running() || res[1].Status != command.Skipped {
		t.Fatalf("results %+v", res)
	}
	if got := log.last(id); got != command.StateRunning {
		t.Errorf("after its round the background command is %q", got)
	}
	if bg := w.Background(); len(bg) != 1 || bg[0].CallID != id {
		t.Errorf("background %+v", bg)
	}

	// Its progress still comes, and then its end.
	w.Progress(&aip.Progress{ResponseID: m.ResponseID, CallID: id, State: "running", ElapsedMS: 2500, Progress: 3, Message: "linking"})
	<-log.reported
	w.Progress(&aip.Progress{ResponseID: m.ResponseID, CallID: id, State: "completed", ElapsedMS: 3000, Progress: 3, Message: "linking"})
	<-log.reported
	if got := log.last(id); got != command.StateCompleted {
		t.Errorf("after its end report: %q", got)
	}
	log.mu.Lock()
	if n := len(log.reports); n != 3 || log.reports[n-1].State != command.StateCompleted {
		t.Errorf("reports %+v", log.reports)
	}
	log.mu.Unlock()
	if bg := w.Background(); len(bg) != 0 {
		t.Errorf("still in the background: %+v", bg)
	}
	// Reports after the end change nothing.
	w.Progress(&aip.Progress{ResponseID: m.ResponseID, CallID: id, State: "running", Progress: 4})
	if got := log.last(id); got != command.StateCompleted {
		t.Errorf("a late report made it %q", got)
	}
}

// A UFO device may answer status none for a command that has ended: the
// command is completed, not taken for one left in the background.
func TestWebSocketUFONoneResultCompletes(t *testing.T) {
	link := newLink()
	w := connected(link, dispatcher.WebSocketOptions{})
	log := newProgressLog()
	d := w.Session(dispatcher.Round{OnState: log.onState})
	ch := goExecute(command.WithDetach(context.Background(), time.Second), d, cmds("click"))
	m := link.next(t)
	id := m.Actions[0].CallID
	w.Deliver(&aip.ClientMessage{PrevResponseID: m.ResponseID, ActionResults: []command.Result{
		{Status: command.None, CallID: id, Result: json.RawMessage(`null`)}}})
	res := wait(t, ch)
	if res[0].Running() {
		t.Errorf("taken for running: %+v", res[0])
	}
	if got := log.last(id); got != command.StateCompleted {
		t.Errorf("state %q", got)
	}
	if bg := w.Background(); len(bg) != 0 {
		t.Errorf("background %+v", bg)
	}
}
