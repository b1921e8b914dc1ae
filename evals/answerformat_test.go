package evals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/trajectory"
)

func TestCaseFormat(t *testing.T) {
	four, text := 4.0, "log"
	number := evals.Check{Answer: &evals.AnswerCheck{Number: &four}}
	exact := evals.Check{Answer: &evals.AnswerCheck{Exact: &text}}
	contains := evals.Check{Answer: &evals.AnswerCheck{Contains: "x"}}
	state := evals.Check{State: &evals.StateCheck{Run: "true"}}
	for _, c := range []struct {
		c    evals.Case
		want string
	}{
		{evals.Case{AnswerFormat: " yes or no "}, "yes or no"},
		{evals.Case{AnswerFormat: "yes or no", Checks: []evals.Check{number}}, "yes or no"},
		{evals.Case{Checks: []evals.Check{state, number}}, evals.NumberFormat},
		{evals.Case{Checks: []evals.Check{exact, number}}, evals.ExactFormat},
		{evals.Case{Checks: []evals.Check{contains, state}}, ""},
		{evals.Case{ExpectFail: true, Checks: []evals.Check{exact}}, ""},
		{evals.Case{ExpectFail: true, AnswerFormat: "the reason"}, "the reason"},
	} {
		if got := c.c.Format(); got != c.want {
			t.Errorf("%+v: format %q, want %q", c.c, got, c.want)
		}
	}
	if _, err := evals.ParseSuite([]byte("name: s\ncases:\n  - {id: a, task: t, answer_format: \"  \"}\n")); err == nil ||
		!strings.Contains(err.Error(), "answer_format is blank") {
		t.Errorf("a blank answer_format: %v", err)
	}
}

// A case's answer format, its own or the one its number check implies,
// reaches both agents' requests through the session; a case with neither
// says nothing of a format. The trial's recording keeps the format, so a
// replay of it (saucer replay, a replay case) asks what was asked.
func TestAnswerFormatReachesTheAgents(t *testing.T) {
	dir := t.TempDir()
	script, err := os.ReadFile("testdata/scripts/count.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const rule = "a single integer, digits only, no words"
	cases := map[string]struct{ extra, format string }{
		"own":     {"    answer_format: " + rule + "\n    checks: [{answer: {number: 3}}]\n", rule},
		"implied": {"    checks: [{answer: {number: 3}}]\n", evals.NumberFormat},
		"none":    {"    checks: [{answer: {contains: \"3\"}}]\n", ""},
	}
	var suite strings.Builder
	suite.WriteString("name: formats\ndefaults: {max_steps: 5, max_rounds: 4, timeout: 20s}\ncases:\n")
	for id, c := range cases {
		if err := os.WriteFile(filepath.Join(dir, id+".yaml"), script, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&suite, "  - id: %s\n    task: How many files are in this folder?\n    model: scripted:%s.yaml\n    device: {files: {a.txt: \"1\", b.txt: \"2\", c.txt: \"3\"}}\n%s", id, id, c.extra)
	}
	file := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(file, []byte(suite.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	models := map[string]*scripted.Model{}
	open := func(spec string) (llm.Model, error) {
		m, err := scripted.Load(strings.TrimPrefix(spec, "scripted:"))
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		models[strings.TrimSuffix(filepath.Base(spec), ".yaml")] = m
		return m, nil
	}
	results := filepath.Join(dir, "results")
	rep, err := runSuite(t, file, results, evals.Options{OpenModel: open})
	if err != nil || rep.Metrics.Successes != 3 {
		t.Fatalf("%v %+v", err, rep.Metrics)
	}
	for id, c := range cases {
		calls := models[id].Calls()
		agents := map[bool]bool{}
		for i, r := range calls {
			intro := r.Messages[1].Content
			agents[strings.Contains(intro, "## Your subtask")] = true
			has := strings.Contains(intro, "\n\n## Answer format\n"+c.format+"\n")
			if c.format == "" {
				has = strings.Contains(intro, "Answer format")
			}
			if has != (c.format != "") {
				t.Errorf("case %s, call %d: the first user turn, for the format %q:\n%s", id, i+1, c.format, intro)
			}
		}
		if len(agents) != 2 {
			t.Errorf("case %s: the requests did not come from both agents", id)
		}
		tr, err := trajectory.Read(filepath.Join(results, "cases", id, "trial-1", "trajectory"))
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.Session().AnswerFormat; got != c.format {
			t.Errorf("case %s: the recording keeps the format %q, want %q", id, got, c.format)
		}
		if c.format == "" {
			continue
		}
		res, err := evals.Replay(context.Background(), tr, evals.ReplayOptions{})
		if err != nil || res.Diverged() {
			t.Errorf("case %s: its replay diverged (%v):\n%s", id, err, res.Report())
		}
		// Told no format, the replay asks otherwise than the recording.
		tr.Session().AnswerFormat = ""
		if res, err := evals.Replay(context.Background(), tr, evals.ReplayOptions{}); err != nil || len(res.ModelDivergences) == 0 {
			t.Errorf("case %s: a replay without the format did not diverge (%v)", id, err)
		}
	}

	// A replay case on the recording is given the recorded format, whatever
	// its checks imply.
	rec := filepath.Join(results, "cases", "own", "trial-1", "trajectory")
	replaySuite := fmt.Sprintf("name: again\nmodel: replay\ncases:\n  - id: again\n    task: How many files are in this folder?\n    device: {recording: %q}\n    checks: [{answer: {exact: \"There are 3 files.\"}}]\n", rec)
	again := filepath.Join(dir, "again.yaml")
	if err := os.WriteFile(again, []byte(replaySuite), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = runSuite(t, again, filepath.Join(dir, "again-results"), evals.Options{})
	if err != nil || rep.Metrics.Successes != 1 {
		t.Fatalf("replaying the recording with its format: %v %+v %+v", err, rep.Metrics, rep.Cases[0].Trials[0])
	}
}
