package session_test

import (
	"context"
	"testing"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
)

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
	cfg := config.Default()
	dev, err := local.Device(context.Background(), cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	sess, err := session.New(cfg, session.Options{Device: dev, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(context.Background(), "What is 19 + 23? Use the shell.")
	if !out.OK() || out.Answer != "42" {
		t.Fatalf("%s %q %v", out.Status, out.Answer, out.Err)
	}
	if n := len(model.Calls()); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
}
