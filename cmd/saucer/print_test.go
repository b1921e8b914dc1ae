package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// The console never shows the start of a secret: not where a long line
// is cut in the middle of one, and not when a streamed reply brings it in
// pieces.
func TestConsoleHidesTheStartOfCutSecrets(t *testing.T) {
	const (
		literal = "literal-secret-from-the-config-0123456789"
		apiKey  = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
		bearer  = "Bearer tok.abcdefghijklmnop.qrstuvwxyz"
	)
	red, err := trajectory.NewRedactor([]string{literal}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p := newPrinter(&out, red)

	// Each secret starts a few bytes before the line is cut.
	res := func(secret string, cut int) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"stdout": strings.Repeat("x", cut-len(`{"stdout":"`)-5) + secret})
		return b
	}
	p.event(agent.Event{Kind: agent.EventStep, Agent: "shell", Step: 1, To: fsm.Continue,
		Commands: []command.Command{
			{ToolName: "execute_command", Parameters: map[string]any{"command": strings.Repeat("y", 90) + " " + apiKey}},
			{ToolName: "execute_command"}, {ToolName: "execute_command"},
		},
		Results: []command.Result{
			{Status: command.Success, Result: res(literal, 100)},
			{Status: command.Success, Result: res(apiKey, 100)},
			{Status: command.Failure, Error: strings.Repeat("z", 135) + bearer},
		}})
	p.event(agent.Event{Kind: agent.EventDecision, Agent: "shell", Step: 2, To: fsm.Continue,
		Decision: &strategy.Decision{Thought: strings.Repeat("t", 115) + literal}})

	// Streamed: the secrets come in chunks of three bytes.
	reply := "the key is " + apiKey + " and " + literal + " and " + bearer + " done"
	for i := 0; i < len(reply); i += 3 {
		p.chunk("shell", llm.Chunk{Text: reply[i:min(i+3, len(reply))]})
	}
	p.endStream()

	got := out.String()
	for _, secret := range []string{literal, apiKey, "tok.abcdefghijklmnop"} {
		if strings.Contains(got, secret[:8]) {
			t.Errorf("the console shows %q, the start of a secret:\n%s", secret[:8], got)
		}
	}
	// Where the cut falls inside the marker, its start stands for it.
	if n := strings.Count(got, "[R"); n != 8 {
		t.Errorf("%d secrets redacted, want 8:\n%s", n, got)
	}
	if !strings.Contains(got, "the key is "+trajectory.Redacted+" and") || !strings.HasSuffix(got, " done\n") {
		t.Errorf("streamed text lost:\n%s", got)
	}
}

// A running command's progress shows its latest output line every two
// seconds at most, redacted, never in the middle of a streamed reply; a
// command left in the background says so in its step, and its end is
// told when it comes.
func TestConsoleShowsProgress(t *testing.T) {
	red, err := trajectory.NewRedactor([]string{"hunter2-secret"}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p := newPrinter(&out, red)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	report := func(after time.Duration, msg string, state command.State) {
		clock = clock.Add(after)
		p.event(agent.Event{Kind: agent.EventProgress, Agent: "app:shell#1", Step: 1,
			Progress: &command.Progress{CallID: "c1", Tool: "execute_command", Message: msg, State: state, ElapsedMS: 3000}})
	}
	report(0, "compiling a\ncompiling b", command.StateRunning)
	report(500*time.Millisecond, "compiling c", command.StateRunning) // too soon
	p.chunk("app:shell#1", llm.Chunk{Text: "thinking about "})
	report(2*time.Second, "compiling d", command.StateRunning) // not in a streamed line
	p.endStream()
	report(0, "password hunter2-secret", command.StateRunning)
	p.event(agent.Event{Kind: agent.EventStep, Agent: "app:shell#1", Step: 1, Commands: []command.Command{{ToolName: "execute_command"}},
		Results: []command.Result{command.Running(command.Status{CallID: "c1", Tool: "execute_command", State: command.StateRunning})}})
	report(0, "", command.StateCompleted)

	want := []string{
		"    … execute_command 3s: compiling b",
		"  app:shell#1 … thinking about ",
		"    … execute_command 3s: password [REDACTED]",
		"    execute_command{} → still running in the background (call c1)",
		"    execute_command (call c1, app:shell#1) ended in the background: completed",
	}
	got := out.String()
	for _, w := range want {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("no line %q in\n%s", w, got)
		}
	}
	for _, not := range []string{"compiling c", "compiling d", "hunter2"} {
		if strings.Contains(got, not) {
			t.Errorf("%q shown:\n%s", not, got)
		}
	}
}
