package record

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/trajectory"
)

// Progress is recorded at most once a second per command, plus each
// command's last report: before the dispatch that brings its result, when
// a command left in the background reports its end, or at the end of the
// session. A replay reads such a trajectory and compares without them.
func TestProgressIsRecordedThrottled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r, err := Start(dir, trajectory.Session{Task: "t", Model: "scripted:x.yaml"}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return clock }
	at := func(d time.Duration) { clock = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(d) }
	report := func(id string, n float64, state command.State) {
		r.Observe(agent.Event{Kind: agent.EventProgress, Agent: "app:shell#1", Role: fsm.App, App: "shell", Step: 1,
			Progress: &command.Progress{CallID: id, Tool: "execute_command", Progress: n, Message: "line", State: state}})
	}
	dispatch := func(results ...command.Result) {
		r.Observe(agent.Event{Kind: agent.EventDispatch, Agent: "app:shell#1", Role: fsm.App, Step: 1,
			Commands: make([]command.Command, len(results)), Results: results})
	}

	// A command waited for: 0 s recorded, 0.25-0.75 s kept, 1.1 s
	// recorded, 1.3 s kept and recorded before its result.
	for _, step := range []struct {
		d time.Duration
		n float64
	}{{0, 1}, {250 * time.Millisecond, 2}, {500 * time.Millisecond, 3}, {750 * time.Millisecond, 4}, {1100 * time.Millisecond, 5}, {1300 * time.Millisecond, 6}} {
		at(step.d)
		report("a", step.n, command.StateRunning)
	}
	dispatch(command.Succeeded("a", "done"))
	// A command left in the background: its result does not end it, its
	// end report does.
	at(2 * time.Second)
	report("b", 1, command.StateRunning)
	at(2100 * time.Millisecond)
	report("b", 2, command.StateRunning)
	dispatch(command.Running(command.Status{CallID: "b", State: command.StateRunning}))
	at(2200 * time.Millisecond)
	report("b", 3, command.StateCompleted)
	// One still reporting when the session ends.
	at(3 * time.Second)
	report("c", 1, command.StateRunning)
	at(3500 * time.Millisecond)
	report("c", 2, command.StateRunning)
	if err := r.Finish(&agent.Outcome{Status: fsm.Finish}); err != nil {
		t.Fatal(err)
	}
	report("c", 3, command.StateRunning) // after the end: not recorded

	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Events {
		switch e.Type {
		case trajectory.TypeProgress:
			got = append(got, e.Progress.CallID+string(rune('0'+int(e.Progress.Progress)))+":"+string(e.Progress.State))
		default:
			got = append(got, string(e.Type))
		}
	}
	want := []string{"session_start", "a1:running", "a5:running", "a6:running", "dispatch",
		"b1:running", "dispatch", "b3:completed", "c1:running", "c2:running", "session_end"}
	if !slices.Equal(got, want) {
		t.Errorf("recorded\n got %q\nwant %q", got, want)
	}
	// Compared without them, numbered without them.
	norm := trajectory.Normalize(tr.Events)
	if len(norm) != 4 || norm[1].Type != trajectory.TypeDispatch || norm[3].Seq != 4 {
		t.Errorf("normalized: %+v", norm)
	}
}
