package constellation

import (
	"context"
	"fmt"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
)

// layered is a plan of n nodes in layers of width w over the three test
// devices, each node after one node of the layer before: one reply's
// edits.
func layered(n, w int) []command.Command {
	var cmds []command.Command
	for i := range n {
		cmds = append(cmds, command.Command{ToolName: ToolAddNode, Parameters: node(fmt.Sprint("n", i), threeDevices[i%3].ID, "step "+fmt.Sprint(i), "shell")})
		if i >= w {
			cmds = append(cmds, command.Command{ToolName: ToolAddEdge, Parameters: map[string]any{"from": fmt.Sprint("n", i-w), "to": fmt.Sprint("n", i)}})
		}
	}
	return cmds
}

// BenchmarkAcceptPlan: one planner reply that plans 1,000 nodes in
// layers of 20 (1,980 edits), checked together and made, as the editor
// does, then made again on the live graph, as the orchestrator does.
func BenchmarkAcceptPlan(b *testing.B) {
	cmds := layered(1000, 20)
	for b.Loop() {
		g := &Graph{ID: "g", Request: "r", Status: Running}
		ed := &editor{graph: g, devices: threeDevices}
		for _, r := range ed.Execute(context.Background(), cmds) {
			if !r.OK() {
				b.Fatal(r.Error)
			}
		}
		live := &Graph{ID: "g", Request: "r", Status: Running}
		if _, refused := applyEdits(live, threeDevices, ed.edits, Bounds{}); len(refused) > 0 || len(live.Nodes) != 1000 {
			b.Fatalf("%v %d", refused, len(live.Nodes))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/plan")
}

// BenchmarkLargeGraphOverhead is the orchestrator's own cost per node on
// a 1,000-node layered graph whose devices answer at once, the graph
// saved at every change (in memory, or in SQLite as saucer serve keeps
// it) and the planner asked nothing after
// its plan (finish_when_done).
func BenchmarkLargeGraphOverhead(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) { largeGraphOverhead(b, kind) })
	}
}

func largeGraphOverhead(b *testing.B, kind string) {
	const nodes = 1000
	cmds := layered(nodes, 20)
	for b.Loop() {
		st := benchStore(b, kind)
		f := newFake(threeDevices...)
		o, err := New(Options{Devices: f, Store: st, MaxConcurrent: 24, PerDevice: 8, NewPlanner: func(*Graph) (Stepper, error) {
			return stepFunc(func(p *edits, g *Graph, _ []string) (fsm.State, string) {
				if len(g.Nodes) == 0 {
					p.ed.Execute(context.Background(), append(cmds, command.Command{ToolName: ToolFinishWhenDone, Parameters: map[string]any{}}))
				}
				return fsm.Continue, ""
			}), nil
		}})
		if err != nil {
			b.Fatal(err)
		}
		g, err := o.Run(context.Background(), "a thousand steps")
		if err != nil || g.Status != Completed || g.PlannerSteps > 1 {
			b.Fatalf("%v %s after %d planner steps", err, g.Status, g.PlannerSteps)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*nodes)/1000, "ms/node")
}
