package record_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
	"github.com/saucerhq/saucer/trajectory/record"
)

func TestRecorder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r, err := record.Start(dir, trajectory.Session{Task: "t", Model: "scripted:x.yaml"}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
	r.Observe(agent.Event{Kind: agent.EventModelCall, Agent: "host", Role: fsm.Host, Step: 1, Request: req, Err: &llm.Error{Kind: llm.KindRateLimit, Message: "429"}})
	r.Observe(agent.Event{Kind: agent.EventModelCall, Agent: "host", Role: fsm.Host, Step: 1, Request: req,
		Response: &llm.Response{Message: llm.Assistant("ok")}, Duration: 1500 * time.Microsecond})
	r.Observe(agent.Event{Kind: agent.EventStep, Agent: "host", Role: fsm.Host, Step: 1, To: fsm.Finish,
		Decision: &strategy.Decision{Status: fsm.Finish, Result: "done", Actions: []strategy.Action{{Function: "x", Arguments: map[string]any{"a": 1.0}}}},
		Commands: []command.Command{{ToolName: "x"}}, Results: []command.Result{command.Succeeded("1", "y")},
		Timings: map[strategy.Phase]time.Duration{strategy.LLMInteraction: 2 * time.Millisecond}, Errors: []error{errors.New("warn")}})
	r.Observe(agent.Event{Kind: agent.EventTransition, Agent: "host", From: fsm.Continue, To: fsm.Finish})
	if err := r.Finish(&agent.Outcome{Status: fsm.Finish, Answer: "done", Steps: 1}); err != nil {
		t.Fatal(err)
	}
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	calls := tr.Calls()
	if len(calls) != 2 || calls[0].N != 1 || calls[0].Error.Kind != "rate_limit" || calls[1].N != 2 || calls[1].LatencyMS != 1.5 {
		t.Errorf("calls %+v", calls)
	}
	st := tr.Of(trajectory.TypeStep)[0]
	if st.Status != "FINISH" || st.Decision.Result != "done" || st.TimingsMS["LLM_INTERACTION"] != 2 || st.Errors[0] != "warn" || st.Decision.Actions[0].Arguments["a"] != 1.0 {
		t.Errorf("step %+v", st)
	}
	if s := tr.Session(); s.ID != "run" || s.Format != trajectory.Format || s.Version == "" {
		t.Errorf("session %+v", s)
	}
	if tr.End().Answer != "done" {
		t.Errorf("end %+v", tr.End())
	}
}

func TestPromptsOfAndNewID(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "app_system.tmpl"), []byte("A"), 0o644)
	a, _ := record.PromptsOf(dir)
	os.WriteFile(filepath.Join(dir, "app_system.tmpl"), []byte("B"), 0o644)
	b, _ := record.PromptsOf(dir)
	if a.Digest == b.Digest || a.Dir != dir {
		t.Errorf("digests %s %s", a.Digest, b.Digest)
	}
	if p, _ := record.PromptsOf(""); p.Digest != "" {
		t.Errorf("built-in prompts: %+v", p)
	}
	id := record.NewID(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	if !regexp.MustCompile(`^20250304-050607-[0-9a-f]{6}$`).MatchString(id) {
		t.Errorf("id %s", id)
	}
}
