package main

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
)

func TestEvalDemoSuite(t *testing.T) {
	out := t.TempDir()
	text, code := saucer(t, "eval", "../../evals/suites/demo.yaml", "-o", out, "-j", "2", "--min-success", "1")
	if code != 0 || !strings.Contains(text, "| success rate | 100.0% (3/3 trials, 3 cases) |") || !strings.Contains(text, "3/3  pass 3  fail 0") {
		t.Fatalf("exit %d\n%s", code, text)
	}
	for _, f := range []string{"report.json", "report.md", "junit.xml", "report.html", "run.json", "trials.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// Again on the same directory: everything is resumed, nothing re-run.
	text, code = saucer(t, "eval", "../../evals/suites/demo.yaml", "-o", out, "-q")
	if code != 0 || !strings.Contains(text, "100.0%") {
		t.Fatalf("resume: exit %d\n%s", code, text)
	}
}

func TestEvalMinSuccessAndCompare(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	if _, code := saucer(t, "eval", "../../evals/suites/demo-live.yaml", "-o", good, "-q"); code != 0 {
		t.Fatal(code)
	}
	// Every case played by a model that gives up: below --min-success.
	giveUp := filepath.Join(t.TempDir(), "give-up.yaml")
	os.WriteFile(giveUp, []byte("loop: true\nreplies:\n  - tool_calls: [{name: fail_task, arguments: {reason: cannot}}]\n"), 0o644)
	text, code := saucer(t, "eval", "../../evals/suites/demo-live.yaml", "-o", bad, "-q", "--model", "scripted:"+giveUp, "--min-success", "0.9")
	if code != 1 || !strings.Contains(text, "below --min-success 90.0%") || !strings.Contains(text, "agent_gave_up") {
		t.Fatalf("exit %d\n%s", code, text)
	}
	text, code = saucer(t, "eval", "compare", good, bad, "--fail-on-regression")
	if code != 1 || !strings.Contains(text, "2 regressions, 0 improvements") || !strings.Contains(text, "REGRESSION  hello: 100% → 0%") ||
		!strings.Contains(text, "success_rate") {
		t.Fatalf("compare: exit %d\n%s", code, text)
	}
	text, code = saucer(t, "eval", "compare", bad, good)
	if code != 0 || !strings.Contains(text, "IMPROVEMENT count-lines") {
		t.Fatalf("compare back: exit %d\n%s", code, text)
	}
}

func TestEvalStepsAndImport(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(script, []byte(`replies:
  - tool_calls: [{name: write_file, arguments: {path: notes/hello.txt, content: "Hello from Saucer\n", create_dirs: true}}]
  - tool_calls: [{name: finish_task, arguments: {result: ok}}]
  - tool_calls: [{name: execute_command, arguments: {command: "ls notes"}}]
  - tool_calls: [{name: finish_task, arguments: {result: ok}}]
`), 0o644)
	text, code := saucer(t, "eval", "steps", "../../evals/suites/recordings/hello", "--model", "scripted:"+script)
	if code != 0 || !strings.Contains(text, "step success 75.0%, task success false") {
		t.Fatalf("steps: exit %d\n%s", code, text)
	}
	dev := "../../testdata/agentbench-os/dev.json"
	out := t.TempDir()
	text, code = saucer(t, "eval", "import", "agentbench", dev, "-o", out)
	if code != 0 || !strings.Contains(text, "imported 26 tasks") || !strings.Contains(text, "8 runnable without root") {
		t.Fatalf("import: exit %d\n%s", code, text)
	}
	res := t.TempDir()
	text, code = saucer(t, "eval", filepath.Join(out, "agentbench-os-dev.yaml"), "-o", res, "--label", "no-root", "-j", "4", "-q", "--min-success", "1")
	if code != 0 || !strings.Contains(text, "(8/8 trials") {
		t.Fatalf("imported suite: exit %d\n%s", code, text)
	}
}

func TestEvalShardsAndMerge(t *testing.T) {
	a, b, out := t.TempDir(), t.TempDir(), t.TempDir()
	text, code := saucer(t, "eval", "../../evals/suites/demo.yaml", "-o", a, "-q", "--shard", "1/2")
	if code != 0 || !strings.Contains(text, "(2/2 trials, 2 cases)") {
		t.Fatalf("shard 1/2: exit %d\n%s", code, text)
	}
	if text, code = saucer(t, "eval", "../../evals/suites/demo.yaml", "-o", b, "-q", "--shard", "2/2"); code != 0 || !strings.Contains(text, "(1/1 trials, 1 cases)") {
		t.Fatalf("shard 2/2: exit %d\n%s", code, text)
	}
	text, code = saucer(t, "eval", "merge", a, b, "-o", out, "--min-success", "1")
	if code != 0 || !strings.Contains(text, "| success rate | 100.0% (3/3 trials, 3 cases) |") {
		t.Fatalf("merge: exit %d\n%s", code, text)
	}
	for _, f := range []string{"report.json", "report.md", "junit.xml", "report.html", "run.json", "trials.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if text, code = saucer(t, "eval", "merge", a, "-o", t.TempDir()); code == 0 || !strings.Contains(text, "shard 2/2 missing") {
		t.Errorf("half a run: exit %d\n%s", code, text)
	}
	if text, code = saucer(t, "eval", "../../evals/suites/demo.yaml", "-o", t.TempDir(), "--shard", "0/2"); code != 2 || !strings.Contains(text, "JOB_COMPLETION_INDEX") {
		t.Errorf("--shard 0/2: exit %d\n%s", code, text)
	}
}

// Step-level evaluation of an imported AgentBench case's recording, by the
// case's own example-solution model, against the case's gold answer.
func TestEvalStepsWithAnAgentBenchCase(t *testing.T) {
	out, res := t.TempDir(), t.TempDir()
	if text, code := saucer(t, "eval", "import", "agentbench", "../../internal/agentbench/testdata/os_interaction/data/dev2.json", "-o", out); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, text)
	}
	suite := filepath.Join(out, "agentbench-os-dev2.yaml")
	// dev2-001 has no example solution to play: it cannot run without
	// --model, and says so (exit 3).
	if text, code := saucer(t, "eval", suite, "-o", res, "-q", "--label", "no-root"); code != 3 || !strings.Contains(text, "| dev2-002 | 1/1 |") ||
		!strings.Contains(text, "dev2-001 trial 1: agentbench: task dev2-001 has no example solution") {
		t.Fatalf("eval: exit %d\n%s", code, text)
	}
	rec := filepath.Join(res, "cases", "dev2-002", "trial-1", "trajectory")
	text, code := saucer(t, "eval", "steps", rec, "--suite", suite, "--case", "dev2-002")
	if code != 0 || !strings.Contains(text, `✔ final answer [app:shell#1 step 2] "alpha", gold "alpha"`) || !strings.Contains(text, "task success true") {
		t.Fatalf("steps: exit %d\n%s", code, text)
	}
	// Another case's gold answer: the same steps, the wrong answer.
	os.WriteFile(suite, []byte(strings.Replace(mustRead(t, suite), "exact: alpha", "exact: beta", 1)), 0o644)
	text, code = saucer(t, "eval", "steps", rec, "--suite", suite, "--case", "dev2-002")
	if code != 0 || !strings.Contains(text, `✘ final answer`) || !strings.Contains(text, "step success 100.0%, task success false") {
		t.Fatalf("steps, wrong gold: exit %d\n%s", code, text)
	}
	if text, code = saucer(t, "eval", "steps", rec, "--suite", suite); code == 0 || !strings.Contains(text, "go together") {
		t.Errorf("--suite alone: exit %d\n%s", code, text)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A trial that could not be run (its setup failed, a needs-root case off
// a sandbox) is an infra_error, and saucer eval exits 3 naming it, after
// writing the reports: the score says nothing about the agent.
func TestEvalInfraErrorsExitNonZero(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "finish.yaml"), []byte("loop: true\nreplies:\n  - tool_calls: [{name: finish_task, arguments: {result: done}}]\n"), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: infra
model: scripted:finish.yaml
cases:
  - id: fine
    task: do nothing
    labels: [ok]
  - id: broken-setup
    task: do nothing
    device: {setup: ["echo the fixture is missing >&2; exit 3"]}
`), 0o644)
	out := t.TempDir()
	text, code := saucer(t, "eval", suite, "-o", out, "-q")
	if code != 3 || !strings.Contains(text, "1 trial(s) could not be run (infra_error)") ||
		!strings.Contains(text, "broken-setup trial 1: setup script 1") || !strings.Contains(text, "the fixture is missing") {
		t.Fatalf("exit %d\n%s", code, text)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Errorf("no report: %v", err)
	}
	// Without the broken case, the same suite passes: exit 0.
	text, code = saucer(t, "eval", suite, "-o", t.TempDir(), "-q", "--label", "ok")
	if code != 0 || !strings.Contains(text, "100.0% (1/1 trials") {
		t.Errorf("the fine case alone: exit %d\n%s", code, text)
	}
}

// saucer eval opens models as saucer run does: a case without a model
// runs the config's model:, which SAUCER_MODEL overrides; a case's or the
// suite's own model wins over both; --model wins over all; and
// models.X.fallbacks stand behind whichever model runs.
func TestEvalModelPrecedence(t *testing.T) {
	dir := t.TempDir()
	script := func(name string) string {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte("loop: true\nreplies:\n  - tool_calls: [{name: finish_task, arguments: {result: "+name+"}}]\n"), 0o644)
		return "scripted:" + p
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"the model is loading","type":"server_error"}}`)
	}))
	defer down.Close()
	cfgFile := filepath.Join(dir, "saucer.yaml")
	os.WriteFile(cfgFile, []byte(`model: `+script("config")+`
agent: {retry_backoff: 1ms, max_retries: 0}
providers:
  openai-compatible: {base_url: "`+down.URL+`/v1"}
models:
  "openai-compatible:big": {fallbacks: ["`+script("fallback")+`"]}
`), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: precedence
cases:
  - {id: plain, task: anything}
  - {id: own, task: anything, model: `+script("case")+`}
  - {id: down, task: anything, model: "openai-compatible:big"}
`), 0o644)
	script("env")
	script("flag")
	answers := func(args ...string) map[string]string {
		t.Helper()
		out := t.TempDir()
		text, code := saucer(t, append([]string{"eval", suite, "-c", cfgFile, "-o", out, "-q"}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", args, code, text)
		}
		rep, err := evals.ReadReport(out)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range rep.Cases {
			got[c.ID] = c.Trials[0].Answer
		}
		return got
	}
	check := func(what string, got, want map[string]string) {
		t.Helper()
		if !maps.Equal(got, want) {
			t.Errorf("%s: answers %v, want %v", what, got, want)
		}
	}
	check("the config", answers(), map[string]string{"plain": "config", "own": "case", "down": "fallback"})
	t.Setenv("SAUCER_MODEL", "scripted:"+filepath.Join(dir, "env.yaml"))
	check("SAUCER_MODEL", answers(), map[string]string{"plain": "env", "own": "case", "down": "fallback"})
	check("--model", answers("--model", "scripted:"+filepath.Join(dir, "flag.yaml")), map[string]string{"plain": "flag", "own": "flag", "down": "flag"})
}
