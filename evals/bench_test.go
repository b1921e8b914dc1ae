package evals_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/trajectory"
)

// BenchmarkReplay measures replay throughput in recorded steps per second
// (steps/s wall, steps/cpu-s per CPU-second; goal 20k, 50 cpu-us/step): a recorded session
// (the demo: 7 agent steps) re-run with the recorded model and device,
// every request and command checked against the recording. The trajectory
// is read once, as a suite run reads it.
//
// Its CI guard is a ratio, so that it follows the code and not the
// runner's speed: after each replay, with the timer stopped, the same
// recording's 50 KB of JSON lines are decoded from memory by
// encoding/json into plain values (each line into an any: not Saucer's
// code, so the baseline does not move with it), and replay-per-decode is
// the replays' CPU over the decodes'. allocs/op counts the replays alone.
func BenchmarkReplay(b *testing.B) {
	tr, err := trajectory.Read("suites/recordings/hello")
	if err != nil {
		b.Fatal(err)
	}
	lines, err := os.ReadFile(filepath.Join(tr.Dir, trajectory.EventsFile))
	if err != nil {
		b.Fatal(err)
	}
	steps := len(tr.Of(trajectory.TypeStep))
	ctx := context.Background()
	b.ReportAllocs()
	var replays, decodes time.Duration
	for b.Loop() {
		c := cputime.Process()
		res, err := evals.Replay(ctx, tr, evals.ReplayOptions{})
		replays += cputime.Process() - c
		if err != nil || res.Diverged() || !res.Outcome.OK() {
			b.Fatalf("%v %s", err, res.Report())
		}
		b.StopTimer()
		c = cputime.Process()
		n, err := decodePlain(lines)
		decodes += cputime.Process() - c
		if err != nil || n != len(tr.Events) {
			b.Fatalf("decoding the recording with encoding/json: %v (%d lines, want %d)", err, n, len(tr.Events))
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(steps*b.N)/replays.Seconds(), "steps/cpu-s")
	b.ReportMetric(float64(replays.Microseconds())/float64(steps*b.N), "cpu-us/step")
	b.ReportMetric(replays.Seconds()/decodes.Seconds(), "replay-per-decode") // for .ci/benchcheck (at most)
}

// decodePlain decodes each line of a trajectory into an any, the baseline
// of BenchmarkReplay, and says how many lines it decoded.
func decodePlain(lines []byte) (int, error) {
	n := 0
	for line := range bytes.Lines(lines) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// BenchmarkReplaySuite1000 runs a suite of 1,000 cases on recorded devices
// end to end with two workers: reading the recordings, replaying each
// session, running its checks, writing each result (a line of
// trials.jsonl; every case replays its recording exactly, so none keeps a
// trajectory of its own) and the JSON report. s/suite is wall time, cpu-s/suite the CPU it took
// (goal: under 3 s on two cores, so under 6 CPU-seconds).
//
// Its CI guard is a ratio, so that it follows the code and not the
// runner's speed: after each suite, with the timer stopped, the same
// recording is replayed 1,000 times in a row (evals.Replay, the
// trajectory read once), and suite-per-replays is the suite's CPU over
// theirs: what the suite adds to the replays themselves.
func BenchmarkReplaySuite1000(b *testing.B) {
	dir := b.TempDir()
	file := writeReplaySuite(b, dir, "replay-1000", 1000, func(int) string {
		return fmt.Sprintf("    task: %q\n    checks:\n      - {state: {run: \"cat notes/hello.txt\", output: \"Hello from Saucer\"}}\n"+
			"      - {answer: {contains: \"Hello from Saucer\"}}\n", demoTask)
	})
	suite, err := evals.LoadSuite(file)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := trajectory.Read(helloRecording(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var suites, replays time.Duration
	for i := 0; b.Loop(); i++ {
		c := cputime.Process()
		rep, err := evals.Run(ctx, suite, evals.Options{Results: filepath.Join(dir, fmt.Sprint("r", i)), Jobs: 2})
		suites += cputime.Process() - c
		if err != nil || rep.Metrics.Successes != 1000 {
			b.Fatalf("%v %+v", err, rep.Metrics)
		}
		b.StopTimer()
		c = cputime.Process()
		for range 1000 {
			res, err := evals.Replay(ctx, tr, evals.ReplayOptions{})
			if err != nil || res.Diverged() || !res.Outcome.OK() {
				b.Fatalf("%v %s", err, res.Report())
			}
		}
		replays += cputime.Process() - c
		b.StartTimer()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/suite")
	b.ReportMetric(suites.Seconds()/float64(b.N), "cpu-s/suite")
	b.ReportMetric(suites.Seconds()/replays.Seconds(), "suite-per-replays") // for .ci/benchcheck (at most)
}
