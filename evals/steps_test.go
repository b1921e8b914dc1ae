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
		call("finish_task", map[string]any{"result": "notes/ holds one file, hello.txt, of 18 bytes. "}),
	}})
	rep, err := evals.EvaluateSteps(context.Background(), gold, right, evals.StepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 4 || !rep.TaskSuccess || rep.StepSuccessRate != 1 || rep.ToolAccuracy != 1 || rep.ArgAccuracy != 1 {
		t.Fatalf("%+v", rep)
	}
	if a := rep.FinalAnswer; a == nil || !a.Pass || a.Step != 2 || a.Agent != "app:shell#2" || a.Gold != "notes/ holds one file, hello.txt, of 18 bytes." {
		t.Errorf("final answer %+v", a)
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

// The final answer counts: right steps with a wrong answer are no task
// success; the gold answer may be a check of its own (a suite case's).
func TestEvaluateStepsScoresTheFinalAnswer(t *testing.T) {
	gold := readTrajectory(t, "suites/recordings/hello")
	model := func(answer string) *scripted.Model {
		call := func(name string, args map[string]any) scripted.Reply {
			return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: name, Arguments: args}}}
		}
		return scripted.New(scripted.Script{Replies: []scripted.Reply{
			call("write_file", map[string]any{"path": "notes/hello.txt", "content": "Hello from Saucer\n", "create_dirs": true}),
			call("finish_task", map[string]any{"result": "done"}),
			call("execute_command", map[string]any{"command": "ls -l notes"}),
			call("finish_task", map[string]any{"result": answer}),
		}})
	}
	rep, err := evals.EvaluateSteps(context.Background(), gold, model("there are 2 files"), evals.StepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := rep.FinalAnswer; rep.StepSuccessRate != 1 || rep.TaskSuccess || a == nil || a.Pass || a.Predicted != "there are 2 files" || !strings.Contains(a.Detail, "want") {
		t.Errorf("wrong answer: %+v / %+v", rep, a)
	}
	var b strings.Builder
	rep.Write(&b)
	if !strings.Contains(b.String(), `✘ final answer [app:shell#2 step 2] "there are 2 files"`) {
		t.Errorf("report:\n%s", b.String())
	}
	// Against a gold check instead of the recorded text.
	rep, err = evals.EvaluateSteps(context.Background(), gold, model("1 file: hello.txt"), evals.StepOptions{Answer: &evals.AnswerCheck{Regex: `\bhello\.txt\b`}})
	if err != nil {
		t.Fatal(err)
	}
	if a := rep.FinalAnswer; !rep.TaskSuccess || a == nil || !a.Pass || a.Gold != `/\bhello\.txt\b/` {
		t.Errorf("gold check: %+v / %+v", rep, a)
	}
	// A model that does not finish where the recording did has no answer.
	rep, _ = evals.EvaluateSteps(context.Background(), gold, scripted.New(scripted.Script{Loop: true, Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": "ls"}}}}}}), evals.StepOptions{})
	if a := rep.FinalAnswer; a == nil || a.Pass || !strings.Contains(a.Detail, "did not finish") {
		t.Errorf("no finish: %+v", a)
	}
}

// A step whose reply has a cut call scores nothing, whichever call was
// cut: the agent refuses such a reply whole and runs none of it.
func TestEvaluateStepsRefusesCutCalls(t *testing.T) {
	gold := readTrajectory(t, "suites/recordings/hello")
	call := func(name string, args any) scripted.ToolCall { return scripted.ToolCall{Name: name, Arguments: args} }
	m := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{call("write_file", map[string]any{"path": "notes/hello.txt", "content": "Hello from Saucer\n", "create_dirs": true})}},
		{ToolCalls: []scripted.ToolCall{call("finish_task", map[string]any{"result": "done"})}},
		{ToolCalls: []scripted.ToolCall{call("execute_command", map[string]any{"command": "ls -l notes"})}},
		{ToolCalls: []scripted.ToolCall{call("finish_task", `{"result": "notes/ holds one file, hello.txt, of 18 bytes.`)}},
	}})
	rep, err := evals.EvaluateSteps(context.Background(), gold, m, evals.StepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Steps[len(rep.Steps)-1]
	if last.Success || !strings.Contains(last.Error, "not complete") || rep.TaskSuccess {
		t.Errorf("a cut finish_task scored: %+v (task success %v)", last, rep.TaskSuccess)
	}
}
