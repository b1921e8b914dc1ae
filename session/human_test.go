package session_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

// person answers questions and approvals as scripted, and remembers what
// it was asked.
type person struct {
	mu        sync.Mutex
	answers   []string
	approve   []bool
	questions []string
	approvals [][]command.Command
}

func (p *person) Ask(ctx context.Context, agent, q string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.questions = append(p.questions, q)
	a := p.answers[0]
	p.answers = p.answers[1:]
	return a, nil
}

func (p *person) Confirm(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.approvals = append(p.approvals, cmds)
	ok := p.approve[0]
	p.approve = p.approve[1:]
	return ok, nil
}

// runScript runs a task with a scripted model and a person, and returns
// the outcome, the states each role reached and the model's requests.
func runScript(t *testing.T, cfg *config.Config, dir, script string, p *person) (*agent.Outcome, map[fsm.Role][]fsm.State, *scripted.Model) {
	t.Helper()
	s, err := scripted.Parse([]byte(script), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(*s)
	reached := map[fsm.Role][]fsm.State{fsm.Host: {fsm.Start}, fsm.App: {fsm.Start}}
	out := runLocal(t, cfg, dir, session.Options{Model: model, Asker: p, Confirmer: p,
		Observers: []func(agent.Event){func(e agent.Event) {
			if e.Kind == agent.EventTransition && !slices.Contains(reached[e.Role], e.To) {
				reached[e.Role] = append(reached[e.Role], e.To)
			}
		}}}, "tidy up")
	return out, reached, model
}

// TestEveryStateIsReachable walks every state of both roles' tables through
// real sessions in tools mode: each is brought about by a model's reply (or
// the person's answer), and no state in the tables is left unreached.
func TestEveryStateIsReachable(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.RetryBackoff = config.Duration(1)
	all := map[fsm.Role][]fsm.State{}
	merge := func(r map[fsm.Role][]fsm.State) {
		for role, states := range r {
			for _, s := range states {
				if !slices.Contains(all[role], s) {
					all[role] = append(all[role], s)
				}
			}
		}
	}

	// The host asks which file; an app agent asks too, has a write
	// approved, has a delete declined, and finishes; another app agent
	// fails; the host finishes.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep\n"), 0o644)
	p := &person{answers: []string{"notes.txt", "write 'tidy'"}, approve: []bool{true, false}}
	out, reached, model := runScript(t, cfg, dir, `
replies:
  - tool_calls: [{name: ask_user, arguments: {question: "Which file should I tidy?"}}]
  - expect: "notes.txt"
    tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Tidy notes.txt."}}]
  - tool_calls: [{name: ask_user, arguments: {question: "What should notes.txt say?"}}]
  - expect: "write 'tidy'"
    tool_calls:
      - {name: request_approval, arguments: {reason: "overwrites notes.txt"}}
      - {name: write_file, arguments: {path: notes.txt, content: "tidy\n"}}
  - expect: "approved"
    tool_calls:
      - {name: request_approval, arguments: {reason: "deletes keep.txt"}}
      - {name: write_file, arguments: {path: keep.txt, content: ""}}
  - expect: "declined"
    tool_calls: [{name: finish_task, arguments: {result: "notes.txt says tidy; keep.txt kept."}}]
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Empty the bin."}}]
  - tool_calls: [{name: fail_task, arguments: {reason: "there is no bin"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "notes.txt tidied; the bin could not be emptied."}}]
`, p)
	if !out.OK() {
		t.Fatalf("outcome %s %q", out.Status, out.Answer)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "tidy\n" {
		t.Errorf("notes.txt = %q: the approved write did not run", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "keep\n" {
		t.Errorf("keep.txt = %q: the declined write ran", b)
	}
	if len(p.questions) != 2 || p.questions[0] != "Which file should I tidy?" || len(p.approvals) != 2 {
		t.Errorf("the person was asked %q and %d approvals", p.questions, len(p.approvals))
	}
	// The answer went back as the ask_user call's result.
	calls := model.Calls()
	msgs := calls[1].Messages
	if last := msgs[len(msgs)-2]; last.Role != "tool" || last.Content != "The user answered: notes.txt" {
		t.Errorf("the host's answer came back as %s %q", last.Role, last.Content)
	}
	merge(reached)

	// The host fails; then an error ends a host agent and an app agent.
	out, reached, _ = runScript(t, cfg, t.TempDir(), `
replies:
  - tool_calls: [{name: fail_task, arguments: {reason: "nothing to tidy"}}]
`, &person{})
	if out.Status != fsm.Fail {
		t.Errorf("fail: %s", out.Status)
	}
	merge(reached)
	out, reached, _ = runScript(t, cfg, t.TempDir(), `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Tidy."}}]
  - error: auth
  - error: auth
`, &person{})
	if out.Status != fsm.Error {
		t.Errorf("error: %s %q", out.Status, out.Answer)
	}
	merge(reached)

	for _, role := range []fsm.Role{fsm.Host, fsm.App} {
		for _, s := range fsm.States(role) {
			if !slices.Contains(all[role], s) {
				t.Errorf("%s never reached %s: reached %v", role, s, all[role])
			}
		}
	}
}

// A question nobody can answer, and approvals with nobody to give them,
// end clearly instead of hanging.
func TestNobodyThere(t *testing.T) {
	cfg := config.Default()
	s, _ := scripted.Parse([]byte(`
replies:
  - tool_calls: [{name: ask_user, arguments: {question: "Which one?"}}]
`), "yaml")
	out := runLocal(t, cfg, t.TempDir(), session.Options{Model: scripted.New(*s)}, "pick one")
	if out.Status != fsm.Fail || !strings.Contains(out.Answer, "no one can answer here: Which one?") {
		t.Errorf("outcome %s %q", out.Status, out.Answer)
	}
}

// Approval rules put matching commands to the person before they run,
// whatever the model said; others run without asking.
func TestApprovalRules(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.Approve = []strategy.ApprovalRule{{Tool: "shell.execute_command", Argument: "command", Match: "*rm *"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &person{approve: []bool{false}}
	out, _, model := runScript(t, cfg, dir, `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Make a.txt, then remove it."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo hi > a.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "rm a.txt"}}]
  - expect: "the user declined"
    tool_calls: [{name: finish_task, arguments: {result: "a.txt made; removing it was declined."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done"}}]
`, p)
	if !out.OK() || model.Remaining() != 0 {
		t.Fatalf("outcome %s %q", out.Status, out.Answer)
	}
	if len(p.approvals) != 1 || p.approvals[0][0].Parameters["command"] != "rm a.txt" {
		t.Errorf("approvals asked: %v", p.approvals)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Errorf("a.txt: %v (the declined rm ran)", err)
	}
	for _, bad := range []strategy.ApprovalRule{{}, {Risk: "scary"}, {Argument: "command"}, {Tool: "["}} {
		cfg.Agent.Approve = []strategy.ApprovalRule{bad}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "agent.approve[0]") {
			t.Errorf("rule %s: %v", bad, err)
		}
	}
}

// A host agent that "finishes" when every subtask it assigned failed does
// not end the task as done.
func TestAllSubtasksFailedIsNotDone(t *testing.T) {
	out, _, _ := runScript(t, config.Default(), t.TempDir(), `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Read missing.txt."}}]
  - tool_calls: [{name: fail_task, arguments: {reason: "missing.txt does not exist"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "All done!"}}]
`, &person{})
	if out.OK() || !strings.Contains(out.Answer, "none of its 1 subtasks did (the last: FAIL missing.txt does not exist)") {
		t.Errorf("outcome %s %q", out.Status, out.Answer)
	}
}
