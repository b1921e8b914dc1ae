package agentbench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/evals/agentbench"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/provider"
)

const devJSON = "../../testdata/agentbench-os/dev.json"

func importDev(t *testing.T) (*agentbench.Result, *evals.Suite) {
	t.Helper()
	res, err := agentbench.Import(devJSON, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := evals.LoadSuite(res.Suite)
	if err != nil {
		t.Fatalf("the imported suite does not load: %v", err)
	}
	return res, s
}

func TestImport(t *testing.T) {
	res, s := importDev(t)
	if res.Tasks != 26 || len(s.Cases) != 26 {
		t.Fatalf("%d tasks, %d cases", res.Tasks, len(s.Cases))
	}
	byID := map[string]evals.Case{}
	for _, c := range s.Cases {
		byID[c.ID] = c
	}
	// A match task: exact answer; its init and background start are the
	// setup; it writes to /root, so it needs root.
	c := byID["dev-001"]
	if len(c.Checks) != 1 || c.Checks[0].Answer == nil || *c.Checks[0].Answer.Exact != "log" || len(c.Device.Setup) != 2 ||
		!strings.Contains(c.Device.Setup[1], "python3 -c") || !contains(c.Labels, "needs-root") || !contains(c.Labels, "process") {
		t.Errorf("dev-001: %+v", c)
	}
	// A check pipeline: the example first, then the task's python checker.
	c = byID["dev-013"]
	run := c.Checks[0].State.Run
	if !contains(c.Labels, "no-root") || !strings.Contains(run, "bash -s -- \"$@\" <<'SAUCER_STEP_1'\nnproc\nSAUCER_STEP_1") ||
		!strings.Contains(run, "python3 - \"$@\" <<'SAUCER_STEP_2'\nfrom sys import argv") {
		t.Errorf("dev-013: labels %v run:\n%s", c.Labels, run)
	}
	// A single check script, from its file; an init script from its file.
	if run := byID["dev-003"].Checks[0].State.Run; !strings.Contains(run, "calc \"${expression}\"") {
		t.Errorf("dev-003 check:\n%s", run)
	}
	if setup := byID["dev-025"].Device.Setup; len(setup) != 1 || !strings.Contains(setup[0], "/usr/stock.log") {
		t.Errorf("dev-025 setup %v", setup)
	}
	if res.NoRoot != 8 {
		var ids []string
		for _, c := range s.Cases {
			if contains(c.Labels, "no-root") {
				ids = append(ids, c.ID)
			}
		}
		t.Errorf("%d no-root tasks: %v", res.NoRoot, ids)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The no-root tasks, run for real in temp dirs: the example solution,
// played by the agent, passes each task's own checker.
func TestNoRootTasksPassWithTheirExampleSolutions(t *testing.T) {
	res, s := importDev(t)
	open := func(spec string) (llm.Model, error) {
		if m, ok, err := agentbench.Open(spec, res.Suite); ok {
			return m, err
		}
		return provider.Open(spec, nil, os.Getenv)
	}
	rep, err := evals.Run(context.Background(), s, evals.Options{Results: t.TempDir(), Jobs: 4, Labels: []string{"no-root"}, OpenModel: open})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics.Trials != 8 {
		t.Fatalf("%d trials", rep.Metrics.Trials)
	}
	for _, c := range rep.Cases {
		for _, tr := range c.Trials {
			if !tr.Success {
				t.Errorf("%s: %s %s (answer %q)", c.ID, tr.Failure, tr.Detail, tr.Answer)
			}
		}
	}
	// A wrong solution fails the same checkers.
	for _, c := range s.Cases {
		if contains(c.Labels, "no-root") {
			os.WriteFile(filepath.Join(filepath.Dir(res.Suite), "examples", c.ID+".sh"), []byte("echo 987654"), 0o644)
		}
	}
	rep, err = evals.Run(context.Background(), s, evals.Options{Results: t.TempDir(), Jobs: 4, Labels: []string{"no-root"}, OpenModel: open})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics.Successes != 0 || rep.Metrics.Failures[evals.FailCheckerFailed] != 8 {
		t.Errorf("wrong solutions: %d successes, failures %v", rep.Metrics.Successes, rep.Metrics.Failures)
	}
}
