package evals_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/saucerhq/saucer/evals"
)

var rerecord = flag.Bool("record", false, "re-record evals/suites/recordings from demo-live.yaml")

// TestDemoSuites runs the demo suite live (scripted model, real tools) and
// on its recordings (replayed, with the same checks): both pass every case.
func TestDemoSuites(t *testing.T) {
	results := t.TempDir()
	live, err := runSuite(t, "suites/demo-live.yaml", results, evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if live.Metrics.Successes != len(live.Cases) {
		t.Fatalf("demo-live: %d of %d cases passed: %+v", live.Metrics.Successes, len(live.Cases), live.Metrics.Failures)
	}
	if *rerecord {
		for _, c := range live.Cases {
			dst := filepath.Join("suites", "recordings", c.ID)
			os.RemoveAll(dst)
			if err := os.CopyFS(dst, os.DirFS(filepath.Join(results, c.Trials[0].Trajectory))); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := runSuite(t, "suites/demo.yaml", t.TempDir(), evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		for _, tr := range c.Trials {
			if !tr.Success {
				t.Errorf("demo %s: %s %s", c.ID, tr.Failure, tr.Detail)
			}
		}
	}
	if rep.Metrics.SuccessRate != 1 || rep.Metrics.Cases != 3 {
		t.Errorf("demo: %+v", rep.Metrics)
	}
}
