package constellation

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/desktoptest"
)

// runEvalSuite runs a suite of constellation cases with the eval runner,
// each trial's devices built from the suite's config, and returns each
// case's first trial.
func runEvalSuite(t *testing.T, yaml string) (map[string]*evals.TrialResult, string) {
	t.Helper()
	s, err := evals.ParseSuite([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	rep, err := evals.Run(ctx, s, evals.Options{Results: dir, Constellations: EvalRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*evals.TrialResult{}
	for _, c := range rep.Cases {
		out[c.ID] = c.Trials[0]
	}
	return out, dir
}

// The case a device's policy refuses: its node writes a file with the
// shell (a destructive tool), and it checks with the files app that the
// seeded file is there to read.
const policyCase = `
  - id: %s
    task: "Write a file on linux1"
    expect_fail: %s
    checks:
      - {name: refused, node: {id: write, status: failed}}
    constellation:
      latency: 1ms
      devices:
        - id: linux1
          files: {seed.txt: "seeded"}
          checks:
            - {name: read with files, state: {tool: read_file, namespace: files, arguments: {path: seed.txt}, contains: seeded}}
      plan:
        - {id: write, device: linux1, run: "echo made > made.txt && cat made.txt"}
`

func policySuite(config string, expectFail bool) string {
	return "name: policy\nmodel: scripted\n" + config + "cases:" + fmt.Sprintf(policyCase, "case", strconv.FormatBool(expectFail))
}

// Eval devices come from the one assembly (local.NewDevice) with the
// trial's config: a suite whose config forbids destructive tools sees its
// devices refuse the shell's command (the node fails with the policy's
// reason) while a read with the files app, which the config enables
// beside the shell, goes through; without the policy the same node
// completes, and with the files app left out of mcp.use the files check
// fails.
func TestEvalDevicesFromConfig(t *testing.T) {
	trials, dir := runEvalSuite(t, policySuite("config: {mcp: {policy: {forbid: [destructive]}}}\n", true))
	forbid := trials["case"]
	if forbid == nil || !forbid.Success || forbid.Status != "FAIL" || len(forbid.Checks) != 2 {
		t.Fatalf("forbid destructive: %+v", forbid)
	}
	for _, ch := range forbid.Checks {
		if !ch.Pass {
			t.Errorf("forbid destructive: check %s: %s", ch.Name, ch.Detail)
		}
	}
	if !strings.Contains(forbid.Answer, "write is failed") {
		t.Errorf("forbid destructive: the constellation's error does not name the node: %q", forbid.Answer)
	}
	// The device refused the command for its policy: the node's task
	// says so in the recording.
	events := readRecordingFile(t, forbid.TrajectoryPath(dir))
	refused := 0
	for _, e := range events {
		if e.Kind == "node_end" && e.Outcome != nil && !e.Outcome.OK &&
			strings.Contains(e.Outcome.Result, "policy: shell.execute_command is a destructive tool, and this device does not run destructive tools") {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("forbid destructive: %d node ends refused by the policy, want 1", refused)
	}

	// The policy's reason reaches the node: the same case, expecting the
	// node to complete, fails and says why.
	s := strings.Replace(policySuite("config: {mcp: {policy: {forbid: [destructive]}}}\n", false), "status: failed", "status: completed", 1)
	trials, _ = runEvalSuite(t, s)
	got := trials["case"]
	if got == nil || got.Success || got.Failure != evals.FailAgentGaveUp {
		t.Fatalf("forbid destructive, expected to complete: %+v", got)
	}

	// No policy: the node completes, so the case that expects it refused
	// fails.
	trials, _ = runEvalSuite(t, policySuite("", true))
	free := trials["case"]
	if free == nil || free.Success || free.Failure != evals.FailExpectedFail || free.Answer != "made" {
		t.Errorf("no policy: %+v", free)
	}

	// The files app only where the config enables it.
	trials, _ = runEvalSuite(t, policySuite("config: {mcp: {use: [shell]}}\n", true))
	shellOnly := trials["case"]
	if shellOnly == nil || shellOnly.Success {
		t.Fatalf("shell only: %+v", shellOnly)
	}
	var files *evals.CheckResult
	for i := range shellOnly.Checks {
		if strings.HasSuffix(shellOnly.Checks[i].Name, "read with files") {
			files = &shellOnly.Checks[i]
		}
	}
	if files == nil || files.Pass || !strings.Contains(files.Detail, "files") {
		t.Errorf("shell only: the files check: %+v", files)
	}
}

// A case uses an app other than the shell when the config serves it: with
// mcp.use [shell, desktop] its device's node opens a file in Mousepad on
// the desktop and reads the value from the window; with the shell alone
// the same node cannot run.
func TestEvalDeviceDesktopApp(t *testing.T) {
	desktoptest.Require(t, "mousepad")
	sharedDesktop(t)
	const suite = `name: desktop
model: scripted
config: {mcp: {use: [%s]}}
cases:
  - id: read
    task: "Read the total the report shows in Mousepad on desk1"
    checks:
      - {node: {id: read, device: desk1, result: {exact: "8"}}}
      - {answer: {exact: "8"}}
    constellation:
      latency: 1ms
      devices:
        - id: desk1
          files: {report.txt: "Sales report\ntotal=8\n"}
      plan:
        - {id: read, device: desk1, run: "desktop mousepad report.txt find total=([0-9]+)"}
`
	trials, _ := runEvalSuite(t, fmt.Sprintf(suite, "shell, desktop"))
	if tr := trials["read"]; tr == nil || !tr.Success || tr.Answer != "8" {
		t.Fatalf("shell and desktop: %+v", tr)
	}
	trials, _ = runEvalSuite(t, fmt.Sprintf(suite, "shell"))
	if tr := trials["read"]; tr == nil || tr.Success || tr.Failure != evals.FailAgentGaveUp {
		t.Errorf("shell only: %+v", tr)
	}
}
