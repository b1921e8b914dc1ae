package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// A user's strategy that panics, or returns an error, fails its step with
// an error that names it; the host agent is told, the session goes on, and
// the recording keeps the failure.
func TestFaultyStrategy(t *testing.T) {
	for name, fn := range map[string]func() error{
		"panics":  func() error { var m map[string]int; m["x"] = 1; return nil },
		"returns": func() error { return errors.New("the audit log is full") },
	} {
		t.Run(name, func(t *testing.T) {
			want := map[string]string{"panics": `strategy "audit": panicked: assignment to entry in nil map`,
				"returns": `strategy "audit": the audit log is full`}[name]
			reg := strategy.NewRegistry()
			reg.Register("audit", func(map[string]any) (strategy.Strategy, error) {
				return strategy.Func("audit", strategy.MemoryUpdate, func(context.Context, *strategy.Context) error { return fn() }), nil
			})
			script, err := scripted.Parse([]byte(`
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "say hi"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo hi > hi.txt"}}]
  - expect: '`+want+`'
    tool_calls: [{name: fail_task, arguments: {reason: "the audit strategy failed"}}]
`), "yaml")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			cfg := config.Default()
			cfg.Agent.RetryBackoff = config.Duration(1)
			rec, err := record.Start(t.TempDir(), trajectory.Session{Task: "say hi", Model: "scripted:x"}, trajectory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out := runLocal(t, cfg, dir, session.Options{Model: scripted.New(*script), Registry: reg,
				AppEdits: []strategy.Edit{{After: strategy.Remember, Spec: strategy.Spec{Name: "audit"}}}, Observers: []func(agent.Event){rec.Observe}}, "say hi")
			if err := rec.Finish(out); err != nil {
				t.Fatal(err)
			}
			if out.OK() || !strings.Contains(out.Answer, "audit strategy failed") {
				t.Errorf("outcome %+v", out)
			}
			// The command ran before the strategy failed, and stays done.
			if b, _ := os.ReadFile(filepath.Join(dir, "hi.txt")); string(b) != "hi\n" {
				t.Errorf("hi.txt: %q", b)
			}
			tr, err := trajectory.Read(rec.Dir())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range tr.Events {
				if e.Type == trajectory.TypeStep && strings.Contains(e.Error, want) {
					found = true
				}
			}
			if !found {
				t.Errorf("the recording has no step failing with %q", want)
			}
		})
	}
}

func TestBadPromptTemplates(t *testing.T) {
	for name, tt := range map[string]struct{ file, text, want string }{
		"syntax":          {"app_user.tmpl", "{{.Request", `mine/app_user.tmpl`},
		"missing field":   {"notes.tmpl", "{{range .}}{{.Colour}}{{end}}", `can't evaluate field Colour`},
		"missing partial": {"host_user.tmpl", `{{template "nowhere" .}}`, `uses template "nowhere", which is not defined`},
	} {
		_, err := prompts.LoadFS(fstest.MapFS{tt.file: {Data: []byte(tt.text)}}, "mine")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mine/"+tt.file) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBadPipelineEdits(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.AppEdits = []strategy.Edit{{After: "observ", Spec: strategy.Spec{Name: "clock"}}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `agent.app_edits: strategy edit #1 (after "observ"): no strategy "observ" in the pipeline (discover, ask, execute, remember)`) {
		t.Errorf("validate: %v", err)
	}
	cfg.Agent.AppEdits = []strategy.Edit{{After: "ask", Replace: "ask", Spec: strategy.Spec{Name: "clock"}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "set exactly one of before, after, replace and remove (2 are set)") {
		t.Errorf("two targets: %v", err)
	}
}
