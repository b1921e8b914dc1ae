package evals_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
)

// writeSuite writes a suite next to the test scripts.
func writeSuite(t *testing.T, text string) string {
	t.Helper()
	f, err := os.CreateTemp("testdata", "suite-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	f.WriteString(text)
	f.Close()
	return f.Name()
}

// Setup scripts in bash and python, a start script in the agent's own
// persistent shell, and a pipeline of check scripts that get the answer
// and the earlier outputs as arguments.
func TestSetupStartAndPipeline(t *testing.T) {
	suite := writeSuite(t, `
name: scripts
model: scripted:scripts/start-state.yaml
defaults: {max_steps: 4, max_rounds: 3, timeout: 20s}
cases:
  - id: state-carries-over
    task: "What are V and the folder?"
    device:
      setup:
        - "mkdir sub"
        - {language: python, code: "open('sub/made-by-python', 'w').write('py')"}
      start: "cd sub && export V=7 && sleep 300 >/dev/null 2>&1 &"
    checks:
      - {answer: {exact: "7 sub py"}}
      - name: agentbench-style
        state:
          pipeline:
            - "echo '7 sub py'"
            - language: python
              code: |
                import os, sys
                # the answer and the first script's output, as arguments
                if sys.argv[1:] != ["7 sub py", "7 sub py\n"]: sys.exit(1)
                # python3 itself, not under a wrapper shell
                parent = open(f"/proc/{os.getppid()}/comm").read().strip()
                sys.exit(1 if parent in ("bash", "sh") else 0)
  - id: wrong-answer-fails-the-pipeline
    task: "What are V and the folder?"
    device:
      setup: ["mkdir sub", "echo py > sub/made-by-python"]
      start: "cd sub; V=7"
    checks:
      - state: {pipeline: ["echo 8", {language: python, code: "import sys; sys.exit(int(sys.argv[1] != sys.argv[2].strip()))"}]}
  - id: start-dir-is-the-working-directory
    task: "Which folder is the shell in?"
    model: scripted:scripts/start-dir.yaml
    device: {setup: ["mkdir sub"], start: "cd sub"}
    checks:
      - {answer: {exact: "sub"}}
  - id: arguments-are-not-code
    task: "What are V and the folder?"
    device: {setup: ["mkdir sub", "echo py > sub/made-by-python"], start: "cd sub; V=7"}
    checks:
      - state:
          pipeline:
            - "test \"$1\" = '7 sub py' && echo '$(touch pwned)'"
            - language: python
              code: |
                import os, sys
                sys.exit(0 if sys.argv[2] == "$(touch pwned)\n" and not os.path.exists("pwned") and not os.path.exists("sub/pwned") else 1)
`)
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*evals.TrialResult{}
	for _, c := range rep.Cases {
		got[c.ID] = c.Trials[0]
	}
	if tr := got["state-carries-over"]; !tr.Success {
		t.Errorf("state-carries-over: %s %s", tr.Failure, tr.Detail)
	}
	if tr := got["start-dir-is-the-working-directory"]; !tr.Success {
		t.Errorf("start-dir-is-the-working-directory: %s %s", tr.Failure, tr.Detail)
	}
	if tr := got["arguments-are-not-code"]; !tr.Success {
		t.Errorf("arguments-are-not-code: %s %s", tr.Failure, tr.Detail)
	}
	if tr := got["wrong-answer-fails-the-pipeline"]; tr.Success || !strings.Contains(tr.Detail, "script 2 of 2 exited 1") {
		t.Errorf("wrong-answer-fails-the-pipeline: %v %s", tr.Success, tr.Detail)
	}
}

// A state check may take as long as the case, not just the shell's
// default timeout.
func TestStateCheckHasTheCaseTimeout(t *testing.T) {
	suite := writeSuite(t, `
name: slow-check
model: scripted:scripts/count.yaml
cases:
  - id: slow
    task: "How many files are in this folder?"
    limits: {timeout: 20s}
    checks:
      - {state: {run: "sleep 1.5; echo done", output: done}}
      - state: {pipeline: ["sleep 1.5"]}
`)
	cfg := config.Default()
	cfg.Tools.Shell.Timeout = config.Duration(time.Second)
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range rep.Cases[0].Trials[0].Checks {
		if !ch.Pass {
			t.Errorf("%s: %s", ch.Name, ch.Detail)
		}
	}
}

func TestScriptsAreValidated(t *testing.T) {
	for text, want := range map[string]string{
		`device: {setup: [{language: perl, code: "1"}]}`:                 "use bash or python",
		`device: {setup: [{lang: python, code: "1"}]}`:                   "not \"lang\"",
		`device: {recording: x, start: "cd /"}`:                          "no setup, files, start",
		`checks: [{state: {pipeline: ["true"], output: "x"}}]`:           "takes no output",
		`checks: [{state: {pipeline: ["true"], run: "true"}}]`:           "set one of run",
		`checks: [{state: {pipeline: [{language: python, code: " "}]}}]`: "no code",
	} {
		_, err := evals.ParseSuite([]byte("name: x\ncases:\n  - id: a\n    task: t\n    " + text + "\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}

// A check script that hangs ends at the case's timeout with a clear
// failure, and the other cases go on.
func TestHangingCheckEndsAtTheCaseTimeout(t *testing.T) {
	suite := writeSuite(t, `
name: hanging-check
model: scripted:scripts/count.yaml
cases:
  - id: hangs
    task: "How many files are in this folder?"
    limits: {timeout: 1s}
    checks:
      - state: {pipeline: ["sleep infinity"]}
  - id: fine
    task: "How many files are in this folder?"
    checks:
      - state: {pipeline: ["true"]}
`)
	// The check never ends by itself: the suite returns only if the
	// timeout stops it.
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hangs, fine := rep.Cases[0].Trials[0], rep.Cases[1].Trials[0]
	// (On a loaded host the agent itself may reach the 1s limit too: the
	// check is what is asserted.)
	if hangs.Success || len(hangs.Checks) != 1 || hangs.Checks[0].Pass ||
		!strings.HasPrefix(hangs.Checks[0].Detail, "cut at the case's time limit (1s): ") || !strings.Contains(hangs.Checks[0].Detail, "timed out after") || !fine.Success {
		t.Errorf("hangs: %s %s %+v; fine: %v %s", hangs.Failure, hangs.Detail, hangs.Checks, fine.Success, fine.Detail)
	}
}

// A setup step may call one of the device's tools, as an environment's
// setup opens what a task starts in: the file the tool wrote is there
// for the check, and a step whose tool fails stops the trial with the
// step named.
func TestSetupCallsADeviceTool(t *testing.T) {
	suite := writeSuite(t, `
name: tool-setup
model: scripted:scripts/count.yaml
defaults: {max_steps: 4, max_rounds: 3, timeout: 20s}
cases:
  - id: written-by-the-tool
    task: "How many files are in this folder?"
    device:
      setup:
        - {tool: write_file, namespace: files, arguments: {path: made-by-tool.txt, content: "tool\n"}}
        - "test -s made-by-tool.txt"
    checks:
      - {state: {run: "cat made-by-tool.txt", output: tool}}
  - id: tool-fails
    task: "How many files are in this folder?"
    device:
      setup: [{tool: read_file, namespace: files, arguments: {path: no-such-file.txt}}]
`)
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		tr := c.Trials[0]
		switch c.ID {
		case "written-by-the-tool":
			if !tr.Success {
				t.Errorf("%s: %s %s", c.ID, tr.Failure, tr.Detail)
			}
		case "tool-fails":
			if tr.Success || !strings.Contains(tr.Detail, "setup step 1 (tool read_file) failed") {
				t.Errorf("%s: success %v, %s %s; want the setup step named as failed", c.ID, tr.Success, tr.Failure, tr.Detail)
			}
		}
	}
}
