package constellation

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Recorder keeps a constellation's events: its recording.
type Recorder interface {
	Record(Event)
	Close() error
}

// RecordTo makes recordings as files in dir, one per constellation
// (ID.jsonl, one Event a line), appended to when a constellation resumes.
// Each line is written whole and synced when the constellation ends.
func RecordTo(dir string) func(id string) (Recorder, error) {
	return func(id string) (Recorder, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, safeName(id)+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		return &fileRecorder{f: f}, nil
	}
}

func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, id)
}

type fileRecorder struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

func (r *fileRecorder) Record(e Event) {
	b, err := json.Marshal(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		_, err = r.f.Write(append(b, '\n'))
	}
	if err != nil && r.err == nil {
		r.err = err
	}
}

func (r *fileRecorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := errors.Join(r.err, r.f.Sync(), r.f.Close())
	return err
}

// ReadRecording reads a recording's events.
func ReadRecording(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("recording line %d: %w", line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// Replay runs a recording offline: from its first graph, it applies the
// planner's edits and the nodes' starts and ends in the order they were
// recorded, with the rules the orchestrator applies, and checks the graph
// it gets against every graph the recording holds. It returns the graph
// versions it rebuilt (the last is the constellation's end) or says where
// the recording and the replay part.
func Replay(events []Event) ([]*Graph, error) {
	var g *Graph
	var versions []*Graph
	for i, e := range events {
		at := func(format string, args ...any) error {
			return &ReplayError{Event: i + 1, Kind: e.Kind, Version: e.Version, Node: e.Node, What: fmt.Sprintf(format, args...)}
		}
		if g == nil {
			if e.Kind != "graph" || e.Graph == nil {
				return nil, at("a recording starts with its graph")
			}
			g = e.Graph.Clone()
			versions = append(versions, g.Clone())
			continue
		}
		switch e.Kind {
		case "graph", "end":
			if e.Graph == nil {
				return versions, at("no graph")
			}
			if e.Kind == "end" {
				g.Status, g.Answer, g.Error = e.Graph.Status, e.Graph.Answer, e.Graph.Error
				for _, n := range g.Nodes {
					if rn := e.Graph.Node(n.ID); rn != nil && (n.Status == NodePending || n.Status == NodeRunning) && rn.Status == NodeCancelled {
						n.Status, n.Error = rn.Status, rn.Error // cancelled by the constellation's end
					}
				}
			}
			if d := diff(g, e.Graph); d != "" {
				return versions, at("the replayed graph differs from the recorded one: %s", d)
			}
			g.Version = e.Version
			versions = append(versions, g.Clone())
		case "planner":
			for _, ed := range e.Edits {
				if err := Apply(g, ed); err != nil {
					return versions, at("edit %s: %v", ed.Op, err)
				}
			}
		case "node_start":
			n := g.Node(e.Node)
			if n == nil {
				return versions, at("no node %q", e.Node)
			}
			if n.Status != NodeRunning || n.Attempts != e.Attempt { // not a resumed attempt
				n.Tries++
			}
			n.Status, n.Device, n.Attempts, n.Sent, n.TaskID = NodeRunning, e.Device, e.Attempt, e.Sent, e.TaskID
			if want := g.TaskText(n); e.Sent != want && e.TaskID == "" {
				return versions, at("node %s was sent %q, but its dependencies' results make %q", n.ID, e.Sent, want)
			}
		case "node_task":
			if n := g.Node(e.Node); n != nil {
				n.TaskID = e.TaskID
			}
		case "node_end":
			n := g.Node(e.Node)
			if n == nil || e.Outcome == nil {
				return versions, at("no node %q or no outcome", e.Node)
			}
			applyEnd(g, n, *e.Outcome, e.MovedTo, e.Time)
		}
	}
	if g == nil {
		return nil, errors.New("replay: the recording is empty")
	}
	return versions, nil
}

// ReplayError says where a replay parts from its recording: at which
// event (counted from 1, a line of the recording), of which kind and
// graph version, on which node (for a node's event), and what differed.
type ReplayError struct {
	Event   int
	Kind    string
	Version int
	Node    string
	What    string
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("replay: event %d (%s, version %d): %s", e.Event, e.Kind, e.Version, e.What)
}

// diff says how two graphs differ in what a replay must reproduce: the
// nodes (device, task, status, attempts, result, error) and the edges.
func diff(a, b *Graph) string {
	var out []string
	if len(a.Nodes) != len(b.Nodes) {
		out = append(out, fmt.Sprintf("%d nodes, recorded %d", len(a.Nodes), len(b.Nodes)))
	}
	for _, n := range a.Nodes {
		m := b.Node(n.ID)
		if m == nil {
			out = append(out, "node "+n.ID+" is not in the recorded graph")
			continue
		}
		if n.Device != m.Device || n.Task != m.Task || n.Status != m.Status || n.Attempts != m.Attempts || n.Result != m.Result {
			out = append(out, fmt.Sprintf("node %s: %s/%s/%d %q, recorded %s/%s/%d %q", n.ID, n.Device, n.Status, n.Attempts, n.Result,
				m.Device, m.Status, m.Attempts, m.Result))
		}
	}
	ea, eb := slices.Clone(a.Edges), slices.Clone(b.Edges)
	cmp := func(x, y Edge) int { return strings.Compare(x.From+"\x00"+x.To, y.From+"\x00"+y.To) }
	slices.SortFunc(ea, cmp)
	slices.SortFunc(eb, cmp)
	if !slices.Equal(ea, eb) {
		out = append(out, fmt.Sprintf("edges %v, recorded %v", ea, eb))
	}
	if a.Status != b.Status || a.Answer != b.Answer {
		out = append(out, fmt.Sprintf("status %s %q, recorded %s %q", a.Status, a.Answer, b.Status, b.Answer))
	}
	return strings.Join(out, "; ")
}
