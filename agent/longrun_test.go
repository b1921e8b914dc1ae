package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// longRun drives one app agent through n trivial steps with recording on,
// and returns each step's wall time, each request's size and the
// trajectory's size.
func longRun(tb testing.TB, n int) (stepTimes []time.Duration, reqBytes []int, trajBytes int64) {
	dir := filepath.Join(tb.TempDir(), "run")
	rec, err := record.Start(dir, trajectory.Session{Task: "long", Model: "scripted:loop"}, trajectory.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	observe := func(e agent.Event) {
		rec.Observe(e)
		if e.Kind == agent.EventModelCall && e.Request != nil {
			_, size := llm.SharedPrefix(nil, e.Request)
			reqBytes = append(reqBytes, size)
		}
	}
	s := benchSessionObserved(tb, strategy.ModeTools, scripted.Script{Loop: true, Replies: []scripted.Reply{{Text: "keep going",
		ToolCalls: []scripted.ToolCall{{Name: "noop", Arguments: map[string]any{}}}}}}, observe)
	a := s.NewApp("bench", "do nothing, forever")
	ctx := context.Background()
	for i := range n {
		start := time.Now()
		st, err := a.Step(ctx)
		stepTimes = append(stepTimes, time.Since(start))
		if err != nil || st != fsm.Continue {
			tb.Fatalf("step %d: %s %v", i+1, st, err)
		}
	}
	if err := rec.Finish(&agent.Outcome{Status: fsm.Finish}); err != nil {
		tb.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, trajectory.EventsFile))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := trajectory.Read(dir); err != nil {
		tb.Fatalf("the recording does not read back: %v", err)
	}
	return stepTimes, reqBytes, fi.Size()
}

func mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds))
}

// TestLongRunStaysBounded: at step 1000 a request is no bigger than twice
// a request at step 20, and the recording holds each message once. (Time
// per step is measured by BenchmarkLongRun, not asserted here.)
func TestLongRunStaysBounded(t *testing.T) {
	_, req, traj := longRun(t, 1000)
	if r := float64(req[999]) / float64(req[19]); r > 2 {
		t.Errorf("request at step 1000 is %d bytes, %.2f× the %d bytes at step 20 (want ≤ 2×)", req[999], r, req[19])
	}
	if per := traj / 1000; per > 5<<10 {
		t.Errorf("the recording holds %d bytes per trivial step (want ≤ 5 KiB)", per)
	}
}

// BenchmarkLongRun runs 1000 trivial steps of one agent, recorded, and
// reports the ratio of the mean step time around step 1000 to that around
// step 10, the recording's bytes per step and the ratio of the request at
// step 1000 to that at step 20.
func BenchmarkLongRun(b *testing.B) {
	const n = 1000
	var timeRatio, reqRatio, perStep float64
	runs := 0
	for b.Loop() {
		times, req, traj := longRun(b, n)
		timeRatio += mean(times[n-20:]) / mean(times[:20])
		reqRatio += float64(req[n-1]) / float64(req[19])
		perStep += float64(traj) / n
		runs++
	}
	b.ReportMetric(timeRatio/float64(runs), "step1000/step10-time")
	b.ReportMetric(reqRatio/float64(runs), "req1000/req20-bytes")
	b.ReportMetric(perStep/float64(runs), "trajectory-bytes/step")
}
