package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalDemoSuite(t *testing.T) {
	out := t.TempDir()
	text, code := saucer(t, "eval", "../../evals/suites/demo.yaml", "-o", out, "-j", "2", "--min-success", "1")
	if code != 0 || !strings.Contains(text, "| success rate | 100.0% (3/3 trials, 3 cases) |") || !strings.Contains(text, "3/3  pass 3  fail 0") {
		t.Fatalf("exit %d\n%s", code, text)
	}
	for _, f := range []string{"report.json", "report.md", "junit.xml", "report.html", "run.json", "cases/hello/trial-1/result.json"} {
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
