package evals_test

import (
	"context"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm/scripted"
)

func TestEvaluateSteps(t *testing.T) {
	gold := readTrajectory(t, "suites/recordings/hello")
	call := func(name string, args map[string]any) scripted.Reply {
		return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: name, Arguments: args}}}
	}
	// Right at every step; arguments written differently but equivalently
	// (./ before a path, extra spaces) still match.
	right := scripted.New(scripted.Script{Replies: []scripted.Reply{
		call("write_file", map[string]any{"path": "./notes/hello.txt", "content": "Hello from Saucer\n", "create_dirs": true}),
		call("finish_task", map[string]any{"result": "done"}),
		call("execute_command", map[string]any{"command": "ls  -l notes"}),
		call("finish_task", map[string]any{"result": "listed"}),
	}})
	rep, err := evals.EvaluateSteps(context.Background(), gold, right, evals.StepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 4 || !rep.TaskSuccess || rep.StepSuccessRate != 1 || rep.ToolAccuracy != 1 || rep.ArgAccuracy != 1 {
		t.Fatalf("%+v", rep)
	}
	if rep.Steps[0].ExactArgs || !rep.Steps[3].ExactArgs {
		t.Errorf("exactness: %+v / %+v", rep.Steps[0], rep.Steps[3])
	}
	// The model saw exactly what the recorded agent saw at each step.
	if calls := right.Calls(); len(calls) != 4 || !strings.Contains(calls[2].Messages[1].Content, "ls -l notes") {
		t.Errorf("requests: %d", len(calls))
	}
	// Wrong content at step 1, a wrong tool at step 3.
	wrong := scripted.New(scripted.Script{Replies: []scripted.Reply{
		call("write_file", map[string]any{"path": "notes/hello.txt", "content": "Goodbye\n", "create_dirs": true}),
		call("finish_task", map[string]any{"result": "done"}),
		call("fail_task", map[string]any{"reason": "no"}),
		call("finish_task", map[string]any{"result": "listed"}),
	}})
	rep, err = evals.EvaluateSteps(context.Background(), gold, wrong, evals.StepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Steps
	if s[0].Success || !s[0].ToolOK || s[0].ArgScore != 2.0/3 || !s[1].Success || s[2].ToolOK || s[2].Success || rep.TaskSuccess ||
		rep.StepSuccessRate != 0.5 || rep.ToolAccuracy != 0.75 {
		t.Errorf("%+v", rep)
	}
	var b strings.Builder
	rep.Write(&b)
	if !strings.Contains(b.String(), "step success 50.0%, task success false") {
		t.Errorf("report:\n%s", b.String())
	}
}
