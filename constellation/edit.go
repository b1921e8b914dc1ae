package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
)

// The planner's tools, in the namespace Namespace.
const (
	Namespace      = "constellation"
	ToolAddNode    = "add_node"
	ToolUpdateNode = "update_node"
	ToolRemoveNode = "remove_node"
	ToolAddEdge    = "add_edge"
	ToolRemoveEdge = "remove_edge"
	// ToolFinishWhenDone declares the plan complete: the constellation
	// ends as completed when its last node completes, without a planner
	// step after it (a step that could only say "finish").
	ToolFinishWhenDone = "finish_when_done"
)

const nodeProps = `"id":{"type":"string","description":"A short unique id, e.g. build_report."},` +
	`"device":{"type":"string","description":"The id of the device that runs the task, exactly as listed."},` +
	`"task":{"type":"string","description":"What the device's agents must do, complete on its own: names, paths, values, and what to report."},` +
	`"apps":{"type":"array","items":{"type":"string"},"description":"The apps (tool namespaces) the task needs on its device."},` +
	`"outputs":{"type":"array","items":{"type":"string"},"description":"Files the task makes, for the tasks that depend on it."},` +
	`"max_retries":{"type":"integer","description":"How many times a failed attempt is tried again (default 0)."},` +
	`"review":{"type":"boolean","description":"true: you are asked again when this task completes, to decide what follows from its result, even after finish_when_done."},` +
	`"requires":{"type":"object","description":"What the task needs of its device besides its apps; it runs, and moves, only where these hold.",` +
	`"properties":{"platform":{"type":"string","description":"linux, windows, mac, android…"},` +
	`"sandbox":{"type":"string","description":"\"any\" for any sandboxed device, or a sandbox image exactly as listed."},` +
	`"labels":{"type":"array","items":{"type":"string"},"description":"Labels the device must have, as listed."}}}`

const edgeProps = `"from":{"type":"string","description":"The node whose result is needed."},` +
	`"to":{"type":"string","description":"The node that needs it; it starts only after from completes."}`

// Tools are the planner's tools, as a device would advertise them.
func Tools() []command.ToolInfo {
	tool := func(name, desc, schema string) command.ToolInfo {
		return command.ToolInfo{Key: command.ToolKey(command.Action, name), Name: name, Namespace: Namespace, ToolType: command.Action,
			Description: desc, InputSchema: json.RawMessage(schema)}
	}
	return []command.ToolInfo{
		tool(ToolAddNode, "Add a task on one device to the graph.",
			`{"type":"object","properties":{`+nodeProps+`},"required":["id","device","task"]}`),
		tool(ToolUpdateNode, "Change a node that has not started (its device, task, apps, outputs or retries). "+
			"A failed or cancelled node updated this way becomes pending again and runs once its dependencies complete.",
			`{"type":"object","properties":{`+nodeProps+`},"required":["id"]}`),
		tool(ToolRemoveNode, "Remove a node that has not started, with its edges.",
			`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		tool(ToolAddEdge, "Make one node wait for another's result.",
			`{"type":"object","properties":{`+edgeProps+`},"required":["from","to"]}`),
		tool(ToolRemoveEdge, "Remove a dependency.",
			`{"type":"object","properties":{`+edgeProps+`},"required":["from","to"]}`),
		tool(ToolFinishWhenDone, "Declare that the graph is all the request needs: once every node has completed, the constellation "+
			"ends as completed, the last node's result its answer, without asking you again. From then on you are asked only when "+
			"a node fails or an edit is refused, and told then of the ends before it.",
			`{"type":"object","properties":{}}`),
	}
}

// Edit is one change the planner made to the graph, as it is recorded.
type Edit struct {
	Op     string         `json:"op"`
	Args   map[string]any `json:"args"`
	OK     bool           `json:"ok"`
	Reason string         `json:"reason,omitempty"`
}

// editor serves the planner's tools over a graph: it is the planner's
// dispatcher. The edits of one reply are applied together or not at all:
// they are made in order on a copy of the graph, which must then be valid
// as a whole (so a reply may add an edge before the node it joins); if
// one edit cannot be made, or the graph they make is not valid, none is
// kept, and each edit's result says why.
type editor struct {
	graph   *Graph
	devices []Device
	events  []string
	edits   []Edit
	// bounds bound the graph and a reply (zero: the defaults).
	bounds Bounds
}

var _ dispatcher.Dispatcher = (*editor)(nil)

func (e *editor) Execute(_ context.Context, cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	var batch []int // the edits among cmds
	for i, c := range cmds {
		switch c.ToolName {
		case command.GetMCPTools:
			out[i] = command.Succeeded(c.CallID, Tools())
		case getConstellation:
			out[i] = command.Succeeded(c.CallID, View{Request: e.graph.Request, Graph: e.graph, Devices: e.devices, Events: e.events})
		case command.GetDeviceInfo:
			out[i] = command.Succeeded(c.CallID, command.DeviceInfo{Platform: "constellation"})
		default:
			batch = append(batch, i)
		}
	}
	if len(batch) == 0 {
		return out
	}
	eds := make([]Edit, len(batch))
	for j, i := range batch {
		eds[j] = Edit{Op: cmds[i].ToolName, Args: cmds[i].Parameters, OK: true}
	}
	g, msgs, eds := applyTogether(e.graph, e.devices, eds, e.bounds)
	if g != nil {
		e.graph.Nodes, e.graph.Edges, e.graph.FinishWhenDone = g.Nodes, g.Edges, g.FinishWhenDone
	}
	for j, i := range batch {
		if eds[j].OK {
			out[i] = command.Succeeded(cmds[i].CallID, msgs[j])
		} else {
			out[i] = command.Failed(cmds[i].CallID, eds[j].Reason)
		}
	}
	e.edits = append(e.edits, eds...)
	return out
}

// applyTogether makes eds, in order, on a copy of g and checks the graph
// they make against ds and the limits. It returns that graph and each
// edit's message, or nil and the edits marked refused, each with its own
// reason or the reason the others were refused for.
func applyTogether(g *Graph, ds []Device, eds []Edit, b Bounds) (*Graph, []string, []Edit) {
	out := slices.Clone(eds)
	msgs := make([]string, len(eds))
	refuse := func(why func(i int) string) (*Graph, []string, []Edit) {
		for i := range out {
			if out[i].OK {
				out[i].OK, out[i].Reason = false, why(i)
			}
		}
		return nil, nil, out
	}
	if max := b.maxEdits(); len(eds) > max {
		return refuse(func(int) string {
			return fmt.Sprintf("not applied: this reply has %d edits and a reply may have at most %d (constellation.max_edits): "+
				"send the graph in smaller parts over several steps", len(eds), max)
		})
	}
	c := g.Clone()
	var failed []string
	for i, ed := range out {
		if !ed.OK {
			continue
		}
		msg, err := edit(c, ed.Op, ed.Args)
		if err != nil {
			out[i].OK, out[i].Reason = false, err.Error()
			failed = append(failed, fmt.Sprintf("%s %s: %s", ed.Op, editName(ed), oneLine(err.Error())))
			continue
		}
		msgs[i] = msg
	}
	if len(failed) > 0 {
		return refuse(func(int) string {
			return "not applied: the edits of one reply are applied together or not at all, and " + strings.Join(failed, "; ") +
				". Send the whole set again, corrected"
		})
	}
	if n, max := len(c.Nodes), b.maxNodes(); n > max && n > len(g.Nodes) {
		return refuse(func(int) string {
			return fmt.Sprintf("not applied: the graph would have %d nodes and a constellation may have at most %d (constellation.max_nodes): "+
				"give each node more of the work, or split the request", n, max)
		})
	}
	if err := c.Validate(ds); err != nil {
		return refuse(func(int) string {
			return "not applied: the edits of one reply are applied together or not at all, and the graph they make is not valid: " +
				oneLine(err.Error())
		})
	}
	pin(c, ds)
	return c, msgs, out
}

// apply makes one edit as a reply of its own.
func (e *editor) apply(op string, args map[string]any) (string, error) {
	g, msgs, eds := applyTogether(e.graph, e.devices, []Edit{{Op: op, Args: args, OK: true}}, e.bounds)
	if g == nil {
		return "", errors.New(eds[0].Reason)
	}
	e.graph.Nodes, e.graph.Edges, e.graph.FinishWhenDone = g.Nodes, g.Edges, g.FinishWhenDone
	return msgs[0], nil
}

// editName names what an edit is about, for a refusal: a node's id or an
// edge.
func editName(ed Edit) string {
	if id := str(ed.Args, "id"); id != "" {
		return id
	}
	if f, t := str(ed.Args, "from"), str(ed.Args, "to"); f != "" || t != "" {
		return f + "→" + t
	}
	return ""
}

// Apply replays one recorded edit on g (offline: without devices to check).
func Apply(g *Graph, ed Edit) error {
	if !ed.OK {
		return nil
	}
	_, err := edit(g, ed.Op, ed.Args)
	return err
}

func edit(g *Graph, op string, args map[string]any) (string, error) {
	id := str(args, "id")
	switch op {
	case ToolAddNode:
		if g.Node(id) != nil {
			return "", fmt.Errorf("add_node: node %q exists already: use update_node to change it, or another id", id)
		}
		n := &Node{ID: id, Status: NodePending}
		setNode(n, args)
		g.Nodes = append(g.Nodes, n)
		return "added node " + id, nil
	case ToolUpdateNode:
		n := g.Node(id)
		if n == nil {
			return "", fmt.Errorf("update_node: there is no node %q (nodes: %s)", id, nodeIDs(g))
		}
		switch n.Status {
		case NodeRunning, NodeCompleted:
			return "", fmt.Errorf("update_node: node %q is %s and cannot change: add a new node instead", id, n.Status)
		case NodeFailed, NodeCancelled:
			n.Status, n.Error, n.Result, n.Tries, n.TaskID, n.Sent = NodePending, "", "", 0, "", ""
			n.StartedAt, n.EndedAt = nil, nil
		}
		setNode(n, args)
		return "updated node " + id, nil
	case ToolRemoveNode:
		n := g.Node(id)
		if n == nil {
			return "", fmt.Errorf("remove_node: there is no node %q (nodes: %s)", id, nodeIDs(g))
		}
		if n.Status == NodeRunning || n.Status == NodeCompleted {
			return "", fmt.Errorf("remove_node: node %q is %s and stays in the graph", id, n.Status)
		}
		g.Nodes = slices.DeleteFunc(g.Nodes, func(m *Node) bool { return m.ID == id })
		g.Edges = slices.DeleteFunc(g.Edges, func(e Edge) bool { return e.From == id || e.To == id })
		return "removed node " + id, nil
	case ToolAddEdge:
		e := Edge{From: str(args, "from"), To: str(args, "to")}
		if to := g.Node(e.To); to != nil && to.Status != NodePending && to.Status != NodeCancelled {
			return "", fmt.Errorf("add_edge: node %q is %s: only a node that has not started can wait for another", e.To, to.Status)
		}
		g.Edges = append(g.Edges, e)
		return fmt.Sprintf("added edge %s→%s", e.From, e.To), nil
	case ToolRemoveEdge:
		e := Edge{From: str(args, "from"), To: str(args, "to")}
		i := slices.Index(g.Edges, e)
		if i < 0 {
			return "", fmt.Errorf("remove_edge: there is no edge %s→%s", e.From, e.To)
		}
		g.Edges = slices.Delete(g.Edges, i, i+1)
		return fmt.Sprintf("removed edge %s→%s", e.From, e.To), nil
	case ToolFinishWhenDone:
		g.FinishWhenDone = true
		return "the constellation ends as completed when every node has completed", nil
	}
	return "", fmt.Errorf("unknown tool %q: the planner's tools are %s, %s, %s, %s, %s and %s", op,
		ToolAddNode, ToolUpdateNode, ToolRemoveNode, ToolAddEdge, ToolRemoveEdge, ToolFinishWhenDone)
}

// setNode sets the fields args gives.
func setNode(n *Node, args map[string]any) {
	if _, ok := args["device"]; ok {
		n.Device = str(args, "device")
	}
	if v, ok := args["task"].(string); ok {
		n.Task = v
	}
	if v, ok := args["apps"]; ok {
		n.Apps = strs(v)
	}
	if v, ok := args["outputs"]; ok {
		n.Outputs = strs(v)
	}
	if v, ok := args["max_retries"].(float64); ok && v >= 0 {
		n.MaxRetries = int(v)
	}
	if v, ok := args["max_retries"].(int); ok && v >= 0 {
		n.MaxRetries = v
	}
	if v, ok := args["review"].(bool); ok {
		n.Review = v
	}
	if v, ok := args["requires"].(map[string]any); ok {
		r := Requires{Platform: str(v, "platform"), Sandbox: str(v, "sandbox"), Labels: strs(v["labels"])}
		if old := n.Requires; old != nil && old.Sandbox != "" && old.Sandbox != AnySandbox {
			r.Sandbox = old.Sandbox // a node placed in a sandbox stays in one of its image
		}
		n.Requires = &r
		if r.Platform == "" && r.Sandbox == "" && len(r.Labels) == 0 {
			n.Requires = nil
		}
	}
}

// pin makes each node still to run that is placed on a sandboxed device
// require that device's sandbox image: wherever it moves later (its
// device lost, or the planner's update), it stays in such a sandbox.
func pin(g *Graph, ds []Device) {
	for _, n := range g.Nodes {
		if n.Status != NodePending {
			continue
		}
		i := slices.IndexFunc(ds, func(d Device) bool { return d.ID == n.Device })
		if i < 0 || ds[i].Sandbox == "" {
			continue
		}
		if n.Requires == nil {
			n.Requires = &Requires{}
		}
		if n.Requires.Sandbox == "" || n.Requires.Sandbox == AnySandbox {
			n.Requires.Sandbox = ds[i].Sandbox
		}
	}
}

// str is a string argument. A number stands for its digits: a model that
// names its nodes 1, 2, 3 sends them as numbers as often as not.
func str(args map[string]any, key string) string {
	switch v := args[key].(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case json.Number:
		return v.String()
	}
	return ""
}

func strs(v any) []string {
	switch v := v.(type) {
	case []string:
		return slices.Clone(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		if v == "" {
			return nil
		}
		return []string{v}
	}
	return nil
}

func nodeIDs(g *Graph) string {
	ids := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		ids[i] = n.ID
	}
	if len(ids) == 0 {
		return "none yet"
	}
	return strings.Join(ids, ", ")
}
