package constellation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server/store"
)

// proofGraph is a graph of n nodes in layers of w (w = 1: a chain), each
// node after the node w before it, spread over linux1-3 and, on every
// third node of column 0 after the first, sandbox1. Each node appends its
// id to ran.log on its device. Node n0, on a device of its own (gate1),
// waits for the file gate in its directory: nothing of column 0, where
// the sandboxed nodes are, can start before the test opens it.
func proofGraph(n, w int) (nodes []PlanNode, sandboxed map[string]bool) {
	sandboxed = map[string]bool{}
	for i := range n {
		id := fmt.Sprint("n", i)
		nd := PlanNode{ID: id, Device: fmt.Sprint("linux", 1+i%3), Run: "echo " + id + " >> ran.log; echo " + id}
		if i >= w {
			nd.After = []string{fmt.Sprint("n", i-w)}
		}
		switch {
		case i == 0:
			nd.Device, nd.Run = "gate1", "while [ ! -f gate ]; do sleep 0.01; done; "+nd.Run
		case i%w == 0 && (i/w)%3 == 1:
			// As root in the sandbox: a task that must never run on the
			// host.
			nd.Device, nd.Run = "sandbox1", "echo "+id+" >> ran.log; echo "+id+" uid $(id -u)"
			sandboxed[id] = true
		}
		nodes = append(nodes, nd)
	}
	return nodes, sandboxed
}

// proveOnce runs a proofGraph through the constellation agent on a real
// server with real devices, restarts the server in the middle (a new
// server and orchestrator on the same SQLite store, the devices
// reconnecting), keeps the sandboxed device away until a node of its
// waits for it (a device that reconnects slowly), and checks that every
// node ran exactly once, each sandboxed node in the sandbox only.
func proveOnce(t *testing.T, n, w int) {
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := newClusterOf(t, st, nil, time.Minute, 0, "linux1", "linux2", "linux3", "gate1", "sandbox1")
	nodes, sandboxed := proofGraph(n, w)
	sc := suiteCase{Name: fmt.Sprintf("proof-%d", n), Nodes: nodes}
	events := make(chan Event, 4*n+64)
	o1 := c.orchestrator(t, plannerFor(t, sc, 0), Options{OnEvent: func(e Event) { events <- e }})
	id, err := o1.Start(context.Background(), "prove it")
	if err != nil {
		t.Fatal(err)
	}
	// Restart once n0 runs (it waits on its gate) and a quarter of the
	// other nodes, at most 100, have ended.
	ended, gated := 0, false
	for want := min((n-n/w)/4, 100); !gated || ended < want; {
		select {
		case e := <-events:
			gated = gated || (e.Kind == "node_task" && e.Node == "n0")
			if e.Kind == "node_end" {
				ended++
			}
		case <-time.After(2 * time.Minute):
			g, _ := o1.Get(context.Background(), id)
			t.Fatalf("before the restart: n0 started %v, %d nodes ended; the graph (%d planner steps):\n%s", gated, ended, g.PlannerSteps, statusCounts(g))
		}
	}
	o1.Stop()
	c.kill("sandbox1") // away, idle: none of its nodes can have started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.srv.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	c.startServer()
	waits := make(chan Event, 16)
	planned := map[string]string{}
	for _, nd := range nodes {
		planned[nd.ID] = nd.Device
	}
	o2 := c.orchestrator(t, plannerFor(t, sc, 0), Options{OnEvent: func(e Event) {
		// A node waits for its own device: a host device still
		// reconnecting after the restart too. The sandboxed device's
		// wait is the one the test waits for.
		if e.Kind == "node_wait" && e.Device != planned[e.Node] {
			t.Errorf("%s waited for %s, not its own device %s", e.Node, e.Device, planned[e.Node])
		}
		if e.Kind == "node_wait" && sandboxed[e.Node] {
			select {
			case waits <- e:
			default:
			}
		}
	}})
	if ids, err := o2.Resume(context.Background()); err != nil || len(ids) != 1 {
		t.Fatalf("resumed %v: %v", ids, err)
	}
	os.WriteFile(filepath.Join(c.dirs["gate1"], "gate"), nil, 0o644)
	select {
	case e := <-waits:
		if !sandboxed[e.Node] || e.Device != "sandbox1" {
			t.Errorf("%s waited for %s", e.Node, e.Device)
		}
	case <-time.After(2 * time.Minute):
		g, _ := o2.Get(context.Background(), id)
		for _, ti := range c.srv.Tasks() {
			if ti.Status != "completed" {
				t.Logf("task %s %s %s: %s", ti.ID, ti.TaskName, ti.Status, ti.Error)
				for _, st := range ti.Steps {
					t.Logf("  step %s %s %s %.400s", st.Agent, st.Status, st.Error, st.Result)
				}
			}
		}
		t.Fatalf("no sandboxed node waited for sandbox1; the graph: %s", statusCounts(g))
	}
	c.connect("sandbox1")
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer wcancel()
	g, err := o2.Wait(wctx, id)
	if err != nil {
		t.Fatal(err)
	}
	checkCase(t, c, sc, g)
	if g.PlannerSteps > 2 {
		t.Errorf("the planner took %d steps: a declared graph runs to its end without it", g.PlannerSteps)
	}
	// Each node ran once: its id is in one device's ran.log, once; a
	// sandboxed node's in sandbox1's, as root.
	ran := map[string][]string{}
	for d := range c.dirs {
		log, _ := c.read(d, "ran.log")
		for _, line := range strings.Fields(log) {
			ran[line] = append(ran[line], d)
		}
	}
	for _, nd := range nodes {
		where := ran[nd.ID]
		switch {
		case len(where) != 1:
			t.Errorf("%s ran %d times (on %v), want once", nd.ID, len(where), where)
		case sandboxed[nd.ID] && where[0] != "sandbox1":
			t.Errorf("%s, planned in the sandbox, ran on %s", nd.ID, where[0])
		case sandboxed[nd.ID] && !strings.HasSuffix(g.Node(nd.ID).Result, "uid 0"):
			t.Errorf("%s's result %q: not root in the sandbox", nd.ID, g.Node(nd.ID).Result)
		case sandboxed[nd.ID] && (g.Node(nd.ID).Requires == nil || g.Node(nd.ID).Requires.Sandbox == ""):
			// The device said its sandbox image when it registered, and
			// the node placed on it keeps it.
			t.Errorf("%s does not require sandbox1's image: %+v", nd.ID, g.Node(nd.ID).Requires)
		}
	}
	if len(ran) != len(nodes) {
		t.Errorf("%d ids in the logs for %d nodes", len(ran), len(nodes))
	}
}

// statusCounts says how many nodes are in each status, and which run.
func statusCounts(g *Graph) string {
	count := map[NodeStatus]int{}
	var running []string
	for _, n := range g.Nodes {
		count[n.Status]++
		if n.Status == NodeRunning {
			running = append(running, n.ID+"@"+n.Device+"/"+n.TaskID)
		}
	}
	return fmt.Sprintf("%v; running: %v", count, running)
}

// The proof of issue 33 at the sizes that broke: a 40-node chain and a
// 200-node layered graph, each across a server restart with a sandboxed
// device that reconnects late. (The 1,000-node graph is in
// proof_large_test.go, without the race detector.)
func TestProofChain40(t *testing.T)    { proveOnce(t, 40, 1) }
func TestProofLayered200(t *testing.T) { proveOnce(t, 200, 20) }

// A node whose device is busy with a task of its own (a user's, here)
// waits for it, queued, rather than fail: it starts once that task ends,
// on its first attempt.
func TestBusyDeviceQueuesTheNode(t *testing.T) {
	c := newCluster(t, store.NewMemory(), 0, "linux1")
	busy, err := c.srv.Dispatch("linux1", "Hold the device.\nRUN: while [ ! -f gate ]; do sleep 0.01; done; echo held", "", "user")
	if err != nil {
		t.Fatal(err)
	}
	sc := suiteCase{Name: "busy", Nodes: []PlanNode{{ID: "a", Device: "linux1", Run: "echo a >> ran.log; echo a"}}}
	started := make(chan struct{}, 1)
	o := c.orchestrator(t, plannerFor(t, sc, 0), Options{OnEvent: func(e Event) {
		if e.Kind == "node_start" {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	}})
	id, err := o.Start(context.Background(), "while the device is busy")
	if err != nil {
		t.Fatal(err)
	}
	<-started // the node is on its way to the busy device: let the user's task end
	os.WriteFile(filepath.Join(c.dirs["linux1"], "gate"), nil, 0o644)
	g := wait(t, o, id)
	if a := g.Node("a"); g.Status != Completed || a.Attempts != 1 || a.Result != "a" {
		t.Fatalf("%s: %+v", g.Status, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if info, err := c.srv.Wait(ctx, busy.ID); err != nil || info.Status != "completed" {
		t.Fatalf("the user's task: %v %v", info.Status, err)
	}
}
