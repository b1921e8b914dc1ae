package evals_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

func runSuite(t *testing.T, file, results string, opts evals.Options) (*evals.Report, error) {
	t.Helper()
	s, err := evals.LoadSuite(file)
	if err != nil {
		t.Fatal(err)
	}
	opts.Results = results
	if opts.Jobs == 0 {
		opts.Jobs = 4
	}
	return evals.Run(context.Background(), s, opts)
}

func TestSuiteWithEveryChecker(t *testing.T) {
	dir := t.TempDir()
	rep, err := runSuite(t, "testdata/checkers.yaml", dir, evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		successes int
		failure   string
	}{
		"write-hello":             {2, ""},
		"count-files":             {1, ""},
		"wrong-answer":            {0, evals.FailCheckerFailed},
		"extra-calls":             {0, evals.FailCheckerFailed},
		"infeasible":              {1, ""},
		"infeasible-but-finished": {0, evals.FailExpectedFail},
		"loops-forever":           {0, evals.FailMaxSteps},
		"slow-model":              {0, evals.FailTimeout},
		"token-hungry":            {0, evals.FailTokenLimit},
	}
	for _, c := range rep.Cases {
		w := want[c.ID]
		if c.Successes != w.successes {
			t.Errorf("%s: %d successes, want %d", c.ID, c.Successes, w.successes)
		}
		for _, tr := range c.Trials {
			if tr.Failure != w.failure {
				t.Errorf("%s #%d: failure %q (%s), want %q", c.ID, tr.Trial, tr.Failure, tr.Detail, w.failure)
			}
		}
	}
	byID := map[string]evals.CaseReport{}
	for _, c := range rep.Cases {
		byID[c.ID] = c
	}
	// Every check of the passing case passed, the judge's verdict is kept.
	hello := byID["write-hello"].Trials[0]
	if len(hello.Checks) != 7 {
		t.Fatalf("write-hello checks: %+v", hello.Checks)
	}
	if v := hello.Checks[6].Verdict; v == nil || !v.Pass || v.Score != 0.9 || !strings.Contains(v.Reason, "holds hello") {
		t.Errorf("judge verdict %+v", v)
	}
	wrong := byID["wrong-answer"].Trials[0]
	if wrong.Checks[0].Pass || wrong.Checks[1].Pass || wrong.Checks[1].Verdict == nil || wrong.Checks[1].Verdict.Score != 0.1 {
		t.Errorf("wrong-answer checks %+v", wrong.Checks)
	}
	if d := byID["extra-calls"].Trials[0].Detail; !strings.Contains(d, "files.write_file") || !strings.Contains(d, "not among the expected") {
		t.Errorf("extra-calls detail %q", d)
	}
	m := rep.Metrics
	if m.Trials != 10 || m.Successes != 4 || math.Abs(m.SuccessRate-0.4) > 1e-9 || m.Cases != 9 {
		t.Errorf("metrics %+v", m)
	}
	// pass@1 averages per-case rates: (1+1+1)/9; pass@2 only write-hello.
	if math.Abs(m.PassAtK[1]-3.0/9) > 1e-9 || m.PassAtK[2] != 1 || m.PassHatK[2] != 1 {
		t.Errorf("pass@k %v pass^k %v", m.PassAtK, m.PassHatK)
	}
	if m.Failures[evals.FailCheckerFailed] != 2 || m.Failures[evals.FailTimeout] != 1 || m.Failures[evals.FailMaxSteps] != 1 {
		t.Errorf("failures %v", m.Failures)
	}
	if m.CostUSD == nil || *m.CostUSD != 0 || m.Tokens.Prompt == 0 || m.StepSuccess <= 0 || m.StepSuccess > 1 || m.MeanSteps == 0 {
		t.Errorf("cost %v tokens %+v step success %v", m.CostUSD, m.Tokens, m.StepSuccess)
	}
	for _, ph := range []string{"SETUP", "CHECK", "LLM_INTERACTION", "ACTION_EXECUTION"} {
		if _, ok := m.PhaseMS[ph]; !ok {
			t.Errorf("no wall time for phase %s: %v", ph, m.PhaseMS)
		}
	}
	// Reports.
	if err := evals.WriteReports(rep, dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| success rate | 40.0% (4/10 trials, 9 cases) |", "| write-hello | 2/2 |", "- timeout: 1", "**slow-model #1** (timeout)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Type string `xml:"type,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err := xml.Unmarshal(b, &junit); err != nil || junit.Tests != 10 || junit.Failures != 6 || len(junit.Suites) != 9 {
		t.Errorf("junit: %v %+v", err, junit)
	}
	// Each trial left a readable trajectory with its checks recorded.
	tr := readTrajectory(t, filepath.Join(dir, hello.Trajectory))
	var checks, judge int
	for _, e := range tr.Events {
		switch e.Agent {
		case "check":
			checks++
		case "judge":
			judge++
		}
	}
	if checks != 3 || judge != 1 {
		t.Errorf("recorded %d check dispatches and %d judge calls", checks, judge)
	}
}

func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		at, hat float64
	}{
		{10, 0, 1, 0, 0}, {10, 10, 5, 1, 1}, {10, 5, 1, 0.5, 0.5},
		{5, 2, 2, 1 - 3.0/10, 1.0 / 10}, // C(3,2)/C(5,2) = 3/10; C(2,2)/C(5,2) = 1/10
		{4, 3, 2, 1, 0.5},               // C(1,2)=0; C(3,2)/C(4,2)=3/6
		{3, 1, 4, 0, 0},                 // k > n
	} {
		if got := evals.PassAtK(c.n, c.c, c.k); math.Abs(got-c.at) > 1e-12 {
			t.Errorf("pass@%d(n=%d,c=%d) = %v, want %v", c.k, c.n, c.c, got, c.at)
		}
		if got := evals.PassHatK(c.n, c.c, c.k); math.Abs(got-c.hat) > 1e-12 {
			t.Errorf("pass^%d(n=%d,c=%d) = %v, want %v", c.k, c.n, c.c, got, c.hat)
		}
	}
}

// stable is a report without its timings, for comparing runs.
func stable(t *testing.T, r *evals.Report) string {
	t.Helper()
	r.Metrics.WallMS, r.Metrics.PhaseMS = 0, nil
	for _, c := range r.Cases {
		for _, tr := range c.Trials {
			tr.WallMS, tr.PhaseMS = 0, nil
			if tr.Failure == evals.FailTimeout {
				// Whether the model was asked before a trial's time ran
				// out depends on how busy the machine is.
				tr.ModelCalls = 0
			}
			tr.Detail = strings.Join(strings.Fields(strings.Split(tr.Detail, "/tmp/")[0]), " ")
		}
	}
	b, _ := json.MarshalIndent(r, "", " ")
	return string(b)
}

func TestInterruptAndResume(t *testing.T) {
	full, err := runSuite(t, "testdata/checkers.yaml", t.TempDir(), evals.Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, _ := evals.LoadSuite("testdata/checkers.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int32
	var sawETA atomic.Bool
	_, err = evals.Run(ctx, s, evals.Options{Results: dir, Jobs: 1, Progress: func(p evals.Progress) {
		if p.Done < p.Total && p.ETA > 0 {
			sawETA.Store(true)
		}
		if done.Add(1) == 3 {
			cancel()
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "interrupted after 3 of 10") {
		t.Fatalf("interrupted run: %v", err)
	}
	if !sawETA.Load() {
		t.Error("progress never gave an ETA")
	}
	var resumed atomic.Int32
	rep, err := evals.Run(context.Background(), s, evals.Options{Results: dir, Jobs: 2, Progress: func(p evals.Progress) { resumed.Store(int32(p.Resumed)) }})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Load() != 3 {
		t.Errorf("resumed %d trials, want 3", resumed.Load())
	}
	if a, b := stable(t, full), stable(t, rep); a != b {
		t.Errorf("resumed report differs from an uninterrupted one:\n%s", trajectoryDiff(a, b))
	}
	// Another model for the same results directory is refused.
	_, err = evals.Run(context.Background(), s, evals.Options{Results: dir, Model: "scripted:testdata/scripts/count.yaml"})
	if err == nil || !strings.Contains(err.Error(), "another suite or other options") {
		t.Errorf("changed options: %v", err)
	}
}

func TestSuiteValidation(t *testing.T) {
	for name, yaml := range map[string]string{
		"no cases":       "name: x\n",
		"unknown key":    "name: x\ncases: [{id: a, task: t, colour: red}]\n",
		"two kinds":      "name: x\ncases: [{id: a, task: t, checks: [{answer: {contains: a}, judge: {rubric: r}}]}]\n",
		"bad match":      "name: x\ncases: [{id: a, task: t, checks: [{tool_calls: {match: some, calls: []}}]}]\n",
		"duplicate id":   "name: x\ncases: [{id: a, task: t}, {id: a, task: t}]\n",
		"replay no rec":  "name: x\nmodel: replay\ncases: [{id: a, task: t}]\n",
		"judge no model": "name: x\ncases: [{id: a, task: t, checks: [{judge: {rubric: r}}]}]\n",
		"bad regex":      "name: x\ncases: [{id: a, task: t, checks: [{answer: {regex: \"(\"}}]}]\n",
	} {
		if _, err := evals.ParseSuite([]byte(yaml)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A suite's unknown key is named by its path in the suite, with its line
// and the key meant.
func TestSuiteUnknownKeyInItsWords(t *testing.T) {
	_, err := evals.ParseSuite([]byte("name: x\ncases:\n  - id: a\n    task: t\n    limts: {timeout: 5s}\n"))
	want := `unknown key "cases[0].limts" at line 5; did you mean "cases[0].limits"?`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// Trials on one recorded device record the config each ran with: the
// recording's, with the case's own limits.
func TestRecordedTrialsKeepTheirOwnConfig(t *testing.T) {
	dir := t.TempDir()
	steps := []int{0, 5, 0, 6, 5}
	file := writeReplaySuite(t, dir, "configs", len(steps), func(i int) string {
		return fmt.Sprintf("    task: %q\n    limits: {max_steps: %d}\n    checks:\n      - {answer: {contains: \"Hello from Saucer\"}}\n", demoTask, steps[i])
	})
	suite, err := evals.LoadSuite(file)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evals.Run(context.Background(), suite, evals.Options{Results: filepath.Join(dir, "results"), Jobs: 2})
	// Other limits change the prompts ("Step 1 of 5"): those replays
	// diverge, the others pass.
	if err != nil || rep.Metrics.Successes != 3 || rep.Metrics.Failures["replay_divergence"] != 2 {
		t.Fatalf("%v %+v", err, rep.Metrics)
	}
	for i, steps := range []int{6, 5, 6, 6, 5} { // 6 is the recording's own
		tr, err := trajectory.Read(filepath.Join(dir, "results", "cases", fmt.Sprintf("c%d", i), "trial-1", "trajectory"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.FromYAML([]byte(tr.Session().Config))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Agent.MaxSteps != steps || cfg.Agent.MaxRounds != 4 || cfg.Model != "scripted:../examples/demo.yaml" {
			t.Errorf("case c%d recorded max_steps %d, max_rounds %d, model %q; want %d, 4 and the recording's model", i, cfg.Agent.MaxSteps, cfg.Agent.MaxRounds, cfg.Model, steps)
		}
	}
}

// Trials' recordings are redacted with the default patterns when the run
// names no redactor: a key in a task never reaches the disk.
func TestTrialRecordingsAreRedactedByDefault(t *testing.T) {
	dir := t.TempDir()
	const key = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123"
	file := writeReplaySuite(t, dir, "secrets", 3, func(int) string {
		return fmt.Sprintf("    task: %q\n    checks:\n      - {answer: {contains: \"Hello\"}}\n", demoTask+" with the key "+key)
	})
	if _, err := runSuite(t, file, filepath.Join(dir, "results"), evals.Options{Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b, err := os.ReadFile(filepath.Join(dir, "results", "cases", fmt.Sprintf("c%d", i), "trial-1", "trajectory", trajectory.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) || !strings.Contains(string(b), "with the key "+trajectory.Redacted) {
			t.Errorf("case c%d: the key was not redacted from its recording", i)
		}
	}
}

// A suite that only replays recordings runs a trial per CPU when no
// number of jobs is given: two trials' host agents are running at once
// (the first to start waits for a second, which with one job at a time
// never comes).
func TestReplaySuiteRunsATrialPerCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	dir := t.TempDir()
	file := writeReplaySuite(t, dir, "parallel", 6, func(int) string {
		return fmt.Sprintf("    task: %q\n    checks:\n      - {answer: {contains: \"Hello\"}}\n", demoTask)
	})
	var mu sync.Mutex
	started, both := 0, make(chan struct{})
	waited := false
	observe := func(e agent.Event) {
		if e.Kind != agent.EventAgentStart || e.Agent != "host" {
			return
		}
		mu.Lock()
		started++
		first := started == 1
		if started == 2 {
			close(both)
		}
		mu.Unlock()
		if first {
			select {
			case <-both:
				waited = true
			case <-time.After(30 * time.Second):
			}
		}
	}
	opts := evals.Options{Results: filepath.Join(dir, "results"), Session: session.Options{Observers: []func(agent.Event){observe}}}
	suite, err := evals.LoadSuite(file)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evals.Run(context.Background(), suite, opts)
	if err != nil || rep.Metrics.Successes != 6 {
		t.Fatalf("%v %+v", err, rep.Metrics)
	}
	if !waited {
		t.Fatal("no two trials ran at once")
	}
}

// A trial that replays its recording exactly writes no trajectory of its
// own: its result names the recording, which the HTML report walks. A
// trial that does anything else (here a changed task, so the first
// request differs; and a recording whose check commands the case does
// not run) keeps its own trajectory, holding what it did.
func TestExactReplayNamesItsRecording(t *testing.T) {
	dir := t.TempDir()
	rec := helloRecording(t)
	const state = "      - {state: {run: \"cat notes/hello.txt\", output: \"Hello from Saucer\"}}\n"
	cases := []struct{ task, checks string }{
		{demoTask, state},          // exact
		{demoTask + " now", state}, // diverges at the first request
		{demoTask, ""},             // the recorded check's command is not run
	}
	file := writeReplaySuite(t, dir, "exact", len(cases), func(i int) string {
		return fmt.Sprintf("    task: %q\n    checks:\n%s      - {answer: {contains: \"Hello from Saucer\"}}\n", cases[i].task, cases[i].checks)
	})
	results := filepath.Join(dir, "results")
	rep, err := runSuite(t, file, results, evals.Options{Jobs: 2})
	if err != nil || rep.Metrics.Successes != 2 || rep.Metrics.Failures["replay_divergence"] != 1 {
		t.Fatalf("%v %+v", err, rep.Metrics)
	}
	for i, c := range rep.Cases {
		tr := c.Trials[0]
		own := filepath.Join(results, "cases", c.ID, "trial-1", "trajectory")
		_, statErr := os.Stat(own)
		if i == 0 {
			if !tr.IsRecording || tr.Trajectory != filepath.ToSlash(rec) || tr.TrajectoryPath(results) != rec || !os.IsNotExist(statErr) {
				t.Errorf("case %s: trajectory %q (is the recording: %v), own copy: %v; want the recording and no copy", c.ID, tr.Trajectory, tr.IsRecording, statErr)
			}
			continue
		}
		if tr.IsRecording || tr.TrajectoryPath(results) != own {
			t.Errorf("case %s: trajectory %q (is the recording: %v); want its own", c.ID, tr.Trajectory, tr.IsRecording)
		}
		got, err := trajectory.Read(own)
		if err != nil {
			t.Fatalf("case %s: %v", c.ID, err)
		}
		if got.Session().Task != cases[i].task || got.End() == nil || got.Session().ID != "trajectory" {
			t.Errorf("case %s: its trajectory holds the task %q, end %v, id %q", c.ID, got.Session().Task, got.End(), got.Session().ID)
		}
	}
	// The report walks the exact trial's steps from the recording.
	var html strings.Builder
	if err := rep.WriteHTML(&html, results); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html.String(), "no such file") {
		t.Error("the HTML report could not read a trial's trajectory")
	}
}

// Finished trials go into one file, a line each, and running again
// resumes from it: a line cut short by a crash is a trial to run again.
// Trials with nothing of their own to keep make no folders at all.
func TestTrialsFileResumes(t *testing.T) {
	dir := t.TempDir()
	file := writeReplaySuite(t, dir, "trials", 3, func(int) string {
		return fmt.Sprintf("    task: %q\n    checks:\n      - {state: {run: \"cat notes/hello.txt\", output: \"Hello from Saucer\"}}\n", demoTask)
	})
	results := filepath.Join(dir, "results")
	var mu sync.Mutex
	ran := 0
	count := func(e agent.Event) {
		if e.Kind == agent.EventAgentStart && e.Agent == "host" {
			mu.Lock()
			ran++
			mu.Unlock()
		}
	}
	opts := evals.Options{Jobs: 2, Session: session.Options{Observers: []func(agent.Event){count}}}
	if rep, err := runSuite(t, file, results, opts); err != nil || rep.Metrics.Successes != 3 {
		t.Fatalf("%v %+v", err, rep.Metrics)
	}
	if _, err := os.Stat(filepath.Join(results, "cases")); !os.IsNotExist(err) {
		t.Errorf("exact replays made folders: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(results, evals.TrialsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || ran != 3 {
		t.Fatalf("%d lines in %s after %d trials; want 3 and 3", len(lines), evals.TrialsFile, ran)
	}
	// A crash while the second line was being appended: the first trial
	// is kept, the other two run again.
	torn := lines[0] + lines[1][:len(lines[1])/2]
	if err := os.WriteFile(filepath.Join(results, evals.TrialsFile), []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	ran = 0
	rep, err := runSuite(t, file, results, opts)
	if err != nil || rep.Metrics.Successes != 3 || ran != 2 {
		t.Fatalf("resumed: %v %+v, %d trials run again; want 3 successes, 2 run", err, rep.Metrics, ran)
	}
	ran = 0
	if rep, err := runSuite(t, file, results, opts); err != nil || rep.Metrics.Successes != 3 || ran != 0 {
		t.Fatalf("resumed a finished run: %v %+v, %d trials run again; want none", err, rep.Metrics, ran)
	}
}
