package evals

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
)

// ConstellationRunner runs the cases that target a constellation and
// replays constellations' recordings. The constellation package provides
// it (constellation.EvalRunner); evals sits below it.
type ConstellationRunner interface {
	// RunConstellation runs run.Case's task as a constellation over the
	// case's devices, recording it in run.Dir, and returns how it went.
	// ctx carries the trial's time limit.
	RunConstellation(ctx context.Context, run ConstellationRun) (*ConstellationTrial, error)
	// ReplayConstellation replays a constellation's recording (the file
	// ConstellationRecording found) offline and returns how the replayed
	// constellation ended; Replay says where the replay parts from the
	// recording ("" when it does not). It has no devices.
	ReplayConstellation(ctx context.Context, recording string) (*ConstellationTrial, error)
}

// ConstellationRun is one trial of a case that targets a constellation.
type ConstellationRun struct {
	Case Case
	// Dir is the trial's directory: the recording and the devices'
	// directories go there.
	Dir string
	// Config is what each device is built from, as `saucer client`
	// builds its own (local.NewDevice): its apps (mcp.use), its policy
	// (mcp.policy), its tools' settings and timeouts, device: sandbox. It
	// is the run's config with the suite's laid over it, the trial's time
	// limit raising the shell's and the client's, and the sandbox the
	// suite, the case or saucer eval --sandbox asks for.
	Config *config.Config
	// Extra servers are served on every device beside the configured ones
	// (Options.Extra).
	Extra []client.Server
}

// ConstellationTrial is how a constellation case's trial went.
type ConstellationTrial struct {
	// Completed says the constellation completed; Status and Answer are
	// its status and its answer (or error).
	Completed      bool
	Status, Answer string
	// Devices run each device's checks, by device id, until Close (none
	// for a replayed recording).
	Devices map[string]dispatcher.Executor
	// Recording is the constellation's recording, relative to dir (or
	// absolute, for a replayed recording); Replay says where its offline
	// replay parts from the run, or from the recording ("" when it
	// replays to the same graph).
	Recording, Replay string
	// Nodes counts the device tasks started; ModelCalls the scripted
	// model calls.
	Nodes, ModelCalls int
	// Graph is each node of the graph the constellation ended with, for
	// node checks.
	Graph []ConstellationNode
	Close func()
}

// ConstellationNode is how a node of a constellation ended.
type ConstellationNode struct {
	ID       string `json:"id"`
	Device   string `json:"device"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts,omitempty"`
	Result   string `json:"result,omitempty"`
	Error    string `json:"error,omitempty"`
}

// NodeCheck checks how a node of the constellation ended: a case that
// targets a constellation, or replays one's recording.
type NodeCheck struct {
	ID     string `yaml:"id" json:"id" jsonschema_description:"The node's id in the constellation's graph."`
	Status string `yaml:"status,omitempty" json:"status,omitempty" jsonschema:"enum=completed,enum=failed,enum=cancelled,enum=pending,enum=running" jsonschema_description:"The status the node must end with (default completed)."`
	Device string `yaml:"device,omitempty" json:"device,omitempty" jsonschema_description:"The device the node must have ended on (after any move to a fallback)."`
	// Result matches the node's result (its error, for a node that did
	// not complete) as an answer check matches the final answer.
	Result *AnswerCheck `yaml:"result,omitempty" json:"result,omitempty" jsonschema_description:"Match the node's result (its error when it did not complete) as an answer check matches the final answer."`
}

var nodeStatuses = []string{"completed", "failed", "cancelled", "pending", "running"}

func (n *NodeCheck) validate() error {
	if strings.TrimSpace(n.ID) == "" {
		return errors.New("node: no id (the node of the constellation's graph to check)")
	}
	if n.Status != "" && !slices.Contains(nodeStatuses, n.Status) {
		return fmt.Errorf("node.status %q: use one of %s", n.Status, strings.Join(nodeStatuses, ", "))
	}
	if n.Result != nil {
		if err := (Check{Answer: n.Result}).validate(); err != nil {
			return fmt.Errorf("node.result: %w", errors.New(strings.TrimPrefix(err.Error(), "answer: ")))
		}
	}
	return nil
}

// matchNode checks a node of the graph a constellation ended with.
func matchNode(n *NodeCheck, graph []ConstellationNode) (bool, string) {
	if graph == nil {
		return false, "node checks need a constellation: this case ran no constellation (a task's recording or a live device)"
	}
	i := slices.IndexFunc(graph, func(g ConstellationNode) bool { return g.ID == n.ID })
	if i < 0 {
		ids := make([]string, len(graph))
		for j, g := range graph {
			ids[j] = g.ID
		}
		return false, fmt.Sprintf("the graph has no node %q (its nodes: %s)", n.ID, strings.Join(ids, ", "))
	}
	g := graph[i]
	want := n.Status
	if want == "" {
		want = "completed"
	}
	if g.Status != want {
		detail := fmt.Sprintf("node %s ended %s on %s, want %s", g.ID, g.Status, g.Device, want)
		if g.Error != "" {
			detail += ": " + cutText(g.Error, 300)
		}
		return false, detail
	}
	if n.Device != "" && g.Device != n.Device {
		return false, fmt.Sprintf("node %s ended on %s, want %s", g.ID, g.Device, n.Device)
	}
	if n.Result != nil {
		got := g.Result
		if g.Status != "completed" {
			got = g.Error
		}
		if ok, detail := matchAnswer(n.Result, got); !ok {
			return false, "node " + g.ID + ": " + strings.Replace(detail, "answer ", "result ", 1)
		}
	}
	return true, ""
}

// ConstellationRecording is the file of the constellation recording at
// path: path itself when it is one (the RUNS/constellations/ID.jsonl a
// server writes, a constellation trial's constellation.jsonl), or the one
// a folder holds (beside no task trajectory). It returns "" when path is
// no constellation recording (a task's run directory, say), and an error
// when a folder holds several, naming them. A recording is known by its
// first line: a constellation's graph event.
func ConstellationRecording(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil // not there: the task recordings' reader says so
	}
	if !fi.IsDir() {
		if isConstellationRecording(path) {
			return path, nil
		}
		return "", nil
	}
	if _, err := os.Stat(filepath.Join(path, "trajectory.jsonl")); err == nil {
		return "", nil // a task's run directory
	}
	files, err := filepath.Glob(filepath.Join(path, "*.jsonl"))
	if err != nil {
		return "", err
	}
	var found []string
	for _, f := range files {
		if isConstellationRecording(f) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = filepath.Base(f)
	}
	return "", fmt.Errorf("%s holds %d constellation recordings (%s): name one of them", path, len(found), strings.Join(names, ", "))
}

// isConstellationRecording reads a file's first line: a constellation's
// first event is its graph.
func isConstellationRecording(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	var first struct {
		Constellation string          `json:"constellation"`
		Kind          string          `json:"kind"`
		Graph         json.RawMessage `json:"graph"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &first) != nil {
		return false
	}
	return first.Constellation != "" && first.Kind == "graph" && len(first.Graph) > 0
}
