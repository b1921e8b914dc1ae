package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/fsm"
)

// oneDevice completes every task at once with its text as result.
type oneDevice struct{}

func (oneDevice) List(context.Context) ([]constellation.Device, error) {
	return []constellation.Device{{ID: "box", Apps: []string{"shell"}}}, nil
}
func (oneDevice) Start(_ context.Context, _, key, _ string) (string, error) { return key, nil }
func (oneDevice) Wait(context.Context, string) (constellation.TaskOutcome, error) {
	return constellation.TaskOutcome{OK: true, Result: "42"}, nil
}

// onePlan adds one node, then finishes with its result (or fails).
type onePlan struct{ fail bool }

func (p onePlan) Step(ctx context.Context, g *constellation.Graph, _ []constellation.Device, _ []string) (constellation.StepResult, error) {
	if p.fail {
		return constellation.StepResult{Status: fsm.Fail, Answer: "no device can do that"}, nil
	}
	if len(g.Nodes) == 0 {
		add := constellation.Edit{Op: constellation.ToolAddNode, Args: map[string]any{"id": "only", "device": "box", "task": "answer"}, OK: true}
		return constellation.StepResult{Status: fsm.Continue, Edits: []constellation.Edit{add}}, nil
	}
	return constellation.StepResult{Status: fsm.Finish, Answer: "the answer is " + g.Nodes[0].Result}, nil
}

func TestConstellationCommand(t *testing.T) {
	for _, fail := range []bool{false, true} {
		o, err := constellation.New(constellation.Options{Devices: oneDevice{},
			NewPlanner: func(*constellation.Graph) (constellation.Stepper, error) { return onePlan{fail: fail}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(constellation.Handler(o, "k", nil))
		out, code := saucer(t, "constellation", "--server", strings.TrimPrefix(hs.URL, "http://"), "--token", "k", "what is the answer")
		hs.Close()
		if fail {
			if code != 1 || !strings.Contains(out, "failed: the planner gave up: no device can do that") {
				t.Errorf("a failed constellation: exit %d, want 1\n%s", code, out)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, "- only [completed] on box: answer") || !strings.Contains(out, "the answer is 42") {
			t.Errorf("exit %d\n%s", code, out)
		}
	}
	out, code := saucer(t, "constellation", "--server", "ws://127.0.0.1:1/ws", "--token", "k", "x")
	if code != 2 || !strings.Contains(out, "is `saucer serve` running?") {
		t.Errorf("no server: exit %d, want 2\n%s", code, out)
	}
	// A blank request is bad usage, said before the server is asked.
	out, code = saucer(t, "constellation", "--server", "ws://127.0.0.1:1/ws", "--token", "k", " \t ")
	if code != 2 || !strings.Contains(out, "REQUEST is empty") {
		t.Errorf("blank request: exit %d, want 2\n%s", code, out)
	}
}
