package constellation

import (
	"strings"
	"testing"
)

var twoDevices = []Device{{ID: "linux1", Apps: []string{"shell", "files"}}, {ID: "desk", Apps: []string{"desktop", "shell"}}}

func graphOf(nodes []*Node, edges ...Edge) *Graph {
	for _, n := range nodes {
		if n.Status == "" {
			n.Status = NodePending
		}
	}
	return &Graph{ID: "g", Request: "r", Status: Running, Nodes: nodes, Edges: edges}
}

func TestValidateNamesEachProblem(t *testing.T) {
	g := graphOf([]*Node{
		{ID: "a", Device: "linux1", Task: "build", Apps: []string{"shell"}},
		{ID: "b", Device: "gone", Task: "copy"},
		{ID: "c", Device: "desk", Task: "open", Apps: []string{"files"}},
		{ID: "a", Device: "linux1", Task: "again"},
		{ID: "d", Device: "linux1"},
	}, Edge{"a", "c"}, Edge{"c", "a"}, Edge{"a", "x"}, Edge{"b", "b"})
	err := g.Validate(twoDevices)
	if err == nil {
		t.Fatal("an invalid graph passed")
	}
	for _, want := range []string{
		`node "b" is on device "gone", which is not available (devices: desk, linux1)`,
		`node "c" needs app "files", which device "desk" does not have`,
		`node id "a" is used twice`,
		`node "d" has no task`,
		`edge a→x joins a node that does not exist`,
		`edge b→b joins a node to itself`,
		`the edges make a cycle (a → c → a)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestValidateIgnoresWhereEndedNodesRan(t *testing.T) {
	g := graphOf([]*Node{{ID: "a", Device: "lost", Task: "t", Status: NodeCompleted}, {ID: "b", Device: "linux1", Task: "t"}}, Edge{"a", "b"})
	if err := g.Validate(twoDevices); err != nil {
		t.Fatalf("a completed node on a device since gone fails the graph: %v", err)
	}
}

func TestReadyResultsFlowAndCancel(t *testing.T) {
	g := graphOf([]*Node{
		{ID: "a", Device: "linux1", Task: "build the report", Outputs: []string{"/tmp/r.csv"}},
		{ID: "b", Device: "linux1", Task: "count rows"},
		{ID: "c", Device: "desk", Task: "open it"},
		{ID: "d", Device: "desk", Task: "after c"},
	}, Edge{"a", "c"}, Edge{"b", "c"}, Edge{"c", "d"})
	if ids := idsOf(g.Ready()); ids != "a,b" {
		t.Fatalf("ready = %s, want a,b", ids)
	}
	g.Node("a").Status, g.Node("a").Result = NodeCompleted, "wrote 3 rows"
	if ids := idsOf(g.Ready()); ids != "b" {
		t.Fatalf("ready after a = %s, want b (c waits for b)", ids)
	}
	g.Node("b").Status, g.Node("b").Result = NodeCompleted, "3\n rows"
	text := g.TaskText(g.Node("c"))
	// c runs on desk: the file stays on linux1, and its text says so.
	for _, want := range []string{"open it", "- a (on linux1): wrote 3 rows [files: /tmp/r.csv (on linux1, not copied here)]", "- b (on linux1): 3 rows"} {
		if !strings.Contains(text, want) {
			t.Errorf("c's task lacks %q:\n%s", want, text)
		}
	}
	g.Node("c").Status = NodeFailed
	if got := g.CancelDependents("c"); strings.Join(got, ",") != "d" || g.Node("d").Status != NodeCancelled {
		t.Fatalf("cancelled %v, d is %s", got, g.Node("d").Status)
	}
	if !g.Done() || g.AllCompleted() {
		t.Fatal("a graph with a failed node and nothing to run is done but not all completed")
	}
}

func idsOf(ns []*Node) string {
	var ids []string
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	return strings.Join(ids, ",")
}

func TestEditorRefusesBadEditsAndKeepsTheGraph(t *testing.T) {
	g := graphOf([]*Node{{ID: "a", Device: "linux1", Task: "t", Status: NodeCompleted}, {ID: "b", Device: "linux1", Task: "t"}}, Edge{"a", "b"})
	ed := &editor{graph: g, devices: twoDevices}
	cases := []struct {
		op   string
		args map[string]any
		want string
	}{
		{ToolAddEdge, map[string]any{"from": "b", "to": "a"}, "node \"a\" is completed"},
		{ToolAddNode, map[string]any{"id": "c", "device": "desk", "task": "t", "apps": []any{"files"}}, `needs app "files"`},
		{ToolUpdateNode, map[string]any{"id": "a", "task": "x"}, "is completed and cannot change"},
		{ToolRemoveNode, map[string]any{"id": "zz"}, "there is no node \"zz\" (nodes: a, b)"},
		{ToolAddNode, map[string]any{"id": "b", "device": "desk", "task": "t"}, "exists already"},
		{"drop_table", nil, "unknown tool"},
	}
	for _, c := range cases {
		if _, err := ed.apply(c.op, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.op, c.args, err, c.want)
		}
	}
	if len(g.Nodes) != 2 || len(g.Edges) != 1 || g.Node("a").Task != "t" {
		t.Fatalf("refused edits changed the graph: %+v", g)
	}
	// A cycle through pending nodes.
	if _, err := ed.apply(ToolAddNode, map[string]any{"id": "c", "device": "desk", "task": "t"}); err != nil {
		t.Fatal(err)
	}
	ed.apply(ToolAddEdge, map[string]any{"from": "b", "to": "c"})
	if _, err := ed.apply(ToolAddEdge, map[string]any{"from": "c", "to": "b"}); err == nil || !strings.Contains(err.Error(), "cycle (b → c → b)") {
		t.Fatalf("a cycle: %v", err)
	}
	// A failed node updated comes back pending, on the device named.
	g.Node("b").Status, g.Node("b").Attempts, g.Node("b").Tries = NodeFailed, 2, 2
	if _, err := ed.apply(ToolUpdateNode, map[string]any{"id": "b", "device": "desk"}); err != nil {
		t.Fatal(err)
	}
	if b := g.Node("b"); b.Status != NodePending || b.Device != "desk" || b.Tries != 0 || b.Attempts != 2 {
		t.Fatalf("revived b = %+v", b)
	}
}

// A dependent on the device that made the files is told they are there.
func TestTaskTextSaysWhereFilesAre(t *testing.T) {
	g := graphOf([]*Node{
		{ID: "a", Device: "linux1", Task: "build the report", Outputs: []string{"r.csv"}, Status: NodeCompleted, Result: "3 rows"},
		{ID: "b", Device: "linux1", Task: "sum it"},
	}, Edge{"a", "b"})
	if text := g.TaskText(g.Node("b")); !strings.Contains(text, "[files: r.csv (on this device)]") {
		t.Errorf("b's task:\n%s", text)
	}
}

// The planner's view of the graph keeps a task's and a result's lines: a
// result may be the lines a file must hold.
func TestSummaryKeepsLines(t *testing.T) {
	g := graphOf([]*Node{{ID: "a", Device: "linux1", Task: "count\nand list", Status: NodeCompleted, Result: "linux2: 4\nlinux3: 2\n"}})
	want := "- a [completed] on linux1: count\n    and list\n  result: linux2: 4\n    linux3: 2"
	if got := g.Summary(); got != want {
		t.Errorf("summary:\n%q\nwant\n%q", got, want)
	}
}
