package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/trajectory"
)

// Issue 36's comparison, end to end through the command line: the
// knowledge suite runs without retrieval, `saucer learn` learns from its
// recordings, and the suite runs again with retrieval. Each case's model
// (scripted: it acts at once only when its prompt names the command that
// worked) is given its own earlier run first, needs fewer calls and
// still passes; `saucer eval compare` shows the fall; and a trial that
// was given knowledge replays exactly after the store is gone.
func TestKnowledgeMakesTheSuiteCheaper(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	t.Setenv("SAUCER_KNOWLEDGE", store)
	suite := "../../evals/testdata/knowledge/suite.yaml"
	without, with := filepath.Join(dir, "without"), filepath.Join(dir, "with")

	if out, code := saucer(t, "eval", suite, "-q", "-o", without, "--knowledge", "on"); code == 0 || !strings.Contains(out, "saucer learn") {
		t.Fatalf("--knowledge on with no store: exit %d, want an error that says how to fill it:\n%s", code, out)
	}
	if out, code := saucer(t, "eval", suite, "-q", "-o", without); code != 0 {
		t.Fatalf("without knowledge (auto, no store yet): exit %d\n%s", code, out)
	}
	if out, code := saucer(t, "learn", filepath.Join(without, "cases")); code != 0 || !strings.Contains(out, "added 10 entries (experience 10") {
		t.Fatalf("learn: exit %d\n%s", code, out)
	}
	if out, code := saucer(t, "eval", suite, "-q", "-o", with, "--knowledge", "on"); code != 0 {
		t.Fatalf("with knowledge: exit %d\n%s", code, out)
	}

	a, b := readReport(t, without), readReport(t, with)
	if a.Metrics.SuccessRate != 1 || b.Metrics.SuccessRate != 1 {
		t.Fatalf("success %v without, %v with; want every case to pass both ways", a.Metrics.SuccessRate, b.Metrics.SuccessRate)
	}
	for i, ca := range a.Cases {
		ta, tb := ca.Trials[0], b.Cases[i].Trials[0]
		if len(ta.Knowledge) != 0 {
			t.Errorf("%s: given %v without a store", ca.ID, ta.Knowledge)
		}
		// The entry the case's own app agent learned is the first it is given.
		own := filepath.Join(without, "cases", ca.ID, "trial-1", "trajectory")
		if len(tb.Knowledge) == 0 || !strings.HasPrefix(tb.Knowledge[0], own+" ") {
			t.Errorf("%s: given %q first, want its own earlier run %s", ca.ID, tb.Knowledge, own)
		}
		if ta.ModelCalls != 5 || tb.ModelCalls != 3 {
			t.Errorf("%s: %d model calls without knowledge and %d with, want 5 and 3", ca.ID, ta.ModelCalls, tb.ModelCalls)
		}
	}

	out, code := saucer(t, "eval", "compare", without, with)
	if code != 0 || !strings.Contains(out, "mean_model_calls") {
		t.Fatalf("compare: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "mean_model_calls" && (f[1] != "5" || f[2] != "3" || f[3] != "-2") {
			t.Errorf("compare says %q, want 5 → 3 (-2)", line)
		}
	}

	// The recording names what was given, and replays exactly without
	// the store: the replay is given what the recording was.
	run := filepath.Join(with, "cases", "rows", "trial-1", "trajectory")
	tr, err := trajectory.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	given := 0
	for _, e := range tr.Events {
		if e.Type == trajectory.TypeStep && e.Knowledge != nil {
			given++
			if !strings.Contains(e.Knowledge.Text, "tail -n +2 data.csv | wc -l") || len(e.Knowledge.Sources) == 0 {
				t.Errorf("%s's recorded knowledge: %+v", e.Agent, e.Knowledge)
			}
		}
	}
	if given != 2 {
		t.Errorf("%d agents' knowledge recorded, want the host's and the app agent's", given)
	}
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if out, code := saucer(t, "replay", run); code != 0 || !strings.Contains(out, "identical") {
		t.Fatalf("replay without the store: exit %d\n%s", code, out)
	}
}

func readReport(t *testing.T, dir string) *evals.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r evals.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// A run that finished with a wrong answer is learned as what not to do:
// an eval trial's checks outweigh its agents' FINISH.
func TestLearnTakesTheChecksWord(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SAUCER_KNOWLEDGE", filepath.Join(dir, "store"))
	rows, err := filepath.Abs("../../evals/testdata/knowledge/rows.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: strict
cases:
  - id: rows
    task: "How many data rows does data.csv have (not counting its header)?"
    model: scripted:`+rows+`
    device: {files: {data.csv: "id,name\n1,ann\n2,bob\n3,cy\n4,dee\n"}}
    checks: [{name: five rows, answer: {number: 5}}]
`), 0o644)
	results := filepath.Join(dir, "results")
	if out, code := saucer(t, "eval", suite, "-q", "-o", results, "--min-success", "1"); code != 1 || !strings.Contains(out, "rows") {
		t.Fatalf("the strict suite: exit %d, want 1 (its check fails)\n%s", code, out)
	}
	out, code := saucer(t, "learn", filepath.Join(results, "cases"))
	if code != 0 || !strings.Contains(out, "experience (failed: what not to do)") {
		t.Fatalf("learn: exit %d, want the run learned as failed\n%s", code, out)
	}
	out, code = saucer(t, "learn", "--search", "data rows of data.csv", "--budget", "2000")
	if code != 0 || !strings.Contains(out, "Outcome: failed (FINISH; the run's checks failed: five rows)") {
		t.Fatalf("search: exit %d, want the failed check named in the entry\n%s", code, out)
	}
}

// knowledge.learn: saucer run learns its run as it ends, and the next run
// is given it.
func TestRunLearnsAsItEnds(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SAUCER_KNOWLEDGE", filepath.Join(dir, "store"))
	cfgFile := filepath.Join(dir, "saucer.yaml")
	os.WriteFile(cfgFile, []byte("knowledge: {learn: true}\n"), 0o644)
	first, second := filepath.Join(dir, "runs1"), filepath.Join(dir, "runs2")
	out, code := saucer(t, append([]string{"--config", cfgFile}, demoArgs(t.TempDir(), "--runs", first)...)...)
	if code != 0 || !strings.Contains(out, "learned 3 entries from this run (knowledge.learn)") {
		t.Fatalf("first run: exit %d, want it learned\n%s", code, out)
	}
	if out, code := saucer(t, append([]string{"--config", cfgFile}, demoArgs(t.TempDir(), "--runs", second)...)...); code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	tr, err := trajectory.Read(onlyRun(t, second))
	if err != nil {
		t.Fatal(err)
	}
	firstRun := onlyRun(t, first)
	for _, e := range tr.Events {
		if e.Type == trajectory.TypeStep && e.Agent == "host" && e.Knowledge != nil {
			if len(e.Knowledge.Sources) == 0 || !strings.HasPrefix(e.Knowledge.Sources[0], firstRun) {
				t.Fatalf("the host was given %q, want the first run first", e.Knowledge.Sources)
			}
			return
		}
	}
	t.Fatal("the second run's host was given nothing of the first")
}
