package evals_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

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
	s := server.NewMCPServer("notes", "1.0.0")
	tools.Add(s, "put_note", "Write a note.", mcp.ToolAnnotation{DestructiveHint: mcp.ToBoolPtr(false)}, func(ctx context.Context, in putIn) (noteOut, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.m[in.Key] = in.Value
		return noteOut{in.Value}, nil
	})
	tools.Add(s, "get_note", "Read a note.", mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)}, func(ctx context.Context, in getIn) (noteOut, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return noteOut{n.m[in.Key]}, nil
	})
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
