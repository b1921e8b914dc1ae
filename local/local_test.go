package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

// setup returns a config for scripted runs and a real device (the shell and
// files MCP servers) working in a fresh temp dir.
func setup(t *testing.T, mode string) (*config.Config, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Model = "scripted:inline"
	cfg.Mode = mode
	cfg.Models = nil
	cfg.Agent.RetryBackoff = config.Duration(time.Millisecond)
	return cfg, t.TempDir()
}

func script(t *testing.T, yaml string) *scripted.Model {
	t.Helper()
	s, err := scripted.Parse([]byte(yaml), "yaml")
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return scripted.New(*s)
}

type run struct {
	out    *agent.Outcome
	events []agent.Event
	model  *scripted.Model
}

func runTask(t *testing.T, ctx context.Context, cfg *config.Config, dir string, m *scripted.Model, task string, o session.Options) run {
	t.Helper()
	dev, err := local.Device(ctx, cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	var events []agent.Event
	o.Model = m
	o.Observers = append(o.Observers, func(e agent.Event) { events = append(events, e) })
	o.Device = dev
	sess, err := session.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return run{out: sess.Run(ctx, task), events: events, model: m}
}

// lastUser is the newest user or tool turn the model was sent in call i.
func sentText(r run, call int) string {
	msgs := r.model.Calls()[call].Messages
	var b strings.Builder
	for _, m := range msgs[2:] {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

const demoTools = `
replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: files, subtask: "Write 'Saucer was here' to out/proof.txt"}
  - expect: "out/proof.txt"
    tool_calls:
      - name: write_file
        arguments: {path: out/proof.txt, content: "Saucer was here\n", create_dirs: true}
  - expect: "bytes_written"
    tool_calls:
      - name: finish_task
        arguments: {result: "written"}
  - expect: "written"
    tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "List out/"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "ls out"}
  - expect: "proof.txt"
    tool_calls:
      - name: finish_task
        arguments: {result: "out/ holds proof.txt"}
  - tool_calls:
      - name: finish_task
        arguments: {result: "Created out/proof.txt; out/ holds proof.txt"}
`

func TestEndToEndToolsMode(t *testing.T) {
	cfg, dir := setup(t, "tools")
	r := runTask(t, context.Background(), cfg, dir, script(t, demoTools), "write proof and list", session.Options{})
	if r.out.Status != fsm.Finish || r.out.Err != nil {
		t.Fatalf("status %s err %v answer %q", r.out.Status, r.out.Err, r.out.Answer)
	}
	got, err := os.ReadFile(filepath.Join(dir, "out", "proof.txt"))
	if err != nil || string(got) != "Saucer was here\n" {
		t.Fatalf("file: %q %v", got, err)
	}
	if r.out.Answer != "Created out/proof.txt; out/ holds proof.txt" {
		t.Errorf("answer %q", r.out.Answer)
	}
	if r.out.Steps != 7 || r.model.Remaining() != 0 {
		t.Errorf("steps %d, script left %d", r.out.Steps, r.model.Remaining())
	}
	// The listing really came from the shell: the model was sent ls's output.
	if !strings.Contains(sentText(r, 5), "proof.txt") {
		t.Errorf("shell output did not reach the model: %s", sentText(r, 5))
	}
	if len(r.out.Subtasks) != 2 || r.out.Subtasks[0].App != "files" || r.out.Subtasks[1].Status != "FINISH" {
		t.Errorf("subtasks %+v", r.out.Subtasks)
	}
	// The app agent was offered its own tools plus finish and fail; the host
	// only its control tools.
	names := func(call int) []string {
		var out []string
		for _, tl := range r.model.Calls()[call].Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := strings.Join(names(0), ","); got != "assign_subtask,finish_task,fail_task,ask_user" {
		t.Errorf("host tools %s", got)
	}
	if got := strings.Join(names(1), ","); !strings.Contains(got, "write_file") || strings.Contains(got, "execute_command") {
		t.Errorf("files app tools %s", got)
	}
}

func TestEndToEndJSONMode(t *testing.T) {
	cfg, dir := setup(t, "json")
	m := script(t, `
replies:
  - json: {thought: "files first", status: ASSIGN, actions: [{function: assign_subtask, arguments: {app: files, subtask: "create a.txt with 'alpha'"}}]}
  - json: {thought: "write", status: CONTINUE, actions: [{function: write_file, arguments: {path: a.txt, content: alpha}}]}
  - json: {thought: "check", status: CONTINUE, actions: [{function: list_dir, arguments: {path: "."}}]}
  - expect: "a.txt"
    json: {thought: "done", status: FINISH, result: "a.txt exists"}
  - json: {status: FINISH, result: "a.txt created"}
`)
	r := runTask(t, context.Background(), cfg, dir, m, "create a.txt", session.Options{})
	if !r.out.OK() {
		t.Fatalf("status %s answer %q err %v", r.out.Status, r.out.Answer, r.out.Err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha" {
		t.Fatalf("a.txt = %q", b)
	}
	// In json mode no native tools are offered and the prompt lists the tools.
	call := r.model.Calls()[1]
	if len(call.Tools) != 0 || !call.JSON {
		t.Errorf("json mode sent tools=%d json=%v", len(call.Tools), call.JSON)
	}
	if !strings.Contains(call.Messages[0].Content, "write_file") {
		t.Errorf("app system prompt does not describe the tools")
	}
	// The list_dir result went back to the model as a user turn.
	if !strings.Contains(sentText(r, 3), `"a.txt"`) {
		t.Errorf("list_dir result missing from prompt: %s", sentText(r, 3))
	}
}

func TestMalformedReplies(t *testing.T) {
	const finish = `  - json: {status: FINISH, result: "ok"}` + "\n"
	cases := []struct {
		name    string
		replies string
		status  fsm.State
		calls   int    // model calls for the app agent's first step
		file    string // content a.txt must have, "" = must not exist
		answer  string // substring of the app note's result
	}{
		{"fenced", "  - text: \"```json\\n{\\\"status\\\":\\\"CONTINUE\\\",\\\"actions\\\":[{\\\"function\\\":\\\"write_file\\\",\\\"arguments\\\":{\\\"path\\\":\\\"a.txt\\\",\\\"content\\\":\\\"x\\\"}}]}\\n```\"\n" + finish, fsm.Finish, 1, "x", "ok"},
		{"think", "  - text: \"<think>I should write.</think>{\\\"status\\\":\\\"CONTINUE\\\",\\\"actions\\\":[{\\\"function\\\":\\\"write_file\\\",\\\"arguments\\\":{\\\"path\\\":\\\"a.txt\\\",\\\"content\\\":\\\"t\\\"}}]}\"\n" + finish, fsm.Finish, 1, "t", "ok"},
		{"truncated", "  - text: '{\"thought\": \"w\", \"status\": \"CONTINUE\", \"actions\": [{\"function\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"tr\"}}], \"plan\": [\"check'\n" +
			"  - expect: \"cut off\"\n    json: {status: FINISH, result: \"ok\"}\n", fsm.Finish, 2, "", "ok"}, // cut after its actions: none of it runs, the model is asked again
		{"garbage then good", "  - text: \"Sure! I will do it now.\"\n  - expect: \"not\"\n    json: {status: CONTINUE, actions: [{function: write_file, arguments: {path: a.txt, content: g}}]}\n" + finish, fsm.Finish, 2, "g", "ok"},
		{"empty then good", "  - error: empty_reply\n  - json: {status: CONTINUE, actions: [{function: write_file, arguments: {path: a.txt, content: e}}]}\n" + finish, fsm.Finish, 2, "e", "ok"},
		{"garbage forever", "  - text: \"no json here\"\n  - text: \"still none\"\n  - text: \"nope\"\n  - text: \"last garbage\"\n", fsm.Fail, 4, "", "last garbage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, dir := setup(t, "json")
			y := "replies:\n  - json: {status: ASSIGN, actions: [{function: assign_subtask, arguments: {app: files, subtask: write a.txt}}]}\n" + c.replies +
				"  - json: {status: FINISH, result: host done}\n"
			if c.status == fsm.Fail {
				y += "" // the host sees the failure and finishes anyway
			}
			r := runTask(t, context.Background(), cfg, dir, script(t, y), "write a.txt", session.Options{})
			if len(r.out.Subtasks) != 1 {
				t.Fatalf("subtasks %+v (outcome %s %q)", r.out.Subtasks, r.out.Status, r.out.Answer)
			}
			note := r.out.Subtasks[0]
			if note.Status != string(c.status) || !strings.Contains(note.Result, c.answer) {
				t.Errorf("note %+v, want %s with %q", note, c.status, c.answer)
			}
			var first agent.Event
			for _, e := range r.events {
				if e.Kind == agent.EventStep && e.Role == fsm.App {
					first = e
					break
				}
			}
			if first.Attempts != c.calls {
				t.Errorf("first app step used %d model calls, want %d", first.Attempts, c.calls)
			}
			b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
			if c.file == "" {
				if err == nil {
					t.Errorf("a.txt exists: %q", b)
				}
			} else if string(b) != c.file {
				t.Errorf("a.txt = %q (%v), want %q", b, err, c.file)
			}
		})
	}
}

func TestToolErrorsGoBackToTheModel(t *testing.T) {
	cfg, dir := setup(t, "tools")
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("secret sauce"), 0o644)
	m := script(t, `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "read in.txt"}}]
  # an unknown tool
  - tool_calls: [{name: red_file, arguments: {path: in.txt}}]
  # bad arguments: path must be a string; then arguments that are not JSON
  - expect: "read_file"
    tool_calls: [{name: read_file, arguments: {path: 42}}]
  - tool_calls: [{name: read_file, arguments: "path=in.txt"}]
  # corrected
  - tool_calls: [{name: read_file, arguments: {path: in.txt}}]
  - expect: "secret sauce"
    tool_calls: [{name: finish_task, arguments: {result: "it says secret sauce"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "in.txt says secret sauce"}}]
`)
	r := runTask(t, context.Background(), cfg, dir, m, "what does in.txt say?", session.Options{})
	if !r.out.OK() || r.out.Answer != "in.txt says secret sauce" {
		t.Fatalf("outcome %s %q %v", r.out.Status, r.out.Answer, r.out.Err)
	}
	var results []command.Result
	for _, e := range r.events {
		if e.Kind == agent.EventStep && e.Role == fsm.App {
			results = append(results, e.Results...)
		}
	}
	if len(results) != 4 {
		t.Fatalf("results %+v", results)
	}
	for i, want := range []string{"read_file", "path", "JSON"} {
		if results[i].Status != command.Failure || !strings.Contains(results[i].Error, want) {
			t.Errorf("result %d = %s %q, want a failure mentioning %q", i, results[i].Status, results[i].Error, want)
		}
	}
	if !results[3].OK() {
		t.Errorf("corrected call failed: %+v", results[3])
	}
	// History sent back to a provider never carries arguments that are not
	// JSON (providers reject them); the result quotes what was sent.
	for _, m := range r.model.Calls()[4].Messages {
		for _, c := range m.ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Errorf("invalid arguments in history: %q", c.Arguments)
			}
		}
	}
	// Each failure reached the model as the answer to its tool call (the
	// turn before the status turn that ends every request).
	for call, want := range map[int]string{2: "read_file", 3: "path", 4: "JSON"} {
		msgs := r.model.Calls()[call].Messages
		last := msgs[len(msgs)-2]
		if last.Role != llm.RoleTool || !strings.Contains(last.Content, want) {
			t.Errorf("call %d: last turn %s %q, want a tool turn with %q", call, last.Role, last.Content, want)
		}
	}
}

func TestCancelStopsBetweenCommands(t *testing.T) {
	cfg, dir := setup(t, "tools")
	m := script(t, `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "three commands"}}]
  - tool_calls:
      - {name: execute_command, arguments: {command: "sleep 0.4; echo one > one.txt"}}
      - {name: execute_command, arguments: {command: "echo two > two.txt"}}
      - {name: execute_command, arguments: {command: "echo three > three.txt"}}
  - tool_calls: [{name: finish_task, arguments: {result: "never reached"}}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled atomic.Bool
	cfgObs := func(e agent.Event) {
		if e.Kind == agent.EventAgentStart && e.Role == fsm.App && !cancelled.Swap(true) {
			time.AfterFunc(150*time.Millisecond, cancel)
		}
	}
	dev, err := local.Device(ctx, cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var steps []agent.Event
	sess, err := session.New(cfg, session.Options{Device: dev, Model: m, Observers: []func(agent.Event){func(e agent.Event) {
		cfgObs(e)
		if e.Kind == agent.EventStep {
			steps = append(steps, e)
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, "run three")
	if !out.Cancelled || out.OK() {
		t.Fatalf("outcome %+v", out)
	}
	if !strings.Contains(out.Answer, "cancel") {
		t.Errorf("answer %q does not report the cancel", out.Answer)
	}
	// The command that was running finished; the others never ran.
	if b, err := os.ReadFile(filepath.Join(dir, "one.txt")); err != nil || string(b) != "one\n" {
		t.Errorf("first command was cut off: %q %v", b, err)
	}
	for _, f := range []string{"two.txt", "three.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: a command ran after the cancel", f)
		}
	}
	var app agent.Event
	for _, e := range steps {
		if e.Role == fsm.App {
			app = e
		}
	}
	if len(app.Results) != 3 || !app.Results[0].OK() || app.Results[1].Status != command.Skipped || app.Results[2].Status != command.Skipped {
		t.Fatalf("results %+v", app.Results)
	}
	if !strings.Contains(app.Results[1].Error, "cancel") {
		t.Errorf("skip reason %q", app.Results[1].Error)
	}
	if m.Remaining() != 1 {
		t.Errorf("the model was asked again after the cancel")
	}
}

// audit is a strategy written outside the strategy package: it counts the
// steps it sees and writes the count on the blackboard.
type audit struct{ seen *atomic.Int32 }

func (audit) Name() string          { return "audit" }
func (audit) Phase() strategy.Phase { return strategy.MemoryUpdate }
func (a audit) Execute(_ context.Context, pc *strategy.Context) error {
	n := a.seen.Add(1)
	pc.Board().Set("audited", string(rune('0'+n)))
	return nil
}

func TestCustomStrategyFromOutside(t *testing.T) {
	cfg, dir := setup(t, "tools")
	var seen atomic.Int32
	reg := strategy.NewRegistry()
	if err := reg.Register("audit", func(map[string]any) (strategy.Strategy, error) { return audit{&seen}, nil }); err != nil {
		t.Fatal(err)
	}
	cfg.Agent.AppStrategies = append(strategy.DefaultPipeline(), strategy.Spec{Name: "audit"})
	m := script(t, `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "say hi"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo hi"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "said hi"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done"}}]
`)
	r := runTask(t, context.Background(), cfg, dir, m, "say hi", session.Options{Registry: reg})
	if !r.out.OK() {
		t.Fatalf("outcome %s %q", r.out.Status, r.out.Answer)
	}
	if seen.Load() != 2 {
		t.Errorf("audit ran %d times, want 2 (the app agent's steps only)", seen.Load())
	}
	// An unknown strategy name is a clear error.
	cfg.Agent.AppStrategies = []strategy.Spec{{Name: "nope"}}
	dev, _ := local.Device(context.Background(), cfg, dir)
	defer dev.Close()
	if _, err := session.New(cfg, session.Options{Device: dev, Model: m, Registry: reg}); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "audit") {
		t.Errorf("unknown strategy error: %v", err)
	}
}

type recordingConfirmer struct {
	answer bool
	asked  [][]command.Command
}

func (c *recordingConfirmer) Confirm(_ context.Context, _ string, cmds []command.Command, _ string) (bool, error) {
	c.asked = append(c.asked, cmds)
	return c.answer, nil
}

func TestConfirmBeforeRunning(t *testing.T) {
	for _, approve := range []bool{false, true} {
		cfg, dir := setup(t, "json")
		m := script(t, `
replies:
  - json: {status: ASSIGN, actions: [{function: assign_subtask, arguments: {app: shell, subtask: "delete junk"}}]}
  - json: {status: CONFIRM, comment: "this deletes a file", actions: [{function: execute_command, arguments: {command: "rm junk.txt"}}]}
  - json: {status: FINISH, result: "handled"}
  - json: {status: FINISH, result: "done"}
`)
		os.WriteFile(filepath.Join(dir, "junk.txt"), []byte("x"), 0o644)
		c := &recordingConfirmer{answer: approve}
		r := runTask(t, context.Background(), cfg, dir, m, "delete junk", session.Options{Confirmer: c})
		if len(c.asked) != 1 || c.asked[0][0].Parameters["command"] != "rm junk.txt" {
			t.Fatalf("approve=%v: asked %+v", approve, c.asked)
		}
		_, err := os.Stat(filepath.Join(dir, "junk.txt"))
		if approve == (err == nil) {
			t.Errorf("approve=%v: junk.txt exists=%v", approve, err == nil)
		}
		var states []fsm.State
		for _, e := range r.events {
			if e.Kind == agent.EventTransition && e.Role == fsm.App {
				states = append(states, e.To)
			}
		}
		if len(states) < 2 || states[0] != fsm.Confirm || states[1] != fsm.Continue {
			t.Errorf("approve=%v: app transitions %v", approve, states)
		}
		if !approve && !strings.Contains(sentText(r, 2), "declined") {
			t.Errorf("the model was not told the user declined")
		}
	}
}

func TestStepLimit(t *testing.T) {
	cfg, dir := setup(t, "tools")
	cfg.Agent.MaxSteps = 2
	m := script(t, `
loop: true
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "loop"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "true"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "true"}}]
  - tool_calls: [{name: fail_task, arguments: {reason: "the app could not finish"}}]
`)
	r := runTask(t, context.Background(), cfg, dir, m, "loop", session.Options{})
	if r.out.Status != fsm.Fail || len(r.out.Subtasks) != 1 || !strings.Contains(r.out.Subtasks[0].Result, "limit of 2 steps") {
		t.Fatalf("outcome %s %q subtasks %+v", r.out.Status, r.out.Answer, r.out.Subtasks)
	}
	if r.out.Answer != "the app could not finish" {
		t.Errorf("answer %q", r.out.Answer)
	}
}

func TestRecordedEventsAreJSON(t *testing.T) {
	// Observers see everything a recorder needs, and it encodes.
	cfg, dir := setup(t, "tools")
	r := runTask(t, context.Background(), cfg, dir, script(t, demoTools), "write proof and list", session.Options{})
	n := 0
	for _, e := range r.events {
		if e.Kind != agent.EventStep {
			continue
		}
		n++
		if len(e.Messages) < 2 || e.Response == nil {
			t.Fatalf("step event without the model exchange: %+v", e)
		}
		if _, err := json.Marshal(e.Results); err != nil {
			t.Fatal(err)
		}
	}
	if n != 7 {
		t.Errorf("%d step events", n)
	}
}
