package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

type answerer struct{ questions []string }

func (a *answerer) Ask(_ context.Context, _ string, q string) (string, error) {
	a.questions = append(a.questions, q)
	return "use blue", nil
}

func TestPendingAsksTheUser(t *testing.T) {
	const y = `
replies:
  - json: {status: ASSIGN, actions: [{function: assign_subtask, arguments: {app: files, subtask: "write the colour"}}]}
  - json: {status: PENDING, comment: "Which colour?"}
  - expect: "use blue"
    json: {status: CONTINUE, actions: [{function: write_file, arguments: {path: colour.txt, content: blue}}]}
  - json: {status: FINISH, result: "wrote blue"}
  - json: {status: FINISH, result: "done"}
`
	cfg, dir := setup(t, "json")
	a := &answerer{}
	r := runTask(t, context.Background(), cfg, dir, script(t, y), "write my colour", session.Options{Asker: a})
	if !r.out.OK() || len(a.questions) != 1 || a.questions[0] != "Which colour?" {
		t.Fatalf("outcome %s %q, questions %v", r.out.Status, r.out.Answer, a.questions)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "colour.txt")); string(b) != "blue" {
		t.Errorf("colour.txt = %q", b)
	}

	// With no one to ask, the agent fails and says what it wanted to know.
	cfg, dir = setup(t, "json")
	r = runTask(t, context.Background(), cfg, dir, script(t, y), "write my colour", session.Options{})
	if len(r.out.Subtasks) != 1 || r.out.Subtasks[0].Status != "FAIL" || !strings.Contains(r.out.Subtasks[0].Result, "Which colour?") {
		t.Fatalf("subtasks %+v", r.out.Subtasks)
	}
}

func TestProviderErrors(t *testing.T) {
	// A rate limit is retried and the run goes on.
	cfg, dir := setup(t, "tools")
	r := runTask(t, context.Background(), cfg, dir, script(t, `
replies:
  - error: rate_limit
  - tool_calls: [{name: finish_task, arguments: {result: "nothing to do"}}]
`), "nothing", session.Options{})
	if !r.out.OK() || r.out.Answer != "nothing to do" || r.model.Count() != 2 {
		t.Fatalf("outcome %s %q after %d calls", r.out.Status, r.out.Answer, r.model.Count())
	}
	// The wait was announced before it began.
	var retries []agent.Event
	for _, e := range r.events {
		if e.Kind == agent.EventRetry {
			retries = append(retries, e)
		}
	}
	if len(retries) != 1 || !errors.Is(retries[0].Err, llm.ErrRateLimit) || retries[0].Duration <= 0 {
		t.Errorf("retry events: %+v", retries)
	}
	// A bad key ends the session in ERROR, with the provider's error.
	cfg, dir = setup(t, "tools")
	r = runTask(t, context.Background(), cfg, dir, script(t, "replies:\n  - error: auth\n"), "nothing", session.Options{})
	if r.out.Status != fsm.Error || !errors.Is(r.out.Err, llm.ErrAuth) || !strings.Contains(r.out.Answer, "API key") {
		t.Fatalf("outcome %s %q err %v", r.out.Status, r.out.Answer, r.out.Err)
	}
}

func TestHostAssignsToAnUnknownApp(t *testing.T) {
	cfg, dir := setup(t, "tools")
	r := runTask(t, context.Background(), cfg, dir, script(t, `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: browser, subtask: "open a page"}}]
  - expect: "one of files, shell"
    tool_calls: [{name: fail_task, arguments: {reason: "no browser on this device"}}]
`), "open a page", session.Options{})
	if r.out.Status != fsm.Fail || r.out.Answer != "no browser on this device" || len(r.out.Subtasks) != 0 {
		t.Fatalf("outcome %s %q subtasks %v", r.out.Status, r.out.Answer, r.out.Subtasks)
	}
}

func TestObserveStrategy(t *testing.T) {
	cfg, dir := setup(t, "tools")
	os.WriteFile(filepath.Join(dir, "seen.txt"), []byte("x"), 0o644)
	cfg.Agent.AppStrategies = []strategy.Spec{
		{Name: "discover"},
		{Name: "observe", Params: map[string]any{"commands": []any{
			map[string]any{"tool": "list_dir", "namespace": "files", "arguments": map[string]any{"path": "."}},
			map[string]any{"tool": "execute_command", "namespace": "shell", "arguments": map[string]any{"command": "echo observed-by-shell"}},
		}}},
		{Name: "ask"}, {Name: "execute"}, {Name: "remember"},
	}
	r := runTask(t, context.Background(), cfg, dir, script(t, `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "look around"}}]
  - expect: "seen.txt"
    tool_calls: [{name: finish_task, arguments: {result: "I see seen.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done"}}]
`), "look", session.Options{})
	if !r.out.OK() {
		t.Fatalf("outcome %s %q", r.out.Status, r.out.Answer)
	}
	msgs := r.model.Calls()[1].Messages
	first := msgs[len(msgs)-1].Content // the status turn of step 1
	if !strings.Contains(first, "seen.txt") || !strings.Contains(first, "observed-by-shell") {
		t.Errorf("observations missing from the app prompt:\n%s", first)
	}
}

func TestDecisionComesBeforeItsCommandsRun(t *testing.T) {
	cfg, dir := setup(t, "tools")
	r := runTask(t, context.Background(), cfg, dir, script(t, demoTools), "write proof and list", session.Options{})
	var kinds []string
	for _, e := range r.events {
		if e.Agent == "host" && (e.Kind == agent.EventDecision || e.Kind == agent.EventStep) && e.Step == 1 {
			kinds = append(kinds, string(e.Kind))
		}
		if e.Kind == agent.EventAgentStart && e.Role == fsm.App && len(kinds) == 1 {
			kinds = append(kinds, "app_start")
		}
	}
	if strings.Join(kinds, ",") != "decision,app_start,step" {
		t.Errorf("order %v", kinds)
	}
}

// tools.shell.persistent gives the device one shell for every command, and
// closing the device ends it with its background jobs.
func TestPersistentShellDevice(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.Shell.Persistent = true
	dir := t.TempDir()
	dev, err := local.Device(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	run := func(c string) string {
		res := dev.Execute(context.Background(), command.Command{ToolName: "execute_command", Namespace: "shell", Parameters: map[string]any{"command": c}})
		var out struct{ Stdout string }
		if !res.OK() || json.Unmarshal(res.Result, &out) != nil {
			t.Fatalf("%s: %+v", c, res)
		}
		return strings.TrimSpace(out.Stdout)
	}
	run("mkdir -p in && cd in && X=42")
	if got := run("echo $X $(pwd)"); got != "42 "+filepath.Join(dir, "in") {
		t.Errorf("%q", got)
	}
	pid := run("sleep 300 >/dev/null 2>&1 & echo $!")
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(b), ") Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closing the device left the shell's job %s running", pid)
		}
	}
}
