package constellation

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

// The planner is spoken to as a planner: its finish_task and fail_task
// end the whole request (it was offered the app agent's "Finish your
// subtask"), and its system prompt calls only tools it is offered (it
// said "Call fail" for fail_task, and "FAIL", a json-mode status, where
// there are no devices).
func TestPlannerPromptNamesItsOwnTools(t *testing.T) {
	for _, devs := range [][]Device{{{ID: "d1", Platform: "linux", Apps: []string{"shell"}}}, nil} {
		script, err := scripted.Parse([]byte("replies: [{text: waiting}]"), "yaml")
		if err != nil {
			t.Fatal(err)
		}
		model := scripted.New(*script)
		p, err := NewPlanner(PlannerOptions{Model: model, Prompts: loadPrompts(t), Limits: strategy.Limits{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Step(context.Background(), &Graph{Request: "count the files on d1"}, devs, nil); err != nil {
			t.Fatal(err)
		}
		req := model.Calls()[0]
		var tools []string
		for _, tl := range req.Tools {
			tools = append(tools, tl.Name)
			if tl.Name == prompts.FinishTool || tl.Name == prompts.FailTool {
				if !strings.Contains(tl.Description, "whole request") || strings.Contains(tl.Description, "subtask") {
					t.Errorf("%s: %q", tl.Name, tl.Description)
				}
			}
		}
		for _, want := range []string{ToolAddNode, ToolUpdateNode, ToolRemoveNode, ToolAddEdge, ToolFinishWhenDone, prompts.FinishTool, prompts.FailTool} {
			if !slices.Contains(tools, want) {
				t.Errorf("the planner is not offered %s: %v", want, tools)
			}
		}
		sys := req.Messages[0]
		if sys.Role != llm.RoleSystem {
			t.Fatalf("first message: %+v", sys)
		}
		for _, m := range regexp.MustCompile(`(?i)\bcall (\w+)`).FindAllStringSubmatch(sys.Content, -1) {
			if m[1] != "it" && !slices.Contains(tools, m[1]) {
				t.Errorf("the system prompt says %q, but %s is not a tool of the planner (%v)", m[0], m[1], tools)
			}
		}
		for _, w := range regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`).FindAllString(sys.Content, -1) {
			if strings.HasSuffix(w, "_node") || strings.HasSuffix(w, "_edge") || strings.HasSuffix(w, "_task") || strings.HasSuffix(w, "_done") {
				if !slices.Contains(tools, w) {
					t.Errorf("the system prompt names %s, which the planner is not offered", w)
				}
			}
		}
		if regexp.MustCompile(`\b(FAIL|FINISH)\b`).MatchString(sys.Content) {
			t.Errorf("the system prompt speaks of json-mode statuses:\n%s", sys.Content)
		}
		if devs == nil && !strings.Contains(sys.Content, "No device is available: call fail_task with the reason.") {
			t.Errorf("without devices:\n%s", sys.Content)
		}
	}
}

// Node ids a model sends as numbers are the ids they spell.
func TestEditsTakeNumericIDs(t *testing.T) {
	g := &Graph{Request: "r"}
	ed := &editor{graph: g, devices: twoDevices}
	var args []map[string]any
	for _, raw := range []string{
		`{"id": 1, "device": "linux1", "task": "make the list"}`,
		`{"id": 2, "device": "desk", "task": "show the list"}`,
		`{"from": 1, "to": 2}`,
	} {
		var a map[string]any
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			t.Fatal(err)
		}
		args = append(args, a)
	}
	for i, op := range []string{ToolAddNode, ToolAddNode, ToolAddEdge} {
		if _, err := ed.apply(op, args[i]); err != nil {
			t.Fatalf("%s %v: %v", op, args[i], err)
		}
	}
	if g.Node("1") == nil || g.Node("2") == nil || len(g.Edges) != 1 || g.Edges[0] != (Edge{"1", "2"}) {
		t.Fatalf("graph: %s", g.Summary())
	}
	if _, err := ed.apply(ToolRemoveNode, map[string]any{"id": 2.0}); err != nil || g.Node("2") != nil {
		t.Fatalf("remove 2: %v\n%s", err, g.Summary())
	}
}
