package constellation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/cputime"
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
// each model call taking a fixed latency. Each run has devices of its
// own, closed when it ends (with the apps their desktop tools launched),
// so that both runs of a node do the same work. It reports both
// end-to-end times, how much lower the parallel one is, the average
// parallel width and the bound the measurement cannot beat (see
// latencyBound).
func BenchmarkSuiteParallelVsSerial(b *testing.B) {
	lat := benchLatency(b)
	var cases []suiteCase
	for _, sc := range loadSuite(b) {
		if len(sc.Name) < 6 || sc.Name[:6] != "fault_" {
			cases = append(cases, sc)
		}
	}
	for range b.N {
		var runs []caseRuns
		var width, busy, tail, handoff time.Duration
		for _, sc := range cases {
			cr := caseRuns{sc: sc}
			for _, limit := range []int{8, 1} {
				c := newCluster(b, store.NewMemory(), lat, sc.devices()...)
				times := newRunTimes()
				o := c.orchestrator(b, plannerFor(b, sc, lat), Options{MaxConcurrent: limit, OnEvent: times.see})
				times.begin = time.Now()
				g, err := o.Run(context.Background(), sc.Name)
				times.wall = time.Since(times.begin)
				c.close()
				if err != nil || g.Status != Completed {
					b.Fatalf("%s (limit %d): %v %s", sc.Name, limit, err, g.Summary())
				}
				if limit == 1 {
					cr.serial = times
					if testing.Verbose() {
						b.Logf("%s: serial %v", sc.Name, times.wall.Round(time.Millisecond))
					}
					continue
				}
				cr.parallel = times
				lead, floor, last := times.firstStart.Sub(times.begin), times.floor(sc), times.end.Sub(times.lastEnd)
				if testing.Verbose() {
					b.Logf("%s: parallel %v, lead %v, floor %v, tail %v, rest %v (longest handoff %v)", sc.Name, times.wall.Round(time.Millisecond),
						lead.Round(time.Millisecond), floor.Round(time.Millisecond), last.Round(time.Millisecond),
						(times.wall - lead - floor - last).Round(time.Millisecond), times.handoff(sc).Round(10*time.Microsecond))
				}
				s := o.Stats()
				width += s.WidthTime
				busy += s.BusyTime
				tail += last
				handoff = max(handoff, times.handoff(sc))
			}
			runs = append(runs, cr)
		}
		par, ser, bound := latencyBound(runs)
		b.ReportMetric(float64(par.Milliseconds()), "parallel-ms")
		b.ReportMetric(float64(ser.Milliseconds()), "serial-ms")
		b.ReportMetric(100*(1-float64(par)/float64(ser)), "%-lower")
		b.ReportMetric(100*bound, "bound-%-lower")
		// CI's checks: the parallel total as a share of the serial one,
		// and the points between the bound and the measurement (what the
		// orchestration and the planner add, in time no schedule needs).
		b.ReportMetric(float64(par)/float64(ser), "parallel-per-serial")
		b.ReportMetric(100*bound-100*(1-float64(par)/float64(ser)), "bound-gap-points")
		b.ReportMetric(float64(width)/float64(busy), "avg-width")
		// The parallel runs' time from their last node's end to their
		// own end: a planner step after the last ends, which no schedule
		// overlaps (none once the planner has declared its graph done).
		b.ReportMetric(float64(tail.Milliseconds())/float64(len(runs)), "tail-ms/case")
		// The longest time from a node's last dependency's end to its
		// start, over the parallel runs.
		b.ReportMetric(float64(handoff.Microseconds())/1000, "max-handoff-ms")
	}
}

// caseRuns are a case's two runs in the same benchmark run.
type caseRuns struct {
	sc               suiteCase
	parallel, serial *runTimes
}

// latencyBound sums the cases' end-to-end times and says how much lower
// the parallel total could at best have been: 1 − Σ (lead + floor) / Σ
// serial, where a case's lead is its parallel run's time before any node
// could start (the planner's first step) and its floor what any schedule
// needs from then on with the node times of that same parallel run (see
// runTimes.floor). A parallel run takes at least its lead and its floor,
// so the measurement cannot beat this bound; what separates them is the
// orchestration's and the planner's delays (between a node's end and its
// dependents' start, the planner's last step), and a schedule the device
// queues forced. The node times must be the parallel run's own: a node
// that took longer in the serial run (an app's launch, a loaded machine)
// would otherwise lower the bound below what the parallel run measured.
func latencyBound(runs []caseRuns) (parallel, serial time.Duration, bound float64) {
	var best time.Duration
	for _, cr := range runs {
		parallel += cr.parallel.wall
		serial += cr.serial.wall
		best += cr.parallel.firstStart.Sub(cr.parallel.begin) + cr.parallel.floor(cr.sc)
	}
	return parallel, serial, 1 - float64(best)/float64(serial)
}

// runTimes is what one run of a case measured, from its events (they come
// one at a time, from the loop): each node's task, from the event that
// gives its task id to its end, and the device it ran on.
type runTimes struct {
	// begin is when the run was asked for, wall when it returned.
	begin time.Time
	wall  time.Duration
	// firstStart is the first node's start; lastEnd the last node's end,
	// end the constellation's.
	firstStart, lastEnd, end time.Time
	start                    map[string]time.Time
	took                     map[string]time.Duration
	device                   map[string]string
	// launched is each node's start by the loop, ended its end.
	launched, ended map[string]time.Time
}

func newRunTimes() *runTimes {
	return &runTimes{start: map[string]time.Time{}, took: map[string]time.Duration{}, device: map[string]string{},
		launched: map[string]time.Time{}, ended: map[string]time.Time{}}
}

func (n *runTimes) see(e Event) {
	switch e.Kind {
	case "node_start":
		if n.firstStart.IsZero() {
			n.firstStart = e.Time
		}
		n.launched[e.Node] = e.Time
	case "node_task":
		n.start[e.Node], n.device[e.Node] = e.Time, e.Device
	case "node_end":
		n.took[e.Node], n.lastEnd, n.ended[e.Node] = e.Time.Sub(n.start[e.Node]), e.Time, e.Time
	case "end":
		n.end = e.Time
	}
}

// handoff is the longest time from a node's last dependency's end to its
// start by the loop: what the orchestration adds on the critical path
// between nodes.
func (n *runTimes) handoff(sc suiteCase) time.Duration {
	var worst time.Duration
	for _, sn := range sc.Nodes {
		var ready time.Time
		for _, d := range sn.After {
			if n.ended[d].After(ready) {
				ready = n.ended[d]
			}
		}
		if !ready.IsZero() {
			worst = max(worst, n.launched[sn.ID].Sub(ready))
		}
	}
	return worst
}

// floor is the least time any schedule needs to run the case's nodes
// with these node times, once the first can start: the longer of its
// critical path and its busiest device's total (a device runs one node
// at a time). The critical path is the longest chain of dependencies,
// weighted by the times, where a node also starts no earlier than the
// total of its ancestors on any one device: they must all have ended,
// one after another there (five nodes on two devices before a sixth
// need two nodes' time on one device, then the sixth).
func (n *runTimes) floor(sc suiteCase) time.Duration {
	after := map[string][]string{}
	for _, sn := range sc.Nodes {
		after[sn.ID] = sn.After
	}
	finish := map[string]time.Duration{}
	var at func(id string) time.Duration
	at = func(id string) time.Duration {
		if f, ok := finish[id]; ok {
			return f
		}
		var before time.Duration
		for _, d := range after[id] {
			before = max(before, at(d))
		}
		onDevice := map[string]time.Duration{}
		for a := range ancestors(after, id) {
			onDevice[n.device[a]] += n.took[a]
			before = max(before, onDevice[n.device[a]])
		}
		finish[id] = before + n.took[id]
		return finish[id]
	}
	var critical, busiest time.Duration
	load := map[string]time.Duration{}
	for _, sn := range sc.Nodes {
		critical = max(critical, at(sn.ID))
		load[n.device[sn.ID]] += n.took[sn.ID]
		busiest = max(busiest, load[n.device[sn.ID]])
	}
	return max(critical, busiest)
}

// BenchmarkOrchestrationOverhead is the orchestrator's own cost per node:
// devices that answer at once, a planner that adds a wide graph and then
// only watches, the graph saved at every change. Per node: ready check,
// start, durable saves, end, planner step.
func BenchmarkOrchestrationOverhead(b *testing.B) {
	const nodes = 50
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			st := benchStore(b, kind)
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
			cpu0 := cputime.Process()
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
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N*nodes)/1000, "cpu-ms/node")
		})
	}
}

// benchStore is a graph store of kind memory, or sqlite in a file of the
// benchmark's (closed when it ends), as saucer serve keeps graphs.
func benchStore(b *testing.B, kind string) Store {
	b.Helper()
	if kind != "sqlite" {
		return NewMemoryStore()
	}
	s, err := store.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return NewServerStore(s)
}

// ancestors are the nodes id depends on, directly or not.
func ancestors(after map[string][]string, id string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(id string) {
		for _, d := range after[id] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(id)
	return seen
}
