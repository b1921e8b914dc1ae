package session_test

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
)

// runDemoWithFormat runs the demo task with an answer format given next to
// the request and returns the requests the model got.
func runDemoWithFormat(t *testing.T, format string) []llm.Request {
	t.Helper()
	model, err := scripted.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if out := runLocal(t, cfg, t.TempDir(), session.Options{Model: model, AnswerFormat: format}, demoTask); !out.OK() {
		t.Fatalf("demo: %s %s", out.Status, out.Answer)
	}
	return model.Calls()
}

// The answer format reaches both agents' requests as a section of their
// first user turn, right after the request, the same in every request of
// an agent (a prompt cache holds it); the host's system prompt ties
// finish_task to it. Without a format, the requests are the demo's
// (TestLivePrompt's golden file holds those).
func TestAnswerFormatReachesBothAgents(t *testing.T) {
	const rule = "the names of the files in notes/, one a line, nothing else"
	section := "## User request\n" + demoTask + "\n\n## Answer format\n" + rule + "\n"
	calls := runDemoWithFormat(t, rule)
	first := map[string]string{}
	for i, r := range calls {
		who := agentOf(r)
		intro := r.Messages[1].Content
		if !strings.HasPrefix(intro, section) {
			t.Errorf("call %d (%s): the first user turn does not state the format after the request:\n%s", i+1, who, intro)
		}
		if prev, ok := first[who]; ok && prev != intro {
			t.Errorf("call %d (%s): the first user turn changed between requests", i+1, who)
		}
		first[who] = intro
		if last := r.Messages[len(r.Messages)-1].Content; strings.Contains(last, rule) && len(r.Messages) > 2 {
			t.Errorf("call %d (%s): the format is in the status turn, which changes every step", i+1, who)
		}
		finish := "finish_task(result) ends the task with the final answer for the user, in the answer format."
		if sys := r.Messages[0].Content; (who == "host") != strings.Contains(sys, finish) {
			t.Errorf("call %d (%s): the system prompt's finish_task guidance is wrong:\n%s", i+1, who, sys)
		}
	}
	if _, ok := first["host"]; !ok || len(first) < 2 {
		t.Fatalf("the run's requests came from %v, want the host and an app agent", first)
	}

	for i, r := range runDemoWithFormat(t, "") {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "Answer format") || strings.Contains(m.Content, "in the answer format") {
				t.Fatalf("call %d without a format mentions one:\n%s", i+1, m.Content)
			}
		}
	}
}
