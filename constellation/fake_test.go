package constellation

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
)

// fakeDevices is a scripted set of devices that records what it was
// asked: each task ends as outcome says, when release lets it.
type fakeDevices struct {
	mu      sync.Mutex
	devs    []Device
	starts  map[string]int // by key
	tasks   map[string]*fakeTask
	byNode  map[string][]string // device per start, by node
	running int
	maxRun  int
	outcome func(device, task string, try int) TaskOutcome
	// hold, when set, keeps every task running until release is closed.
	hold    bool
	release chan struct{}
	started chan string // key of each task started
}

type fakeTask struct {
	key, device string
	out         TaskOutcome
	done        chan struct{}
}

func newFake(devs ...Device) *fakeDevices {
	return &fakeDevices{devs: slices.Clone(devs), starts: map[string]int{}, tasks: map[string]*fakeTask{}, byNode: map[string][]string{},
		release: make(chan struct{}), started: make(chan string, 100),
		outcome: func(device, task string, _ int) TaskOutcome {
			return TaskOutcome{OK: true, Result: "done: " + firstLine(task)}
		}}
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

func (f *fakeDevices) List(context.Context) ([]Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.devs), nil
}

func (f *fakeDevices) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devs = slices.DeleteFunc(f.devs, func(d Device) bool { return d.ID == id })
}

func (f *fakeDevices) Start(_ context.Context, device, key, task string) (string, error) {
	f.mu.Lock()
	if t, ok := f.tasks[key]; ok {
		f.mu.Unlock()
		return t.key, nil
	}
	if !slices.ContainsFunc(f.devs, func(d Device) bool { return d.ID == device }) {
		f.mu.Unlock()
		return "", ErrDeviceGone
	}
	f.starts[key]++
	node := nodeOfKey(key)
	f.byNode[node] = append(f.byNode[node], device)
	try := len(f.byNode[node])
	t := &fakeTask{key: key, device: device, done: make(chan struct{})}
	f.tasks[key] = t
	f.running++
	f.maxRun = max(f.maxRun, f.running)
	hold := f.hold
	f.mu.Unlock()
	select {
	case f.started <- key: // buffered for the tests that read it
	default:
	}
	go func() {
		if hold {
			<-f.release
		}
		out := f.outcome(device, task, try)
		f.mu.Lock()
		t.out = out
		f.running--
		f.mu.Unlock()
		close(t.done)
	}()
	return key, nil
}

// nodeOfKey is the node id in a key "constellation:G:NODE:N".
func nodeOfKey(k string) string {
	var g, n string
	var a int
	fmt.Sscanf(replaceColons(k), "constellation %s %s %d", &g, &n, &a)
	return n
}

func replaceColons(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == ':' {
			b[i] = ' '
		}
	}
	return string(b)
}

func (f *fakeDevices) Wait(ctx context.Context, id string) (TaskOutcome, error) {
	f.mu.Lock()
	t := f.tasks[id]
	f.mu.Unlock()
	if t == nil {
		return TaskOutcome{}, fmt.Errorf("no task %s", id)
	}
	select {
	case <-t.done:
		return t.out, nil
	case <-ctx.Done():
		return TaskOutcome{}, context.Cause(ctx)
	}
}

// stepFunc is a scripted planner: it edits the graph through the
// planner's tools (the editor) as a model's calls would.
type stepFunc func(p *edits, g *Graph, events []string) (fsm.State, string)

type edits struct{ ed *editor }

func (e *edits) do(t testing.TB, op string, args map[string]any) {
	t.Helper()
	r := e.ed.Execute(context.Background(), []command.Command{{ToolName: op, Parameters: args}})
	if !r[0].OK() {
		t.Errorf("%s %v: %s", op, args, r[0].Error)
	}
}

func (f stepFunc) Step(_ context.Context, g *Graph, ds []Device, events []string) (StepResult, error) {
	ed := &editor{graph: g, devices: ds}
	st, ans := f(&edits{ed}, g, events)
	return StepResult{Status: st, Answer: ans, Edits: ed.edits}, nil
}

// planOnce is a planner that builds a graph at its first step and then
// lets it run.
func planOnce(t testing.TB, nodes []map[string]any, edges ...[2]string) func(*Graph) (Stepper, error) {
	return func(*Graph) (Stepper, error) {
		return stepFunc(func(p *edits, g *Graph, _ []string) (fsm.State, string) {
			if len(g.Nodes) == 0 {
				for _, n := range nodes {
					p.do(t, ToolAddNode, n)
				}
				for _, e := range edges {
					p.do(t, ToolAddEdge, map[string]any{"from": e[0], "to": e[1]})
				}
			}
			return fsm.Continue, ""
		}), nil
	}
}

func node(id, device, task string, apps ...string) map[string]any {
	return map[string]any{"id": id, "device": device, "task": task, "apps": apps}
}

func wait(t testing.TB, o *Orchestrator, id string) *Graph {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := o.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return g
}
