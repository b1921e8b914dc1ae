package evals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/trajectory"
)

// BenchmarkReplay measures replay throughput in recorded steps per second
// (steps/s wall, steps/cpu-s per CPU-second; goal 20k, 50 cpu-us/step): a recorded session
// (the demo: 7 agent steps) re-run with the recorded model and device,
// every request and command checked against the recording. The trajectory
// is read once, as a suite run reads it.
func BenchmarkReplay(b *testing.B) {
	tr, err := trajectory.Read("suites/recordings/hello")
	if err != nil {
		b.Fatal(err)
	}
	steps := len(tr.Of(trajectory.TypeStep))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	for b.Loop() {
		res, err := evals.Replay(ctx, tr, evals.ReplayOptions{})
		if err != nil || res.Diverged() || !res.Outcome.OK() {
			b.Fatalf("%v %s", err, res.Report())
		}
	}
	cpu = cputime.Process() - cpu
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(steps*b.N)/cpu.Seconds(), "steps/cpu-s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(steps*b.N), "cpu-us/step") // for .ci/benchcheck (at most)
}

// BenchmarkReplaySuite1000 runs a suite of 1,000 cases on recorded devices
// end to end with two workers: reading the recordings, replaying each
// session, running its checks, writing each result (a line of
// trials.jsonl; every case replays its recording exactly, so none keeps a
// trajectory of its own) and the JSON report. s/suite is wall time, cpu-s/suite the CPU it took
// (goal: under 3 s on two cores, so under 6 CPU-seconds).
func BenchmarkReplaySuite1000(b *testing.B) {
	dir := b.TempDir()
	rec, _ := filepath.Abs("suites/recordings/hello")
	var s strings.Builder
	s.WriteString("name: replay-1000\nmodel: replay\ncases:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&s, "  - id: hello-%04d\n    task: \"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder\"\n"+
			"    device: {recording: %q}\n    checks:\n      - {state: {run: \"cat notes/hello.txt\", output: \"Hello from Saucer\"}}\n"+
			"      - {answer: {contains: \"Hello from Saucer\"}}\n", i, rec)
	}
	file := filepath.Join(dir, "suite.yaml")
	os.WriteFile(file, []byte(s.String()), 0o644)
	suite, err := evals.LoadSuite(file)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cputime.Process()
	for i := 0; b.Loop(); i++ {
		rep, err := evals.Run(context.Background(), suite, evals.Options{Results: filepath.Join(dir, fmt.Sprint("r", i)), Jobs: 2})
		if err != nil || rep.Metrics.Successes != 1000 {
			b.Fatalf("%v %+v", err, rep.Metrics)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/suite")
	b.ReportMetric((cputime.Process()-cpu).Seconds()/float64(b.N), "cpu-s/suite")
}
