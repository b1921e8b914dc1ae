package constellation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server/store"
)

// benchLatency is each model call's fixed latency in the suite benchmark:
// 50ms unless SAUCER_BENCH_LATENCY says otherwise (e.g. 300ms).
func benchLatency(b *testing.B) time.Duration {
	if s := os.Getenv("SAUCER_BENCH_LATENCY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("SAUCER_BENCH_LATENCY: %v", err)
		}
		return d
	}
	return 50 * time.Millisecond
}

// BenchmarkSuiteParallelVsSerial runs the suite's cases (faults aside)
// twice in the same run: with every ready node at once (up to 8), and one
// node at a time (MaxConcurrent 1), the same planner and device agents,
// each model call taking a fixed latency. It reports both end-to-end
// times, how much lower the parallel one is, and the average parallel
// width; beside them, the suite's own bound: 1 − Σ critical path / Σ node
// time, with each node's time (its task's start to its end) taken from
// the serial run, which is what no scheduler can beat on these graphs.
func BenchmarkSuiteParallelVsSerial(b *testing.B) {
	lat := benchLatency(b)
	var cases []suiteCase
	for _, sc := range loadSuite(b) {
		if len(sc.Name) < 6 || sc.Name[:6] != "fault_" {
			cases = append(cases, sc)
		}
	}
	for range b.N {
		var par, ser time.Duration
		var width, busy time.Duration
		var nodeSum, critical time.Duration
		for _, sc := range cases {
			for _, limit := range []int{8, 1} {
				c := newCluster(b, store.NewMemory(), lat, sc.devices()...)
				times := &nodeTimes{start: map[string]time.Time{}, took: map[string]time.Duration{}}
				o := c.orchestrator(b, plannerFor(b, sc, lat), Options{MaxConcurrent: limit, OnEvent: times.see})
				start := time.Now()
				g, err := o.Run(context.Background(), sc.Name)
				took := time.Since(start)
				if err != nil || g.Status != Completed {
					b.Fatalf("%s (limit %d): %v %s", sc.Name, limit, err, g.Summary())
				}
				if limit == 1 {
					ser += took
					sum, cp := times.bound(sc)
					nodeSum += sum
					critical += cp
					continue
				}
				par += took
				s := o.Stats()
				width += s.WidthTime
				busy += s.BusyTime
			}
		}
		b.ReportMetric(float64(par.Milliseconds()), "parallel-ms")
		b.ReportMetric(float64(ser.Milliseconds()), "serial-ms")
		b.ReportMetric(100*(1-float64(par)/float64(ser)), "%-lower")
		b.ReportMetric(100*(1-float64(critical)/float64(nodeSum)), "bound-%-lower")
		b.ReportMetric(float64(width)/float64(busy), "avg-width")
	}
}

// nodeTimes measures each node's task, from the event that gives its task
// id to its end (events come one at a time, from the loop).
type nodeTimes struct {
	start map[string]time.Time
	took  map[string]time.Duration
}

func (n *nodeTimes) see(e Event) {
	switch e.Kind {
	case "node_task":
		n.start[e.Node] = e.Time
	case "node_end":
		n.took[e.Node] = e.Time.Sub(n.start[e.Node])
	}
}

// bound is the sum of the case's node times and its critical path: the
// longest chain of dependencies, weighted by those times.
func (n *nodeTimes) bound(sc suiteCase) (sum, critical time.Duration) {
	finish := map[string]time.Duration{}
	var at func(id string) time.Duration
	at = func(id string) time.Duration {
		if f, ok := finish[id]; ok {
			return f
		}
		var before time.Duration
		for _, sn := range sc.Nodes {
			if sn.ID == id {
				for _, d := range sn.After {
					before = max(before, at(d))
				}
			}
		}
		finish[id] = before + n.took[id]
		return finish[id]
	}
	for _, sn := range sc.Nodes {
		sum += n.took[sn.ID]
		critical = max(critical, at(sn.ID))
	}
	return sum, critical
}

// BenchmarkOrchestrationOverhead is the orchestrator's own cost per node:
// devices that answer at once, a planner that adds a wide graph and then
// only watches, the graph saved at every change. Per node: ready check,
// start, durable saves, end, planner step.
func BenchmarkOrchestrationOverhead(b *testing.B) {
	const nodes = 50
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			var st Store = NewMemoryStore()
			if kind == "sqlite" {
				s, err := store.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "s.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				st = NewServerStore(s)
			}
			f := newFake(threeDevices...)
			o, err := New(Options{Devices: f, Store: st, MaxConcurrent: 8, PerDevice: 8, NewPlanner: func(*Graph) (Stepper, error) {
				return stepFunc(func(p *edits, g *Graph, _ []string) (fsm.State, string) {
					if len(g.Nodes) == 0 {
						for i := range nodes {
							p.do(b, ToolAddNode, node(fmt.Sprintf("n%d", i), threeDevices[i%3].ID, "t"))
						}
						for i := 3; i < nodes; i++ {
							p.do(b, ToolAddEdge, map[string]any{"from": fmt.Sprintf("n%d", i-3), "to": fmt.Sprintf("n%d", i)})
						}
					}
					return fsm.Continue, ""
				}), nil
			}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				g, err := o.Run(context.Background(), "overhead")
				if err != nil || g.Status != Completed {
					b.Fatalf("%v %s", err, g.Summary())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*nodes)/1000, "ms/node")
			// The process's CPU time per node: what the orchestration costs
			// whatever else the machine runs (wall time under load waits
			// for a core).
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*nodes)/1000, "cpu-ms/node")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
