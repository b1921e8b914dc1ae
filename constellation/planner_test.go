package constellation

import (
	"context"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

func loadPrompts(t testing.TB) *prompts.Set {
	t.Helper()
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The constellation agent, driven by a scripted model through its
// strategies: a bad edit comes back to the model as a failed tool result,
// and the edits of its reply go with it (none is kept: a plan is applied
// whole or not at all); the corrected plan runs, and after its nodes end
// the model is told and finishes.
func TestPlannerBuildsAndEditsThroughItsTools(t *testing.T) {
	script, err := scripted.Parse([]byte(`
replies:
  - expect: "d3 (linux): apps shell, desktop"
    tool_calls:
      - name: add_node
        arguments: {id: build, device: d1, task: "build the report", apps: [shell]}
      - name: add_node
        arguments: {id: open, device: d2, task: "open it", apps: [desktop]}
  - expect: 'node "open" needs app "desktop", which device "d2" does not have'
    tool_calls:
      - name: add_edge
        arguments: {from: build, to: open}
      - name: add_node
        arguments: {id: build, device: d1, task: "build the report", apps: [shell]}
      - name: add_node
        arguments: {id: open, device: d3, task: "open it", apps: [desktop]}
  - expect: "build completed on d1: report.csv"
    text: "open runs next."
  - expect: "open completed on d3: 42"
    tool_calls:
      - name: finish_task
        arguments: {result: "the value is 42"}
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(*script)
	devs := []Device{{ID: "d1", Platform: "linux", Apps: []string{"shell"}}, {ID: "d2", Platform: "linux", Apps: []string{"shell"}},
		{ID: "d3", Platform: "linux", Apps: []string{"shell", "desktop"}}}
	f := newFake(devs...)
	f.outcome = func(device, task string, _ int) TaskOutcome {
		if device == "d3" {
			return TaskOutcome{OK: true, Result: "42"}
		}
		return TaskOutcome{OK: true, Result: "report.csv"}
	}
	// Step 1's two nodes are refused together (open's device lacks its
	// app), so nothing runs; step 2 sends the plan again, corrected (its
	// edge before the nodes it joins: the reply is checked as a whole);
	// step 3 sees build's end, step 4 open's.
	var steps []StepResult
	o, err := New(Options{Devices: f, NewPlanner: func(*Graph) (Stepper, error) {
		p, err := NewPlanner(PlannerOptions{Model: model, Prompts: loadPrompts(t), Limits: strategy.Limits{}})
		return recordSteps{p, &steps}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.Run(context.Background(), "build the report and read its value on the desktop")
	if err != nil {
		t.Fatal(err)
	}
	if g.Status != Completed || g.Answer != "the value is 42" || len(g.Nodes) != 2 || g.Node("open").Device != "d3" {
		t.Fatalf("%s %q:\n%s", g.Status, g.Answer, g.Summary())
	}
	if len(steps) < 3 || steps[0].Edits[0].OK || steps[0].Edits[1].OK || steps[len(steps)-1].Status != fsm.Finish {
		t.Fatalf("steps: %+v", steps)
	}
	if why := steps[0].Edits[0].Reason; !strings.Contains(why, "applied together or not at all") || !strings.Contains(why, "open") {
		t.Errorf("build's refusal does not say it went with open's: %q", why)
	}
	if f.starts["constellation:"+g.ID+":build:1"] != 1 || len(f.starts) != 2 {
		t.Errorf("starts %v: the refused plan's build ran, or a node ran twice", f.starts)
	}
	// The conversation is append-only: each request starts with the
	// previous one.
	calls := model.Calls()
	for i := 1; i < len(calls); i++ {
		prev, cur := calls[i-1].Messages, calls[i].Messages
		for j := range prev {
			if j >= len(cur) || cur[j].Content != prev[j].Content || cur[j].Role != prev[j].Role {
				t.Fatalf("request %d rewrote message %d of request %d", i+1, j+1, i)
			}
		}
	}
	last := calls[len(calls)-1].Messages
	if m := last[len(last)-1]; m.Role != llm.RoleUser || !strings.Contains(m.Content, "- open [completed] on d3, after build") {
		t.Fatalf("the last status turn: %+v", m)
	}
}

type recordSteps struct {
	p     *Planner
	steps *[]StepResult
}

func (r recordSteps) Step(ctx context.Context, g *Graph, ds []Device, events []string) (StepResult, error) {
	res, err := r.p.Step(ctx, g, ds, events)
	*r.steps = append(*r.steps, res)
	return res, err
}

func TestPlannerRefusesJSONModeAndAMissingObserve(t *testing.T) {
	script, _ := scripted.Parse([]byte("replies: [{text: hi}]"), "yaml")
	p, err := NewPlanner(PlannerOptions{Model: scripted.New(*script), Prompts: loadPrompts(t),
		Pipeline: []strategy.Spec{{Name: strategy.Discover}, {Name: StrategyPlan}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Step(context.Background(), &Graph{Request: "r"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "needs constellation_observe before constellation_plan") {
		t.Fatalf("%v", err)
	}
}
