package dispatcher_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/trajectory"
)

func cmd(tool string, params map[string]any) command.Command {
	return command.Command{ToolName: tool, Namespace: "shell", ToolType: command.Action, Parameters: params}
}

func recorded() []trajectory.Event {
	obs := func(path string) trajectory.Event {
		return trajectory.Event{Type: trajectory.TypeDispatch, Agent: "app:shell#1", Step: 1, Phase: "DATA_COLLECTION",
			Commands: []command.Command{cmd("list_dir", map[string]any{"path": path})}, Results: []command.Result{command.Succeeded("o-"+path, path)}}
	}
	return []trajectory.Event{
		{Type: trajectory.TypeSessionStart},
		obs("a"), obs("b"),
		{Type: trajectory.TypeDispatch, Agent: "app:shell#1", Step: 1, Phase: "ACTION_EXECUTION",
			Commands: []command.Command{cmd("execute_command", map[string]any{"command": "ls", "timeout": 3})},
			Results:  []command.Result{command.Succeeded("x-1", "a b")}},
		{Type: trajectory.TypeStep},
	}
}

func TestReplayStrict(t *testing.T) {
	r := dispatcher.NewReplay(recorded(), dispatcher.ReplayOptions{})
	ctx := context.Background()
	// Observations of one step may come in any order.
	if res := r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "b"})}); res[0].CallID != "o-b" {
		t.Fatalf("b: %+v", res)
	}
	if res := r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "a"})}); res[0].CallID != "o-a" {
		t.Fatalf("a: %+v", res)
	}
	// 3.0 from JSON matches the recorded 3.
	res := r.Execute(ctx, []command.Command{cmd("execute_command", map[string]any{"command": "ls", "timeout": 3.0})})
	if !res[0].OK() || string(res[0].Result) != `"a b"` || res[0].CallID != "x-1" {
		t.Fatalf("ls: %+v", res)
	}
	if r.Remaining() != 0 || len(r.Divergences()) != 0 {
		t.Errorf("remaining %d divergences %v", r.Remaining(), r.Divergences())
	}
}

func TestReplayStrictDivergence(t *testing.T) {
	r := dispatcher.NewReplay(recorded()[:4], dispatcher.ReplayOptions{})
	ctx := context.Background()
	res := r.Execute(ctx, []command.Command{cmd("execute_command", map[string]any{"command": "rm -rf /"})})
	if res[0].Status != command.Failure || !strings.Contains(res[0].Error, "not in the recording") {
		t.Fatalf("result %+v", res[0])
	}
	d := r.Divergences()
	if len(d) != 1 || !strings.Contains(d[0].Diff, `-     "tool_name": "list_dir"`) || !strings.Contains(d[0].Diff, `+       "command": "rm -rf /"`) {
		t.Fatalf("divergences %v", d)
	}
	if r.Remaining() != 3 {
		t.Errorf("a divergence consumed recorded batches: %d remain", r.Remaining())
	}
}

func TestReplayLenient(t *testing.T) {
	r := dispatcher.NewReplay(recorded(), dispatcher.ReplayOptions{Lenient: true})
	ctx := context.Background()
	// Another order and another batching are fine; a command asked twice
	// gets its result twice; an unknown command fails.
	res := r.Execute(ctx, []command.Command{
		cmd("execute_command", map[string]any{"command": "ls", "timeout": 3}),
		cmd("list_dir", map[string]any{"path": "a"}),
		cmd("list_dir", map[string]any{"path": "a"}),
		cmd("execute_command", map[string]any{"command": "whoami"}),
	})
	if !res[0].OK() || !res[1].OK() || !res[2].OK() || res[3].Status != command.Failure {
		t.Fatalf("%+v", res)
	}
	if d := r.Divergences(); len(d) != 1 || !strings.Contains(d[0].Reason, "whoami") {
		t.Errorf("divergences %v", d)
	}
}

// TestReplayAtEnd: in a recording that stops early, a batch past the last
// recorded one ends the replay: its commands are skipped, with no
// divergence; one that differs before the end still diverges.
func TestReplayAtEnd(t *testing.T) {
	ended := 0
	r := dispatcher.NewReplay(recorded(), dispatcher.ReplayOptions{AtEnd: func() { ended++ }})
	ctx := context.Background()
	if res := r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "x"})}); res[0].Status == command.Skipped || len(r.Divergences()) != 1 {
		t.Fatalf("a batch that differs before the end: %+v %v", res, r.Divergences())
	}
	r = dispatcher.NewReplay(recorded(), dispatcher.ReplayOptions{AtEnd: func() { ended++ }})
	r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "a"})})
	r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "b"})})
	r.Execute(ctx, []command.Command{cmd("execute_command", map[string]any{"command": "ls", "timeout": 3})})
	res := r.Execute(ctx, []command.Command{cmd("execute_command", map[string]any{"command": "rm x"})})
	if res[0].Status != command.Skipped || ended != 1 || len(r.Divergences()) != 0 {
		t.Errorf("past the end: %+v, AtEnd called %d times, divergences %v", res, ended, r.Divergences())
	}
}

// Skip leaves recorded dispatches out of the replay without a copy of the
// events: here the step's action, so the observations are all there is.
func TestReplaySkip(t *testing.T) {
	events := recorded()
	r := dispatcher.NewReplay(events, dispatcher.ReplayOptions{Skip: func(e *trajectory.Event) bool { return e.Phase == "ACTION_EXECUTION" }})
	if r.Remaining() != 2 {
		t.Fatalf("%d batches to replay; want the 2 observations", r.Remaining())
	}
	ctx := context.Background()
	r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "a"})})
	r.Execute(ctx, []command.Command{cmd("list_dir", map[string]any{"path": "b"})})
	if r.Remaining() != 0 || len(r.Divergences()) != 0 {
		t.Errorf("remaining %d, divergences %v", r.Remaining(), r.Divergences())
	}
}

// A command's parameters are compared without encoding them where they
// are plainly the same; what differs anywhere inside, or encodes apart
// (-0 and 0), is still a divergence.
func TestReplayComparesParametersAsJSON(t *testing.T) {
	params := func(depth, zero float64, names ...any) map[string]any {
		return map[string]any{"path": "notes", "opts": map[string]any{"depth": depth, "names": names, "hidden": false, "glob": nil}, "zero": zero}
	}
	events := []trajectory.Event{{Type: trajectory.TypeDispatch, Agent: "app:files#1", Step: 1, Phase: "ACTION_EXECUTION",
		Commands: []command.Command{cmd("list_dir", params(2, 0, "a", "b"))}, Results: []command.Result{command.Succeeded("x-1", "ok")}}}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		params map[string]any
		same   bool
	}{
		{"equal", params(2, 0, "a", "b"), true},
		{"a nested number", params(3, 0, "a", "b"), false},
		{"a nested list", params(2, 0, "a", "c"), false},
		{"a shorter list", params(2, 0, "a"), false},
		{"negative zero", params(2, math.Copysign(0, -1), "a", "b"), false},
	} {
		r := dispatcher.NewReplay(events, dispatcher.ReplayOptions{})
		res := r.Execute(ctx, []command.Command{cmd("list_dir", tc.params)})
		if got := len(r.Divergences()) == 0 && res[0].OK(); got != tc.same {
			t.Errorf("%s: replayed as the recorded command %v, want %v (%+v)", tc.name, got, tc.same, res[0])
		}
	}
}
