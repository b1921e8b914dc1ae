package record_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
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

// A held recording writes nothing until Save, and then what Start and the
// same events would have written (times aside).
func TestHeldRecordingSavesWhatStartWrites(t *testing.T) {
	base := t.TempDir()
	session := trajectory.Session{Task: "t", Model: "scripted:x.yaml"}
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
	events := []agent.Event{
		{Kind: agent.EventModelCall, Agent: "host", Role: fsm.Host, Step: 1, Request: req, Response: &llm.Response{Message: llm.Assistant("ok")}},
		{Kind: agent.EventStep, Agent: "host", Role: fsm.Host, Step: 1, To: fsm.Finish, Decision: &strategy.Decision{Status: fsm.Finish, Result: "done"},
			Commands: []command.Command{{ToolName: "x"}}, Results: []command.Result{command.Succeeded("1", "y")}},
	}
	outcome := &agent.Outcome{Status: fsm.Finish, Answer: "done", Steps: 1}
	direct, err := record.Start(filepath.Join(base, "direct"), session, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	held := record.Hold(session, trajectory.Options{})
	for _, r := range []*record.Recorder{direct, held} {
		for _, e := range events {
			r.Observe(e)
		}
		r.Write(trajectory.Event{Type: trajectory.TypeDispatch, Agent: "check", Commands: []command.Command{{ToolName: "cat"}}, Results: []command.Result{command.Succeeded("2", "z")}})
		if err := r.Finish(outcome); err != nil {
			t.Fatal(err)
		}
	}
	heldDir := filepath.Join(base, "held")
	if held.Dir() != "" {
		t.Fatalf("a held recording has a directory before Save: %q", held.Dir())
	}
	if _, err := os.Stat(heldDir); !os.IsNotExist(err) {
		t.Fatalf("a held recording wrote before Save: %v", err)
	}
	if err := held.Save(heldDir); err != nil {
		t.Fatal(err)
	}
	if held.Dir() != heldDir {
		t.Errorf("Dir after Save: %q", held.Dir())
	}
	if err := held.Save(filepath.Join(base, "again")); err == nil {
		t.Error("a second Save was accepted")
	}
	a, err := trajectory.Read(filepath.Join(base, "direct"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := trajectory.Read(heldDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != len(b.Events) || len(b.Events) != 5 {
		t.Fatalf("held recording has %d events, direct %d; want 5 each", len(b.Events), len(a.Events))
	}
	if b.Session().ID != "held" || b.Session().Task != "t" || b.Session().Format != trajectory.Format {
		t.Errorf("held session %+v", b.Session())
	}
	for i := range a.Events {
		x, y := a.Events[i], b.Events[i]
		x.Time, y.Time = time.Time{}, time.Time{}
		if x.Session != nil {
			xs, ys := *x.Session, *y.Session
			xs.ID, ys.ID = "", ""
			x.Session, y.Session = &xs, &ys
		}
		if x.End != nil {
			xe, ye := *x.End, *y.End
			xe.DurationMS, ye.DurationMS = 0, 0
			x.End, y.End = &xe, &ye
		}
		xj, _ := json.Marshal(x)
		yj, _ := json.Marshal(y)
		if string(xj) != string(yj) {
			t.Errorf("event %d differs:\n%s\n%s", i, xj, yj)
		}
	}
}
