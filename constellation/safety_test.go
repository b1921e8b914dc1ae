package constellation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
)

// add connects a device (again).
func (f *fakeDevices) add(d Device) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devs = append(f.devs, d)
}

func (f *fakeDevices) ranOn(node string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.byNode[node])
}

// onEvent calls fn, in the constellation's loop, with each event of kind.
func onEvent(o *Orchestrator, kind string, fn func(Event)) (cancel func()) {
	return o.Subscribe(func(e Event) {
		if e.Kind == kind {
			fn(e)
		}
	})
}

// A reply's edits are applied together: an edge may come before the
// nodes it joins, and one edit that cannot be made keeps all the others
// of its reply from being made, each result saying why.
func TestAReplyIsAppliedWholeOrNotAtAll(t *testing.T) {
	g := &Graph{ID: "g", Request: "r", Status: Running}
	ed := &editor{graph: g, devices: threeDevices}
	exec := func(cmds ...command.Command) []command.Result { return ed.Execute(context.Background(), cmds) }
	cmd := func(op string, args map[string]any) command.Command {
		return command.Command{ToolName: op, Parameters: args}
	}
	rs := exec(cmd(ToolAddEdge, map[string]any{"from": "u", "to": "v"}), cmd(ToolAddNode, node("u", "d1", "make it")), cmd(ToolAddNode, node("v", "d2", "use it")))
	for i, r := range rs {
		if !r.OK() {
			t.Fatalf("edit %d of a valid reply (its edge first) was refused: %s", i, r.Error)
		}
	}
	if len(g.Nodes) != 2 || len(g.Edges) != 1 {
		t.Fatalf("graph after a valid reply:\n%s", g.Summary())
	}
	rs = exec(cmd(ToolAddNode, node("w", "d1", "make more")), cmd(ToolAddNode, node("x", "d2", "show it", "desktop")),
		cmd(ToolAddEdge, map[string]any{"from": "w", "to": "x"}), cmd(ToolRemoveNode, map[string]any{"id": "v"}))
	for i, r := range rs {
		if r.OK() {
			t.Errorf("edit %d of a reply with a bad edit was made", i)
		}
		if !strings.Contains(r.Error, "applied together or not at all") || !strings.Contains(r.Error, `node "x" needs app "desktop"`) {
			t.Errorf("edit %d's refusal does not say why: %s", i, r.Error)
		}
	}
	if g.Node("w") != nil || g.Node("x") != nil || g.Node("v") == nil || len(g.Edges) != 1 {
		t.Fatalf("a refused reply changed the graph:\n%s", g.Summary())
	}
	if len(ed.edits) != 7 || ed.edits[3].OK || ed.edits[0].OK != true {
		t.Errorf("recorded edits: %+v", ed.edits)
	}
}

// Bounds refuse a plan whole, with the limit and its setting named.
func TestBoundsRefuseAPlanWhole(t *testing.T) {
	g := &Graph{ID: "g", Request: "r", Status: Running}
	ed := &editor{graph: g, devices: threeDevices, bounds: Bounds{MaxNodes: 3, MaxEdits: 4}}
	var cmds []command.Command
	for i := range 4 {
		cmds = append(cmds, command.Command{ToolName: ToolAddNode, Parameters: node(fmt.Sprint("n", i), "d1", "t")})
	}
	rs := ed.Execute(context.Background(), cmds)
	if rs[0].OK() || !strings.Contains(rs[0].Error, "would have 4 nodes") || !strings.Contains(rs[0].Error, "constellation.max_nodes") {
		t.Errorf("a fourth node past max_nodes 3: %+v", rs[0])
	}
	rs = ed.Execute(context.Background(), append(cmds[:3:3], cmds[:2]...))
	if rs[0].OK() || !strings.Contains(rs[0].Error, "has 5 edits") || !strings.Contains(rs[0].Error, "constellation.max_edits") {
		t.Errorf("five edits past max_edits 4: %+v", rs[0])
	}
	if len(g.Nodes) != 0 {
		t.Fatalf("refused plans left nodes:\n%s", g.Summary())
	}
}

var sandboxed = []Device{
	{ID: "sb1", Platform: "linux", Apps: []string{"shell"}, Sandbox: "/img/a (Debian 12)"},
	{ID: "c1", Platform: "linux", Apps: []string{"shell"}},
	{ID: "sb2", Platform: "linux", Apps: []string{"shell"}, Sandbox: "/img/b (Debian 13)"},
}

// A node planned on a sandboxed device whose device is lost during its
// task never moves to a device whose tools run on the host, nor to a
// sandbox of another image: it waits for its device, and runs there
// again when it is back.
func TestSandboxedNodeWaitsRatherThanMoveToTheHost(t *testing.T) {
	f := newFake(sandboxed...)
	var mu sync.Mutex
	lost := false
	f.outcome = func(device, task string, _ int) TaskOutcome {
		mu.Lock()
		defer mu.Unlock()
		if device == "sb1" && !lost {
			lost = true
			f.remove("sb1")
			return TaskOutcome{DeviceLost: true, Error: "device sb1 went away"}
		}
		return TaskOutcome{OK: true, Result: "ran as root on " + device}
	}
	o, _ := New(Options{Devices: f, DeviceWait: 10 * time.Second, NewPlanner: planOnce(t, []map[string]any{node("k4", "sb1", "apt-get install -y jq as root", "shell")})})
	o.recheck = 5 * time.Millisecond
	waited := make(chan Event, 1)
	defer onEvent(o, "node_wait", func(e Event) {
		select {
		case waited <- e:
			f.add(sandboxed[0]) // sb1 reconnects
		default:
		}
	})()
	g, err := o.Run(context.Background(), "install jq in the sandbox")
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %s", err, g.Summary())
	}
	if e := <-waited; e.Node != "k4" || e.Device != "sb1" {
		t.Errorf("waited %+v", e)
	}
	if ran := f.ranOn("k4"); strings.Join(ran, ",") != "sb1,sb1" {
		t.Fatalf("k4 ran on %v: it must run only on sb1", ran)
	}
	if k := g.Node("k4"); k.Requires == nil || k.Requires.Sandbox != "/img/a (Debian 12)" {
		t.Errorf("k4 does not keep its sandbox: %+v", k.Requires)
	}
}

// When another device with the same sandbox image is connected, the node
// moves to it at once.
func TestSandboxedNodeMovesOnlyToTheSameImage(t *testing.T) {
	devs := append(slices.Clone(sandboxed), Device{ID: "sb3", Platform: "linux", Apps: []string{"shell"}, Sandbox: "/img/a (Debian 12)"})
	f := newFake(devs...)
	f.outcome = f.losing("sb1", "device sb1 went away", "on ")
	o, _ := New(Options{Devices: f, DeviceWait: 10 * time.Second, NewPlanner: planOnce(t, []map[string]any{node("k4", "sb1", "as root", "shell")})})
	g, err := o.Run(context.Background(), "r")
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %s", err, g.Summary())
	}
	if ran := f.ranOn("k4"); strings.Join(ran, ",") != "sb1,sb3" {
		t.Fatalf("k4 ran on %v: from sb1 it may move only to sb3 (the same image)", ran)
	}
}

// A sandboxed node whose device does not come back within the wait
// fails with the reason, and the planner cannot move it to the host.
func TestSandboxedNodeFailsRatherThanRunOnTheHost(t *testing.T) {
	f := newFake(sandboxed...)
	f.outcome = f.losing("sb1", "device sb1 went away", "on ")
	var refusal string
	o, _ := New(Options{Devices: f, DeviceWait: 20 * time.Millisecond, NewPlanner: func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
			if len(g.Nodes) == 0 {
				p.do(t, ToolAddNode, node("k4", "sb1", "as root", "shell"))
				p.do(t, ToolFinishWhenDone, map[string]any{})
				return fsm.Continue, ""
			}
			if strings.Contains(strings.Join(events, "\n"), "k4 FAILED") {
				r := p.ed.Execute(context.Background(), []command.Command{{ToolName: ToolUpdateNode, Parameters: map[string]any{"id": "k4", "device": "c1"}}})
				refusal = r[0].Error
				return fsm.Fail, "k4 cannot run"
			}
			return fsm.Continue, ""
		}), nil
	}})
	o.recheck = 5 * time.Millisecond
	g, err := o.Run(context.Background(), "r")
	if err != nil || g.Status != Failed {
		t.Fatalf("%v %s", err, g.Summary())
	}
	k := g.Node("k4")
	if k.Status != NodeFailed || !strings.Contains(k.Error, "did not connect within") || !strings.Contains(k.Error, "sandbox /img/a (Debian 12)") {
		t.Errorf("k4: %s %q", k.Status, k.Error)
	}
	if !strings.Contains(refusal, `node "k4" requires a sandbox (its tools run on the host)`) {
		t.Errorf("the planner's move of k4 to the host: %q", refusal)
	}
	if ran := f.ranOn("k4"); strings.Join(ran, ",") != "sb1" {
		t.Fatalf("k4 ran on %v", ran)
	}
}

// A ready node whose device is not connected (it reconnects after a
// restart, say) waits for it rather than move to another host's device.
func TestReadyNodeWaitsForItsDevice(t *testing.T) {
	f := newFake(threeDevices...)
	f.hold = true
	o, _ := New(Options{Devices: f, NewPlanner: planOnce(t, []map[string]any{node("a", "d1", "t", "shell"), node("b", "d1", "t", "shell")},
		[2]string{"a", "b"})})
	o.recheck = 5 * time.Millisecond
	defer onEvent(o, "node_wait", func(e Event) { f.add(threeDevices[0]) })()
	id, err := o.Start(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	<-f.started // a runs on d1; d1 then goes away
	f.remove("d1")
	close(f.release)
	g := wait(t, o, id)
	if g.Status != Completed || strings.Join(f.ranOn("b"), ",") != "d1" {
		t.Fatalf("b ran on %v: %s", f.ranOn("b"), g.Summary())
	}
}

// A constellation that ends leaves no node running or pending: the nodes
// queued for a slot never start, the one in flight ends with it. Ended
// two ways: cancelled, and by a planner that fails on a node's end while
// the others wait for a slot.
func TestEndedConstellationLeavesNoNodeRunning(t *testing.T) {
	var nodes []map[string]any
	for i := range 20 {
		nodes = append(nodes, node(fmt.Sprint("n", i), "d1", "t"))
	}
	check := func(t *testing.T, f *fakeDevices, g *Graph, started int) {
		t.Helper()
		for _, n := range g.Nodes {
			if !n.Status.Ended() {
				t.Errorf("%s is %s after the constellation ended", n.ID, n.Status)
			}
		}
		if len(f.starts) > started {
			t.Errorf("%d tasks started, want at most %d: the queued nodes ran after the end", len(f.starts), started)
		}
	}
	t.Run("cancelled", func(t *testing.T) {
		f := newFake(threeDevices...)
		f.hold = true
		o, _ := New(Options{Devices: f, MaxConcurrent: 1, PerDevice: 20, NewPlanner: planOnce(t, nodes)})
		id, err := o.Start(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		<-f.started // n0 runs; the other 19 wait for the one slot
		if err := o.Cancel(id); err != nil {
			t.Fatal(err)
		}
		g := wait(t, o, id)
		if g.Status != Cancelled {
			t.Fatalf("%s: %s\n%s", g.Status, g.Error, g.Summary())
		}
		check(t, f, g, 1)
	})
	t.Run("failed", func(t *testing.T) {
		f := newFake(threeDevices...)
		f.hold = true
		var once sync.Once
		o, _ := New(Options{Devices: f, MaxConcurrent: 1, PerDevice: 20, NewPlanner: func(*Graph) (Stepper, error) {
			return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
				if len(g.Nodes) == 0 {
					for _, n := range nodes {
						p.do(t, ToolAddNode, n)
					}
					return fsm.Continue, ""
				}
				return fsm.Fail, "enough"
			}), nil
		}, OnEvent: func(e Event) {
			if e.Kind == "planner" && e.Status == string(fsm.Fail) {
				once.Do(func() { close(f.release) }) // what runs may end now
			}
		}})
		id, err := o.Start(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		<-f.started
		f.release <- struct{}{} // n0 ends; the planner fails on it
		g := wait(t, o, id)
		if g.Status != Failed {
			t.Fatalf("%s: %s", g.Status, g.Summary())
		}
		// n0, and n1 if it started before the planner answered.
		check(t, f, g, 2)
	})
}

// A node that asks for review (review: true) brings the planner back when
// it completes, even after finish_when_done, so that its result can
// decide what follows; the other ends do not.
func TestReviewedResultWakesThePlanner(t *testing.T) {
	f := newFake(threeDevices...)
	var seen []string
	o, _ := New(Options{Devices: f, NewPlanner: func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
			seen = append(seen, strings.Join(events, "; "))
			if len(g.Nodes) == 0 {
				a := node("a", "d1", "count the files")
				a["review"] = true
				p.do(t, ToolAddNode, a)
				p.do(t, ToolAddNode, node("b", "d2", "report"))
				p.do(t, ToolAddNode, node("c", "d3", "unrelated"))
				p.do(t, ToolAddEdge, map[string]any{"from": "a", "to": "b"})
				p.do(t, ToolFinishWhenDone, map[string]any{})
				return fsm.Continue, ""
			}
			if g.Node("a").Status == NodeCompleted && g.Node("b").Status == NodePending {
				p.do(t, ToolUpdateNode, map[string]any{"id": "b", "task": "report the count in words"})
			}
			return fsm.Continue, ""
		}), nil
	}, ReviewBeforeStart: true})
	g, err := o.Run(context.Background(), "r")
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %s", err, g.Summary())
	}
	if len(seen) != 2 || !strings.Contains(seen[1], "a completed") {
		t.Fatalf("%d planner steps, shown %q: a's review should bring exactly one step", len(seen), seen)
	}
	if b := g.Node("b"); !strings.HasPrefix(b.Sent, "report the count in words") {
		t.Errorf("b was sent %q: the step on a's result did not decide it", b.Sent)
	}
}
