package session_test

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
)

// sumOnTheShell runs "What is 19 + 23?" with model on a local device in
// dir, and fails the test unless the answer is 42.
func sumOnTheShell(t *testing.T, cfg *config.Config, dir string, model *scripted.Model) {
	t.Helper()
	out := runLocal(t, cfg, dir, session.Options{Model: model}, "What is 19 + 23? Use the shell.")
	if !out.OK() || out.Answer != "42" {
		t.Fatalf("%s %q %v", out.Status, out.Answer, out.Err)
	}
}

// A one-command task whose only subtask the host marks final costs three
// model calls, not four: the host's, and the app agent's two (run the
// command, read it and answer). The answer is the app agent's result.
func TestFinalSubtaskSavesTheHostsLastRound(t *testing.T) {
	model := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "assign_subtask", Arguments: map[string]any{
			"app": "shell", "subtask": "Print the sum of 19 and 23 with the shell and report it.", "final": true}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": "echo $((19 + 23))"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "42"}}}, Expect: "42"},
	}})
	sumOnTheShell(t, config.Default(), t.TempDir(), model)
	if n := len(model.Calls()); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
}

// With agent.direct_app, a task goes straight to that app's agent, alone:
// a one-command task costs two model calls, the app agent is told it works
// the whole request (not a host's subtask) and which device it is on, and
// its result is the answer.
func TestDirectAppWorksTheTaskAlone(t *testing.T) {
	model := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": "echo $((19 + 23))"}}},
			Expect: "You work the whole request alone"},
		{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "42"}}}, Expect: "42"},
	}})
	cfg := config.Default()
	cfg.Agent.DirectApp = "shell"
	dir := t.TempDir()
	sumOnTheShell(t, cfg, dir, model)
	calls := model.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d model calls, want 2", len(calls))
	}
	sys := calls[0].Messages[0].Content
	if strings.Contains(sys, "host agent gave you") || strings.Contains(sys, "other agents do the rest") || !strings.Contains(sys, "- Working directory: "+dir) {
		t.Errorf("the app agent's system prompt:\n%s", sys)
	}
	// Nothing speaks of a subtask: there is none.
	if user := calls[0].Messages[1].Content; strings.Contains(sys+user, "subtask") {
		t.Errorf("the app agent alone is told of a subtask:\n%s\n%s", sys, user)
	}
	for _, tool := range calls[0].Tools {
		if tool.Name == "assign_subtask" {
			t.Error("the app agent is offered assign_subtask")
		}
		if tool.Name == "finish_task" && !strings.HasPrefix(tool.Description, "Finish the request.") {
			t.Errorf("finish_task: %s", tool.Description)
		}
	}
}
