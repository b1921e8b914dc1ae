package evals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/tools"
)

// notes is a Go tool: an in-process key/value store.
type notes struct {
	mu sync.Mutex
	m  map[string]string
}

type putIn struct {
	Key   string `json:"key" jsonschema_description:"The note's name."`
	Value string `json:"value" jsonschema_description:"What it says."`
}

type getIn struct {
	Key string `json:"key" jsonschema_description:"The note's name."`
}

type noteOut struct {
	Value string `json:"value"`
}

func (n *notes) server() client.Server {
	s := &tools.Server{Name: "notes"}
	s.Add(tools.New("put_note", "Write a note.", tools.Annotations{Risk: tools.RiskWrite}, func(ctx context.Context, in putIn) (noteOut, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.m[in.Key] = in.Value
		return noteOut{in.Value}, nil
	}))
	s.Add(tools.New("get_note", "Read a note.", tools.Annotations{Risk: tools.RiskRead}, func(ctx context.Context, in getIn) (noteOut, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return noteOut{n.m[in.Key]}, nil
	}))
	return client.Server{Namespace: "notes", Description: "Notes kept by a Go program.", MCP: s}
}

// A program's own Go tools can be evaluated: Options.Extra serves them on
// every trial's device, the agents call them, and a state check reads
// their effect through them.
func TestEvalAGoTool(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "note.yaml"), []byte(`replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: notes, subtask: "note the colour"}}]
  - tool_calls: [{name: put_note, arguments: {key: colour, value: teal}}]
  - tool_calls: [{name: finish_task, arguments: {result: noted}}]
  - tool_calls: [{name: finish_task, arguments: {result: "the colour is noted"}}]
`), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: go-tool
model: scripted:note.yaml
cases:
  - id: note
    task: Note that the colour is teal.
    checks:
      - tool_calls: {match: superset, calls: [{tool: put_note, namespace: notes, arguments: {key: colour}}]}
      - state: {tool: get_note, namespace: notes, arguments: {key: colour}, contains: teal}
  - id: wrong
    task: Note that the colour is teal.
    checks:
      - state: {tool: get_note, namespace: notes, arguments: {key: shape}, contains: teal}
`), 0o644)
	n := &notes{m: map[string]string{}}
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{Jobs: 1, Extra: []client.Server{n.server()}})
	if err != nil {
		t.Fatal(err)
	}
	ok, wrong := rep.Cases[0].Trials[0], rep.Cases[1].Trials[0]
	if !ok.Success || ok.Failure != "" {
		t.Errorf("note: %s %s: %s", ok.Status, ok.Failure, ok.Detail)
	}
	if n.m["colour"] != "teal" {
		t.Errorf("the Go tool holds %v", n.m)
	}
	// The check reads the tool's own state: a key never written fails it.
	if wrong.Success || wrong.Failure != evals.FailCheckerFailed {
		t.Errorf("wrong: success %v, %s: %s", wrong.Success, wrong.Failure, wrong.Detail)
	}
}

// probe is a Go tool that reports the deadline its call runs under.
type probe struct {
	mu   sync.Mutex
	left []time.Duration // time.Until(deadline) at each call, -1 without one
}

type probeIn struct {
	Block bool `json:"block,omitempty" jsonschema_description:"Wait until the call is cut."`
}

func (p *probe) server() client.Server {
	s := &tools.Server{Name: "probe"}
	s.Add(tools.New("deadline", "Report the call's deadline.", tools.Annotations{Risk: tools.RiskRead}, func(ctx context.Context, in probeIn) (noteOut, error) {
		left := time.Duration(-1)
		if dl, ok := ctx.Deadline(); ok {
			left = time.Until(dl)
		}
		p.mu.Lock()
		p.left = append(p.left, left)
		p.mu.Unlock()
		if in.Block {
			// Blocks only under a deadline near enough to wait for: a
			// deadline minutes away is the bug, reported at once.
			if left < 0 || left > time.Minute {
				return noteOut{}, fmt.Errorf("the call's deadline is %s away", left)
			}
			<-ctx.Done()
			return noteOut{}, context.Cause(ctx)
		}
		return noteOut{Value: left.String()}, nil
	}))
	return client.Server{Namespace: "probe", Description: "Reports deadlines.", MCP: s}
}

func (p *probe) calls() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.left)
}

// A case's time limit governs its checks: a check that blocks is cut at
// the limit, saying so, and a limit longer than the agents'
// command_timeout (5m), the shell's default cap (10m) and the device's
// call timeout (15m) is honoured, seen as the deadline a check's call
// runs under.
func TestCaseTimeLimitGovernsChecks(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "finish.yaml"), []byte("loop: true\nreplies:\n  - tool_calls: [{name: finish_task, arguments: {result: done}}]\n"), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: limits
model: scripted:finish.yaml
cases:
  - id: short
    task: anything
    limits: {timeout: 2s}
    checks:
      - {name: blocks, state: {tool: deadline, namespace: probe, arguments: {block: true}}}
      - {name: sleeps, state: {run: "sleep 600"}}
  - id: long
    task: anything
    limits: {timeout: 20m}
    checks:
      - {name: deadline, state: {tool: deadline, namespace: probe, contains: value}}
      - {name: shell, state: {run: "true"}}
`), 0o644)
	p := &probe{}
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{Jobs: 1, Extra: []client.Server{p.server()}})
	if err != nil {
		t.Fatal(err)
	}
	short, long := rep.Cases[0].Trials[0], rep.Cases[1].Trials[0]
	// (On a loaded host the agent itself may reach the 2s limit too: the
	// checks, which run after it whatever its end, are what is asserted.)
	if short.Success || len(short.Checks) != 2 {
		t.Fatalf("short: success %v, %s: %s", short.Success, short.Failure, short.Detail)
	}
	for _, ch := range short.Checks {
		if ch.Pass || !strings.HasPrefix(ch.Detail, "cut at the case's time limit (2s): ") {
			t.Errorf("short, check %s: pass %v, %q", ch.Name, ch.Pass, ch.Detail)
		}
	}
	if !long.Success {
		t.Errorf("long: %s %s: %s", long.Status, long.Failure, long.Detail)
	}
	left := p.calls()
	if len(left) != 2 {
		t.Fatalf("the probe was called %d times, want 2", len(left))
	}
	if left[0] < 0 || left[0] > 2*time.Second {
		t.Errorf("the short case's check ran under a deadline %s away, want at most its 2s limit", left[0])
	}
	if left[1] <= 15*time.Minute || left[1] > 20*time.Minute {
		t.Errorf("the long case's check ran under a deadline %s away, want its 20m limit", left[1])
	}
}
