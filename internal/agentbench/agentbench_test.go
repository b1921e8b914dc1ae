package agentbench_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/agentbench"
	"github.com/saucerhq/saucer/internal/sandboxtest"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/provider"
)

const (
	devJSON = "../../testdata/agentbench-os/dev.json"
	// bench is synthetic tasks in the benchmark's layout and shapes.
	bench = "testdata/os_interaction"
)

func importSuite(t *testing.T, opts agentbench.Options) (*agentbench.Result, *evals.Suite) {
	t.Helper()
	if opts.Out == "" {
		opts.Out = t.TempDir()
	}
	res, err := agentbench.Import(opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := evals.LoadSuite(res.Suite)
	if err != nil {
		t.Fatalf("the imported suite does not load: %v", err)
	}
	return res, s
}

func byID(s *evals.Suite) map[string]evals.Case {
	m := map[string]evals.Case{}
	for _, c := range s.Cases {
		m[c.ID] = c
	}
	return m
}

func TestImportDev(t *testing.T) {
	res, s := importSuite(t, agentbench.Options{Paths: []string{devJSON}})
	if res.Tasks != 26 || len(s.Cases) != 26 || s.Name != "agentbench-os-dev" {
		t.Fatalf("%d tasks, %d cases, suite %s", res.Tasks, len(s.Cases), s.Name)
	}
	cases := byID(s)
	// A match task: exact answer; its init is setup, its background writer
	// the start script in the agent's persistent shell; it writes to /root.
	c := cases["dev-001"]
	if len(c.Checks) != 1 || c.Checks[0].Answer == nil || *c.Checks[0].Answer.Exact != "log" || len(c.Device.Setup) != 1 ||
		!strings.Contains(c.Device.Start, "python3 -c") || !c.Device.PersistentShell || !slices.Contains(c.Labels, "needs-root") ||
		!slices.Contains(c.Labels, "process") {
		t.Errorf("dev-001: %+v", c)
	}
	// A check list: null is the example, then the python checker from its
	// file, run by python3.
	p := cases["dev-013"].Checks[0].State.Pipeline
	if len(p) != 2 || p[0] != (evals.Script{Code: "nproc"}) || p[1].Language != evals.LangPython || !strings.Contains(p[1].Code, "from sys import argv") ||
		!slices.Contains(cases["dev-013"].Labels, "no-root") {
		t.Errorf("dev-013: %+v", cases["dev-013"])
	}
	// A single check script from its file; init from a file; init given as
	// bare text inside create.
	if p := cases["dev-003"].Checks[0].State.Pipeline; len(p) != 1 || !strings.Contains(p[0].Code, `calc "${expression}"`) {
		t.Errorf("dev-003 check: %+v", p)
	}
	if setup := cases["dev-025"].Device.Setup; len(setup) != 1 || !strings.Contains(setup[0].Code, "/usr/stock.log") {
		t.Errorf("dev-025 setup %v", setup)
	}
	if setup := cases["dev-021"].Device.Setup; len(setup) != 1 || !strings.Contains(setup[0].Code, "/root/1.helloworld") {
		t.Errorf("dev-021 setup %v", setup)
	}
	// The example next to the evaluation, not in it.
	if ex, _ := os.ReadFile(filepath.Join(filepath.Dir(res.Suite), "examples", "dev-024.sh")); string(ex) != "chmod 777 test && ~/test" {
		t.Errorf("dev-024 example %q", ex)
	}
	var noRoot []string
	for _, c := range s.Cases {
		if slices.Contains(c.Labels, "no-root") {
			noRoot = append(noRoot, c.ID)
		}
	}
	if want := []string{"dev-010", "dev-013", "dev-014", "dev-015", "dev-016", "dev-017", "dev-022", "dev-023"}; res.NoRoot != 8 || !slices.Equal(noRoot, want) {
		t.Errorf("no-root tasks %v, want %v", noRoot, want)
	}
	// The four match tasks without an example say so.
	if len(res.Warnings) != 4 || !strings.Contains(res.Warnings[0], "dev-000") || !strings.Contains(res.Warnings[0], "no example solution") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// The benchmark's own layout: data/N/*.json with scripts/N/, data/dev2.json
// with scripts/dev2/, in every shape a task file takes.
func TestImportBenchmarkLayout(t *testing.T) {
	res, s := importSuite(t, agentbench.Options{Paths: []string{filepath.Join(bench, "data")}})
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
	}
	// data/5/new.json and data/6/new.json stay apart; a file with one task
	// object; JSON Lines; a per-file script folder.
	want := []string{"5-new-000", "5-new-001", "5-new-002", "5-new-003", "5-new-004", "5-new-005", "6-new-000", "7-lines-000", "7-lines-001", "dev2-000", "dev2-001", "dev2-002"}
	if !slices.Equal(ids, want) || s.Name != "agentbench-os" {
		t.Fatalf("cases %v in %s, want %v", ids, s.Name, want)
	}
	cases := byID(s)
	if p := cases["5-new-000"].Checks[0].State.Pipeline; len(p) != 1 || !strings.Contains(p[0].Code, "./calc") {
		t.Errorf("check from scripts/5/checking: %+v", p)
	}
	// A script that starts with a newline came through the YAML whole.
	if setup := cases["5-new-001"].Device.Setup; len(setup) != 1 || !strings.HasPrefix(setup[0].Code, "\n#!/bin/bash\n") {
		t.Errorf("init from a file that starts with a newline: %q", setup)
	}
	if a := cases["5-new-002"].Checks[0].Answer; a == nil || a.Regex != "^saucer-[0-9]+$" || cases["5-new-002"].Device.Start == "" {
		t.Errorf("regex match: %+v", cases["5-new-002"])
	}
	if a := cases["5-new-003"].Checks[0].Answer; a == nil || a.Exact == nil || *a.Exact != "job" {
		t.Errorf("{answer} match: %+v", a)
	}
	// init as a list: python code, then bash text; a python check in code.
	c := cases["7-lines-000"]
	if len(c.Device.Setup) != 2 || c.Device.Setup[0].Language != evals.LangPython || c.Device.Setup[1].Script != (evals.Script{Code: "touch data/extra.txt"}) || c.Device.Setup[1].Tool != "" ||
		c.Checks[0].State.Pipeline[1].Language != evals.LangPython {
		t.Errorf("7-lines-000: %+v", c)
	}
	if c := cases["dev2-000"]; len(c.Device.Setup) != 1 || c.Device.Setup[0].Language != evals.LangPython || !strings.Contains(c.Device.Setup[0].Code, "numbers.txt") {
		t.Errorf("python init from scripts/dev2: %+v", c.Device.Setup)
	}
	// Writing /root, /working or the home folder needs root.
	for _, id := range []string{"5-new-004", "5-new-005", "7-lines-001"} {
		if !slices.Contains(cases[id].Labels, "needs-root") {
			t.Errorf("%s: labels %v", id, cases[id].Labels)
		}
	}
	if res.NoRoot != 9 {
		t.Errorf("%d no-root tasks", res.NoRoot)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "dev2-001") {
		t.Errorf("warnings %q", res.Warnings)
	}

	// Imported one by one into one folder, the two new.json make two suites.
	out := t.TempDir()
	a, _ := importSuite(t, agentbench.Options{Paths: []string{filepath.Join(bench, "data/5/new.json")}, Out: out})
	b, _ := importSuite(t, agentbench.Options{Paths: []string{filepath.Join(bench, "data/6/new.json")}, Out: out})
	if a.Suite == b.Suite || filepath.Base(a.Suite) != "agentbench-os-5-new.yaml" || filepath.Base(b.Suite) != "agentbench-os-6-new.yaml" {
		t.Errorf("suites %s and %s", a.Suite, b.Suite)
	}

	// A task file away from its scripts: --scripts names them.
	moved := filepath.Join(t.TempDir(), "tasks.json")
	data, _ := os.ReadFile(filepath.Join(bench, "data/5/new.json"))
	os.WriteFile(moved, data, 0o644)
	if _, err := agentbench.Import(agentbench.Options{Paths: []string{moved}, Out: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "--scripts") {
		t.Errorf("scripts not found: %v", err)
	}
	_, s = importSuite(t, agentbench.Options{Paths: []string{moved}, Scripts: filepath.Join(bench, "scripts/5")})
	if len(s.Cases) != 6 || s.Cases[0].ID != "tasks-000" {
		t.Errorf("with --scripts: %d cases, first %s", len(s.Cases), s.Cases[0].ID)
	}
}

func TestImportRefusesWhatItCannotRun(t *testing.T) {
	for body, want := range map[string]string{
		`{"description": "d", "evaluation": {"match": {"regex": "(?<=x)y"}}}`:                            "RE2",
		`{"description": "d", "evaluation": {"match": {"regex": ""}}}`:                                   "regex is empty",
		`{"description": "d", "evaluation": {"match": {"strip": true}}}`:                                 "neither answer nor regex",
		`{"description": "d", "evaluation": {"check": [null, "true"]}}`:                                  "stands for the example solution",
		`{"description": "d", "evaluation": {"check": {"language": "c++", "code": "int main(){}"}}}`:     "not supported",
		`{"evaluation": {"match": "1"}}`:                                                                 "no description",
		`{"description": "d"}`:                                                                           "no evaluation",
		`{"description": "d", "evaluation": {"example": "true"}}`:                                        "neither match nor check",
		`{"description": "d", "evaluation": {"check": {"file": "missing.sh"}, "example": "true"}}`:       "missing.sh is not in",
		`{"description": "d", "create": {"init": {"language": "python"}}, "evaluation": {"match": "1"}}`: "needs code or file",
		`"just text"`: "neither a list of tasks nor a task object",
	} {
		f := filepath.Join(t.TempDir(), "t.json")
		os.WriteFile(f, []byte(body), 0o644)
		_, err := agentbench.Import(agentbench.Options{Paths: []string{f}, Out: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	if _, err := agentbench.Import(agentbench.Options{Paths: []string{t.TempDir()}, Out: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no task files") {
		t.Errorf("empty folder: %v", err)
	}
}

// playAll runs the suite's cases (those with all labels) with their
// example solutions as the models, then again with a wrong answer and
// with an empty solution in place of every example; it returns the cases
// that succeeded each time.
func playAll(t *testing.T, res *agentbench.Result, s *evals.Suite, opts evals.Options) (right, wrong, empty map[string]bool) {
	t.Helper()
	opts.Jobs = 4
	opts.OpenModel = func(spec string) (llm.Model, error) {
		if m, ok, err := agentbench.Open(spec, res.Suite); ok {
			return m, err
		}
		return provider.Open(spec, nil, os.Getenv)
	}
	run := func(what string) map[string]bool {
		opts.Results = t.TempDir()
		start := time.Now()
		rep, err := evals.Run(context.Background(), s, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d/%d passed in %s", what, rep.Metrics.Successes, rep.Metrics.Trials, time.Since(start).Round(time.Millisecond))
		passed := map[string]bool{}
		for _, c := range rep.Cases {
			for _, tr := range c.Trials {
				if tr.Success {
					passed[c.ID] = true
				} else if what == "example solutions" {
					t.Logf("  %s %s: %s (answer %q)", c.ID, tr.Failure, cutLine(tr.Detail), tr.Answer)
				}
			}
		}
		return passed
	}
	right = run("example solutions")
	examples := filepath.Join(filepath.Dir(res.Suite), "examples")
	entries, _ := os.ReadDir(examples)
	for i, answer := range []string{"echo 987654", "true"} { // a wrong answer; an empty solution
		for _, e := range entries {
			os.WriteFile(filepath.Join(examples, e.Name()), []byte(answer), 0o644)
		}
		if i == 0 {
			wrong = run("a wrong answer")
		} else {
			empty = run("an empty solution")
		}
	}
	return right, wrong, empty
}

func cutLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// The tasks that need no root, run for real on the plain device: each
// task's example solution, played as the agent, passes its own checker; a
// wrong answer and an empty solution fail it.
func TestNoRootTasksAgreeWithTheirExampleSolutions(t *testing.T) {
	out := t.TempDir()
	res, s := importSuite(t, agentbench.Options{Paths: []string{devJSON, filepath.Join(bench, "data")}, Out: out, PlainNoRoot: true})
	var runnable []string // no-root, with an example to play
	for _, c := range s.Cases {
		plain := c.Device.Sandbox != nil && !*c.Device.Sandbox
		if !s.Sandbox || plain != slices.Contains(c.Labels, "no-root") {
			t.Fatalf("%s: the suite's sandbox %v, the case's %v, labels %v", c.ID, s.Sandbox, c.Device.Sandbox, c.Labels)
		}
		if _, err := os.Stat(filepath.Join(out, "examples", c.ID+".sh")); err == nil && plain {
			runnable = append(runnable, c.ID)
		}
	}
	if len(runnable) != 16 {
		t.Fatalf("%d runnable tasks: %v", len(runnable), runnable)
	}
	right, wrong, empty := playAll(t, res, s, evals.Options{Labels: []string{"no-root"}})
	for _, id := range runnable {
		if !right[id] {
			t.Errorf("%s fails with its example solution", id)
		}
	}
	if len(right) != len(runnable) || len(wrong) > 0 || len(empty) > 0 {
		t.Errorf("passed: %d with the examples (want %d), %d with a wrong answer %v, %d with an empty solution %v", len(right), len(runnable), len(wrong), wrong, len(empty), empty)
	}
}

// Every task, as the benchmark runs it: in a sandbox of its own, as root,
// in /root (5-new-005 asks what is there). The dev set's tasks without a usable example are played by
// ours (testdata/dev-examples).
func TestEveryTaskAgreesInTheSandbox(t *testing.T) {
	sandboxtest.Require(t)
	out := t.TempDir()
	res, s := importSuite(t, agentbench.Options{Paths: []string{devJSON, filepath.Join(bench, "data")}, Out: out})
	for id, file := range map[string]string{"dev-000": "interval.sh", "dev-004": "interval.sh", "dev-001": "growing-file.sh",
		"dev-002": "growing-file.sh", "dev-024": "jack-test.sh"} {
		b, err := os.ReadFile(filepath.Join("testdata/dev-examples", file))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(out, "examples", id+".sh"), b, 0o644)
	}
	// Cannot agree: dev-008's checker reads du's "4.0K" as an int and
	// fails on the decimal (the benchmark's image has more in /home);
	// dev2-001 has no example on purpose.
	cannot := []string{"dev-008", "dev2-001"}
	right, wrong, empty := playAll(t, res, s, evals.Options{})
	for _, c := range s.Cases {
		if right[c.ID] == slices.Contains(cannot, c.ID) {
			t.Errorf("%s: passed %v with its example solution", c.ID, right[c.ID])
		}
	}
	if len(wrong) > 0 || len(empty) > 0 {
		t.Errorf("passed with a wrong answer: %v; with an empty solution: %v", wrong, empty)
	}
	t.Logf("%d of %d tasks agree both ways", len(s.Cases)-len(cannot), len(s.Cases))
}
