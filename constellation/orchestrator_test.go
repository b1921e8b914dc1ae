package constellation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server/store"
)

var threeDevices = []Device{{ID: "d1", Apps: []string{"shell"}}, {ID: "d2", Apps: []string{"shell"}}, {ID: "d3", Apps: []string{"shell", "desktop"}}}

// waiters counts nodes that wait for a slot.
type waiters struct {
	mu   sync.Mutex
	n    int
	wake chan struct{}
}

func newWaiters(o *Orchestrator) *waiters {
	w := &waiters{wake: make(chan struct{}, 100)}
	o.onWait = func(string) {
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
		w.wake <- struct{}{}
	}
	return w
}

// until waits for n slot waits and k starts.
func until(t *testing.T, f *fakeDevices, w *waiters, starts, waits int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	gotStarts, gotWaits := 0, 0
	for gotStarts < starts || gotWaits < waits {
		select {
		case <-f.started:
			gotStarts++
		case <-w.wake:
			gotWaits++
		case <-deadline:
			t.Fatalf("saw %d starts and %d waits, want %d and %d", gotStarts, gotWaits, starts, waits)
		}
	}
}

func TestGlobalLimitIsEnforced(t *testing.T) {
	f := newFake(threeDevices...)
	f.hold = true
	o, err := New(Options{Devices: f, MaxConcurrent: 2, PerDevice: 4, NewPlanner: planOnce(t, []map[string]any{
		node("a", "d1", "t"), node("b", "d1", "t"), node("c", "d2", "t"), node("d", "d2", "t"), node("e", "d3", "t"), node("f", "d3", "t"),
	})})
	if err != nil {
		t.Fatal(err)
	}
	w := newWaiters(o)
	id, err := o.Start(context.Background(), "six at once")
	if err != nil {
		t.Fatal(err)
	}
	// Every node is accounted for: two run, four wait for a global slot.
	until(t, f, w, 2, 4)
	f.mu.Lock()
	started := len(f.starts)
	f.mu.Unlock()
	if started != 2 {
		t.Fatalf("%d tasks started under a limit of 2", started)
	}
	close(f.release)
	g := wait(t, o, id)
	if g.Status != Completed || f.maxRun != 2 {
		t.Fatalf("status %s, at most %d at once (want 2): %s", g.Status, f.maxRun, g.Summary())
	}
	if s := o.Stats(); s.NodesRun != 6 || s.MaxWidth != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDeviceQueueRunsItsNodesOneByOne(t *testing.T) {
	f := newFake(threeDevices...)
	f.hold = true
	o, _ := New(Options{Devices: f, MaxConcurrent: 8, NewPlanner: planOnce(t, []map[string]any{
		node("a", "d1", "t"), node("b", "d1", "t"), node("c", "d1", "t"), node("x", "d2", "t"),
	})})
	w := newWaiters(o)
	id, _ := o.Start(context.Background(), "one device, three tasks")
	// d1 runs one, two wait in its queue; d2 runs its own meanwhile.
	until(t, f, w, 2, 2)
	f.mu.Lock()
	onD1 := len(f.byNode["a"]) + len(f.byNode["b"]) + len(f.byNode["c"])
	f.mu.Unlock()
	if onD1 != 1 {
		t.Fatalf("%d tasks started on d1 at once, its limit is 1", onD1)
	}
	close(f.release)
	if g := wait(t, o, id); g.Status != Completed {
		t.Fatalf("%s: %s", g.Status, g.Summary())
	}
}

func TestResultsFlowToDependents(t *testing.T) {
	f := newFake(threeDevices...)
	var mu sync.Mutex
	sent := map[string]string{}
	f.outcome = func(device, task string, _ int) TaskOutcome {
		mu.Lock()
		sent[firstLine(task)] = task
		mu.Unlock()
		return TaskOutcome{OK: true, Result: "result of " + firstLine(task)}
	}
	o, _ := New(Options{Devices: f, NewPlanner: planOnce(t, []map[string]any{
		node("build", "d1", "build the report"), node("count", "d2", "count the rows"), node("open", "d3", "open it", "desktop"),
	}, [2]string{"build", "open"}, [2]string{"count", "open"})})
	g, err := o.Run(context.Background(), "report")
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %s", err, g.Summary())
	}
	for _, want := range []string{"- build (on d1): result of build the report", "- count (on d2): result of count the rows"} {
		if !strings.Contains(sent["open it"], want) {
			t.Errorf("open's task lacks %q:\n%s", want, sent["open it"])
		}
	}
	if g.Answer != "result of open it" {
		t.Errorf("answer %q", g.Answer)
	}
}

// A node failing beyond its retries cancels its dependents and the
// planner is asked: it moves the node and revives the dependent.
func TestFailureCancelsDependentsAndThePlannerReplans(t *testing.T) {
	f := newFake(threeDevices...)
	f.outcome = func(device, task string, _ int) TaskOutcome {
		if device == "d1" && strings.HasPrefix(task, "flaky") {
			return TaskOutcome{Error: "disk full"}
		}
		return TaskOutcome{OK: true, Result: "ok " + firstLine(task)}
	}
	var told []string
	planner := func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
			told = append(told, events...)
			switch {
			case len(g.Nodes) == 0:
				p.do(t, ToolAddNode, map[string]any{"id": "a", "device": "d1", "task": "flaky step", "max_retries": 1.0})
				p.do(t, ToolAddNode, node("b", "d2", "after a"))
				p.do(t, ToolAddEdge, map[string]any{"from": "a", "to": "b"})
			case g.Node("a").Status == NodeFailed:
				p.do(t, ToolUpdateNode, map[string]any{"id": "a", "device": "d3"})
				p.do(t, ToolUpdateNode, map[string]any{"id": "b"})
			case g.AllCompleted():
				return fsm.Finish, "all done"
			}
			return fsm.Continue, ""
		}), nil
	}
	g, events := runRecorded(t, f, planner, "re-plan")
	if g.Answer != "all done" {
		t.Fatalf("answer %q: %s", g.Answer, g.Summary())
	}
	joined := strings.Join(told, "\n")
	for _, want := range []string{"a failed on d1 (try 1 of 2), tried again: disk full", "a FAILED on d1: disk full; cancelled the nodes that depend on it: [b]", "a completed on d3"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the planner was not told %q:\n%s", want, joined)
		}
	}
	if got := strings.Join(f.byNode["a"], ","); got != "d1,d1,d3" {
		t.Errorf("a ran on %s, want d1,d1,d3", got)
	}
	if got := strings.Join(f.byNode["b"], ","); got != "d2" {
		t.Errorf("b ran on %s, want d2 once", got)
	}
	for k, n := range f.starts {
		if n != 1 {
			t.Errorf("%s started %d times", k, n)
		}
	}

	// The recording replays offline to the same graph.
	versions, err := Replay(events)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(versions[len(versions)-1], g); d != "" || len(versions) < 4 {
		t.Fatalf("replay ended elsewhere (%d versions): %s", len(versions), d)
	}
	// A recording that lost an event does not replay.
	var cut []Event
	for _, e := range events {
		if !(e.Kind == "node_end" && e.Node == "a" && e.Outcome.OK) {
			cut = append(cut, e)
		}
	}
	if _, err := Replay(cut); err == nil || !strings.Contains(err.Error(), "node b was sent") {
		t.Fatalf("a recording without a's end replayed: %v", err)
	}
}

func TestLostDeviceMovesTheNode(t *testing.T) {
	f := newFake(threeDevices...)
	f.outcome = f.losing("d1", "device d1 did not come back", "ok on ")
	o, _ := New(Options{Devices: f, NewPlanner: planOnce(t, []map[string]any{node("a", "d1", "t", "shell"), node("b", "d2", "t")},
		[2]string{"a", "b"})})
	g, err := o.Run(context.Background(), "lose a device")
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %s", err, g.Summary())
	}
	a := g.Node("a")
	if a.Device == "d1" || strings.Join(a.Lost, ",") != "d1" || a.Result != "ok on "+a.Device || a.Tries != 2 {
		t.Fatalf("a = %+v", a)
	}
}

// A restart mid-graph: the second orchestrator resumes from the store
// and waits on the tasks the first started; none starts twice.
func TestRestartResumesWithoutRunningTwice(t *testing.T) {
	st := store.NewMemory()
	f := newFake(threeDevices...)
	f.hold = true
	mk := func() *Orchestrator {
		o, err := New(Options{Devices: f, Store: NewServerStore(st), NewPlanner: planOnce(t, []map[string]any{
			node("a", "d1", "t"), node("b", "d2", "t"), node("c", "d3", "t"),
		}, [2]string{"a", "c"}, [2]string{"b", "c"})})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o1 := mk()
	tasks := make(chan string, 10)
	o1.opts.OnEvent = func(e Event) {
		if e.Kind == "node_task" {
			tasks <- e.Node
		}
	}
	id, _ := o1.Start(context.Background(), "restart me")
	for range 2 {
		select {
		case <-tasks:
		case <-time.After(20 * time.Second):
			t.Fatal("a and b did not start")
		}
	}
	o1.Stop()
	saved, err := NewServerStore(st).Load(context.Background(), id)
	if err != nil || saved.Status != Running || saved.Node("a").TaskID == "" {
		t.Fatalf("after the stop: %v %+v", err, saved)
	}
	o2 := mk()
	ids, err := o2.Resume(context.Background())
	if err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("resumed %v: %v", ids, err)
	}
	close(f.release)
	g := wait(t, o2, id)
	if g.Status != Completed {
		t.Fatalf("%s", g.Summary())
	}
	for k, n := range f.starts {
		if n != 1 {
			t.Errorf("%s started %d times", k, n)
		}
	}
	if len(f.starts) != 3 {
		t.Errorf("%d tasks started, want 3: %v", len(f.starts), f.starts)
	}
}

// The planner thinks on the side: while its step on a's end runs, b ends
// and c, which b unblocks, starts at once; the edit the planner then makes
// to c (pending in the copy it saw, running by the time it answers) is
// refused against the graph as it stands, and it is told so. The
// recording replays.
func TestPlannerThinksOnTheSide(t *testing.T) {
	f := newFake(threeDevices...)
	bGo, cStarted := make(chan struct{}), make(chan struct{})
	f.outcome = func(device, task string, _ int) TaskOutcome {
		switch firstLine(task) {
		case "b task":
			<-bGo
		case "c task":
			close(cStarted)
		}
		return TaskOutcome{OK: true, Result: "ok " + firstLine(task)}
	}
	var told []string
	startedWhileThinking := false
	planner := func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
			told = append(told, events...)
			switch {
			case len(g.Nodes) == 0:
				p.do(t, ToolAddNode, node("a", "d1", "a task"))
				p.do(t, ToolAddNode, node("b", "d2", "b task"))
				p.do(t, ToolAddNode, node("c", "d3", "c task"))
				p.do(t, ToolAddEdge, map[string]any{"from": "b", "to": "c"})
			case strings.Contains(strings.Join(events, "\n"), "a completed"):
				close(bGo)
				select {
				case <-cStarted:
					startedWhileThinking = true
				case <-time.After(10 * time.Second):
				}
				// In this step's copy c is still pending.
				p.do(t, ToolUpdateNode, map[string]any{"id": "c", "task": "c task, changed"})
			case g.AllCompleted():
				return fsm.Finish, "all done"
			}
			return fsm.Continue, ""
		}), nil
	}
	g, events := runRecorded(t, f, planner, "think on the side")
	if !startedWhileThinking {
		t.Fatal("c did not start while the planner thought about a's end: the planner's step blocks the loop")
	}
	if c := g.Node("c"); c.Task != "c task" || c.Result != "ok c task" {
		t.Errorf("c = %+v: an edit to a node that had started was applied", c)
	}
	if joined := strings.Join(told, "\n"); !strings.Contains(joined, `were NOT applied, none of them (update_node {"id":"c","task":"c task, changed"})`) ||
		!strings.Contains(joined, `node "c" is`) {
		t.Errorf("the planner was not told its edit was refused:\n%s", joined)
	}
	refused := 0
	for _, e := range events {
		for _, ed := range e.Edits {
			if !ed.OK && strings.HasPrefix(ed.Reason, "not applied: the graph changed") {
				refused++
			}
		}
	}
	if refused != 1 {
		t.Errorf("the recording holds %d refused edits, want 1", refused)
	}
	versions, err := Replay(events)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(versions[len(versions)-1], g); d != "" {
		t.Fatalf("the replay ends elsewhere: %s", d)
	}
}

// A planner that declared its graph all the request needs
// (finish_when_done) is not asked again once every node has completed:
// that step could only have said "finish", and it held the
// constellation's end a model call after its last node's. A failure
// still brings it back, and its re-plan ends the same way. The recording
// replays to the same end.
func TestFinishWhenDoneEndsWithoutAnotherStep(t *testing.T) {
	f := newFake(threeDevices...)
	f.outcome = func(device, task string, try int) TaskOutcome {
		if firstLine(task) == "b task" && try == 1 {
			return TaskOutcome{Error: "disk full"}
		}
		return TaskOutcome{OK: true, Result: "ok " + firstLine(task)}
	}
	var mu sync.Mutex
	var steps [][]string
	planner := func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
			mu.Lock()
			steps = append(steps, events)
			mu.Unlock()
			switch {
			case len(g.Nodes) == 0:
				p.do(t, ToolAddNode, node("a", "d1", "a task"))
				p.do(t, ToolAddNode, node("b", "d2", "b task"))
				p.do(t, ToolAddEdge, map[string]any{"from": "a", "to": "b"})
				p.do(t, ToolFinishWhenDone, map[string]any{})
			case g.Node("b").Status == NodeFailed:
				p.do(t, ToolUpdateNode, map[string]any{"id": "b", "device": "d3"})
			case g.AllCompleted():
				return fsm.Finish, "asked after the last end"
			}
			return fsm.Continue, ""
		}), nil
	}
	g, events := runRecorded(t, f, planner, "declared")
	if g.Answer != "ok b task" {
		t.Errorf("answer %q, want the last node's result (ok b task)", g.Answer)
	}
	mu.Lock()
	defer mu.Unlock()
	var told []string
	for _, evs := range steps {
		told = append(told, evs...)
	}
	joined := strings.Join(told, "\n")
	if !strings.Contains(joined, "b FAILED") {
		t.Errorf("the planner was not told of b's failure:\n%s", joined)
	}
	if strings.Contains(joined, "b completed") {
		t.Errorf("the planner was asked after the last node completed, though it had declared the graph done (%d steps):\n%s", len(steps), joined)
	}
	versions, err := Replay(events)
	if err != nil {
		t.Fatal(err)
	}
	if last := versions[len(versions)-1]; !last.FinishWhenDone || diff(last, g) != "" {
		t.Fatalf("the replay ends elsewhere (finish_when_done %v): %s", last.FinishWhenDone, diff(last, g))
	}
}

// ctxStepper is a planner whose steps may wait on their context: block
// says which (by the events shown), and stopped is told how it ended.
type ctxStepper struct {
	inner   stepFunc
	block   func(events []string) bool
	started chan struct{}
	stopped chan error
}

func (s *ctxStepper) Step(ctx context.Context, g *Graph, ds []Device, events []string) (StepResult, error) {
	if s.block(events) {
		close(s.started)
		<-ctx.Done()
		s.stopped <- context.Cause(ctx)
		return StepResult{}, context.Cause(ctx)
	}
	return s.inner.Step(ctx, g, ds, events)
}

// A graph declared done (finish_when_done) runs to its end without the
// planner: the ends of its nodes need no decision, so no step is asked
// for them (issue 33: a 40-node chain stopped at the planner's 30-step
// limit, one idle step per end).
func TestFinishWhenDoneRunsWithoutThePlanner(t *testing.T) {
	f := newFake(threeDevices...)
	var mu sync.Mutex
	steps := 0
	planner := func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, _ []string) (fsm.State, string) {
			mu.Lock()
			steps++
			mu.Unlock()
			if len(g.Nodes) == 0 {
				prev := ""
				for i := range 40 {
					id := fmt.Sprintf("n%02d", i)
					p.do(t, ToolAddNode, node(id, threeDevices[i%3].ID, id+" task"))
					if prev != "" {
						p.do(t, ToolAddEdge, map[string]any{"from": prev, "to": id})
					}
					prev = id
				}
				p.do(t, ToolFinishWhenDone, map[string]any{})
			}
			return fsm.Continue, ""
		}), nil
	}
	f.outcome = func(device, task string, _ int) TaskOutcome {
		return TaskOutcome{OK: true, Result: "ok " + firstLine(task)}
	}
	o, _ := New(Options{Devices: f, NewPlanner: planner})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := o.Run(ctx, "a long chain")
	if err != nil || g.Status != Completed || !g.AllCompleted() || g.Answer != "ok n39 task" {
		t.Fatalf("%v %s %q: %s", err, g.Status, g.Answer, g.Summary())
	}
	mu.Lock()
	defer mu.Unlock()
	if steps != 1 {
		t.Errorf("the planner took %d steps for a graph it had declared done, want 1 (its plan)", steps)
	}
}

// TestRefusedEditBringsThePlannerBack: a node the graph refuses (its
// device lacks the app it names) ends the planner's step with nothing to
// run; the planner is asked again, and puts it where the
// app is, rather than the constellation failing for a graph that cannot
// go on.
func TestRefusedEditBringsThePlannerBack(t *testing.T) {
	f := newFake(threeDevices...)
	var told []string
	steps := 0
	planner := func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, events []string) (fsm.State, string) {
			steps++
			told = append(told, events...)
			switch {
			case steps == 1:
				// Refused: d1 has no desktop.
				r := p.ed.Execute(context.Background(), []command.Command{{ToolName: ToolAddNode,
					Parameters: map[string]any{"id": "shot", "device": "d1", "task": "take a screenshot", "apps": []any{"desktop"}}}})
				if r[0].OK() {
					t.Errorf("a node on a device without its app was accepted")
				}
			case len(g.Nodes) == 0:
				p.do(t, ToolAddNode, map[string]any{"id": "shot", "device": "d3", "task": "take a screenshot", "apps": []any{"desktop"}})
			case g.AllCompleted():
				return fsm.Finish, "done"
			}
			return fsm.Continue, ""
		}), nil
	}
	o, _ := New(Options{Devices: f, NewPlanner: planner})
	g, err := o.Run(context.Background(), "a screenshot")
	if err != nil || g.Status != Completed || g.Answer != "done" {
		t.Fatalf("%v %s %q %q: %s", err, g.Status, g.Answer, g.Error, g.Summary())
	}
	joined := strings.Join(told, "\n")
	// The reason itself reached it as the tool result of its edit; the
	// event says why it is asked again.
	if !strings.Contains(joined, "edits refused in your last step") {
		t.Errorf("the planner was not told why it is asked again:\n%s", joined)
	}
	if got := strings.Join(f.byNode["shot"], ","); got != "d3" {
		t.Errorf("shot ran on %q, want d3", got)
	}
}
