package evals_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/trajectory"
)

// TestSuiteConfig: a suite's config is laid over the run's for every
// case (here: only the shell server, and its timeout); a config the
// run's cannot take is refused when the suite is read, naming it.
func TestSuiteConfig(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fail.yaml")
	if err := os.WriteFile(script, []byte("replies:\n  - tool_calls: [{name: fail_task, arguments: {reason: nothing to do}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(suite, []byte(`name: cfg
config: {mcp: {use: [shell]}, tools: {shell: {timeout: 7s}}}
cases:
  - {id: one, task: "nothing", model: "scripted:fail.yaml", expect_fail: true}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	rep, err := runSuite(t, suite, results, evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trajectory.Read(filepath.Join(results, rep.Cases[0].Trials[0].Trajectory))
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Session()
	if _, ok := s.Apps["shell"]; !ok || len(s.Apps) != 1 {
		t.Errorf("the trial's apps are %v: want the shell only", s.Apps)
	}
	if !strings.Contains(s.Config, "timeout: 7s") {
		t.Errorf("the trial's config lacks the suite's shell timeout:\n%s", s.Config)
	}
	_, err = evals.ParseSuite([]byte("name: bad\nconfig: {tools: {shell: {timeot: 7s}}}\ncases: [{id: a, task: t}]\n"))
	if err == nil || !strings.Contains(err.Error(), "suite's config") || !strings.Contains(err.Error(), "timeot") {
		t.Errorf("a suite whose config has an unknown key: %v", err)
	}
}
