package main

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/trajectory"
)

// saucer run --answer-format tells both agents the rule (their first user
// turn, as recorded), keeps it in the recording, and saucer replay asks
// what the run asked.
func TestRunAnswerFormat(t *testing.T) {
	const rule = "the file names in notes/, one a line"
	runs := t.TempDir()
	out, code := saucer(t, demoArgs(t.TempDir(), "--runs", runs, "--answer-format", " "+rule+" ")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	dir := onlyRun(t, runs)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Session().AnswerFormat; got != rule {
		t.Errorf("the recording keeps the format %q, want %q", got, rule)
	}
	agents := map[string]bool{}
	for _, e := range tr.Events {
		if e.Type != trajectory.TypeModelCall {
			continue
		}
		agents[e.Agent] = true
		if intro := e.Call.Request.Messages[1].Content; !strings.Contains(intro, "\n\n## Answer format\n"+rule+"\n") {
			t.Errorf("%s's first user turn lacks the format:\n%s", e.Agent, intro)
		}
	}
	if len(agents) < 2 {
		t.Errorf("model calls by %v, want the host's and an app agent's", agents)
	}
	if out, code := saucer(t, "replay", dir); code != 0 || !strings.Contains(out, "identical to the recording") {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}

	if out, code := saucer(t, demoArgs(t.TempDir(), "--no-record", "--answer-format", "  ")...); code != 2 || !strings.Contains(out, "--answer-format is blank") {
		t.Errorf("a blank --answer-format: exit %d\n%s", code, out)
	}
}
