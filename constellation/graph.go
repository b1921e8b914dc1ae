// Package constellation runs one request across several devices: a
// constellation agent (the planner) turns the request and the live device
// list into a graph of device tasks (nodes) joined by dependencies (edges),
// and edits the graph as nodes end; an orchestrator runs every ready node
// at once on its device, within a global limit and one queue per device,
// keeps the graph durable so a restarted server resumes it, and records
// it so it replays offline.
//
// The planner is an agent like the host and app agents: a finite-state
// machine (fsm.Constellation) moved by a pipeline of strategies from a
// strategy.Registry, rendering templates from a prompts.Set. Its tools
// (add_node, update_node, remove_node, add_edge, remove_edge) are served by
// a dispatcher over the graph, so the built-in discover, execute and
// remember strategies work for it as for an app agent.
package constellation

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// NodeStatus is where a node is.
type NodeStatus string

// The node statuses. Pending nodes wait for their dependencies; a node
// whose dependency failed beyond its retries is cancelled, and the planner
// may revive it (update_node) once it has re-planned around the failure.
const (
	NodePending   NodeStatus = "pending"
	NodeRunning   NodeStatus = "running"
	NodeCompleted NodeStatus = "completed"
	NodeFailed    NodeStatus = "failed"
	NodeCancelled NodeStatus = "cancelled"
)

// Ended reports whether the node will not run again unless edited.
func (s NodeStatus) Ended() bool {
	return s == NodeCompleted || s == NodeFailed || s == NodeCancelled
}

// Node is one device task of the graph (UFO's "TaskStar").
type Node struct {
	ID     string `json:"id"`
	Device string `json:"device"`
	// Task is what the device's agents are asked; the results of the
	// nodes it depends on are added to it when it starts.
	Task string `json:"task"`
	// Apps are the tool namespaces the task needs on its device.
	Apps []string `json:"apps,omitempty"`
	// Outputs name the files the task makes, for its dependents.
	Outputs []string `json:"outputs,omitempty"`
	// MaxRetries is how many times a failed attempt is tried again before
	// the node fails.
	MaxRetries int        `json:"max_retries,omitempty"`
	Status     NodeStatus `json:"status"`
	// Attempts counts the attempts started, Tries those since the node
	// was last planned (retries count these); TaskID is the device task
	// of the latest attempt (a resumed orchestrator waits on it rather
	// than starting it again).
	Attempts int    `json:"attempts,omitempty"`
	Tries    int    `json:"tries,omitempty"`
	TaskID   string `json:"task_id,omitempty"`
	// Sent is the task text the latest attempt was sent with.
	Sent      string     `json:"sent,omitempty"`
	Result    string     `json:"result,omitempty"`
	Error     string     `json:"error,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Lost lists the devices the node was moved away from, lost while it
	// ran there.
	Lost []string `json:"lost,omitempty"`
	// Requires is what it needs of its device besides its apps.
	Requires *Requires `json:"requires,omitempty"`
	// Review asks for the planner's step when the node completes, even
	// after finish_when_done: its result decides what follows.
	Review bool `json:"review,omitempty"`
	// WaitingSince is when it began to wait for its device to connect.
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
}

// Edge says that To needs From's result (UFO's "TaskStarLine").
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Status is where a whole constellation is.
type Status string

// The constellation statuses.
const (
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
)

// Graph is a constellation: the request, its nodes and edges, and how it
// stands. Version goes up with every change the planner or the
// orchestrator makes.
type Graph struct {
	ID        string    `json:"id"`
	Request   string    `json:"request"`
	Version   int       `json:"version"`
	Status    Status    `json:"status"`
	Nodes     []*Node   `json:"nodes"`
	Edges     []Edge    `json:"edges"`
	Answer    string    `json:"answer,omitempty"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// PlannerSteps counts the planner's steps, so that a resumed
	// constellation keeps to its limit.
	PlannerSteps int `json:"planner_steps,omitempty"`
	// FinishWhenDone is the planner's declaration (finish_when_done) that
	// the graph is all the request needs: when every node has completed,
	// the constellation completes without another planner step.
	FinishWhenDone bool `json:"finish_when_done,omitempty"`
}

// Device is a device a constellation may use: its id, the apps (tool
// namespaces) it offers, and its profile: its platform, the sandbox its
// tools run in (its root image; empty: the host) and its labels.
type Device struct {
	ID       string   `json:"id"`
	Platform string   `json:"platform,omitempty"`
	Apps     []string `json:"apps"`
	Sandbox  string   `json:"sandbox,omitempty"`
	Labels   []string `json:"labels,omitempty"`
}

// Requires is what a node needs of the device it runs on, besides its
// apps: a platform, a sandbox (any sandbox, or the image it names) and
// labels. A node placed on a sandboxed device requires that device's
// sandbox image from then on, so that it never moves to the host.
type Requires struct {
	Platform string   `json:"platform,omitempty"`
	Sandbox  string   `json:"sandbox,omitempty"` // "any" or an image
	Labels   []string `json:"labels,omitempty"`
}

// AnySandbox, as Requires.Sandbox, takes a sandbox of any image.
const AnySandbox = "any"

// unmet says what of n's needs d does not meet ("" when it meets them
// all): its apps and what it requires.
func unmet(n *Node, d Device) string {
	var out []string
	for _, a := range n.Apps {
		if !slices.Contains(d.Apps, a) {
			out = append(out, fmt.Sprintf("app %q (it has: %s)", a, strings.Join(d.Apps, ", ")))
		}
	}
	return strings.Join(append(out, unmetRequires(n, d)...), ", ")
}

// unmetRequires says what of n's Requires d does not meet.
func unmetRequires(n *Node, d Device) []string {
	var out []string
	if r := n.Requires; r != nil {
		if r.Platform != "" && !strings.EqualFold(r.Platform, d.Platform) {
			out = append(out, fmt.Sprintf("platform %s (it is %s)", r.Platform, cmp.Or(d.Platform, "of no stated platform")))
		}
		switch {
		case r.Sandbox == "":
		case d.Sandbox == "":
			out = append(out, "a sandbox (its tools run on the host)")
		case r.Sandbox != AnySandbox && r.Sandbox != d.Sandbox:
			out = append(out, fmt.Sprintf("the sandbox image %s (its is %s)", r.Sandbox, d.Sandbox))
		}
		for _, l := range r.Labels {
			if !slices.Contains(d.Labels, l) {
				out = append(out, fmt.Sprintf("label %q", l))
			}
		}
	}
	return out
}

// parts says what r requires, one phrase each: "platform linux",
// "sandbox IMAGE", "labels gpu, eu" (none for a nil r).
func (r *Requires) parts() []string {
	if r == nil {
		return nil
	}
	var out []string
	if r.Platform != "" {
		out = append(out, "platform "+r.Platform)
	}
	if r.Sandbox != "" {
		out = append(out, "sandbox "+r.Sandbox)
	}
	if len(r.Labels) > 0 {
		out = append(out, "labels "+strings.Join(r.Labels, ", "))
	}
	return out
}

// Clone is a deep copy.
func (g *Graph) Clone() *Graph {
	c := *g
	c.Nodes = make([]*Node, len(g.Nodes))
	for i, n := range g.Nodes {
		nc := *n
		nc.Apps, nc.Outputs, nc.Lost = slices.Clone(n.Apps), slices.Clone(n.Outputs), slices.Clone(n.Lost)
		if n.Requires != nil {
			r := *n.Requires
			r.Labels = slices.Clone(r.Labels)
			nc.Requires = &r
		}
		c.Nodes[i] = &nc
	}
	c.Edges = slices.Clone(g.Edges)
	return &c
}

// Node finds a node by id.
func (g *Graph) Node(id string) *Node {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Deps lists the ids of the nodes id depends on, in edge order.
func (g *Graph) Deps(id string) []string {
	var out []string
	for _, e := range g.Edges {
		if e.To == id {
			out = append(out, e.From)
		}
	}
	return out
}

// Dependents lists the ids of the nodes that depend on id.
func (g *Graph) Dependents(id string) []string {
	var out []string
	for _, e := range g.Edges {
		if e.From == id {
			out = append(out, e.To)
		}
	}
	return out
}

// Ready lists the pending nodes whose dependencies have all completed, in
// graph order. It reads the edges once, so that a graph of thousands of
// nodes costs a pass, not a pass per node.
func (g *Graph) Ready() []*Node {
	status := make(map[string]NodeStatus, len(g.Nodes))
	for _, n := range g.Nodes {
		status[n.ID] = n.Status
	}
	blocked := map[string]bool{}
	for _, e := range g.Edges {
		if st, ok := status[e.From]; !ok || st != NodeCompleted {
			blocked[e.To] = true
		}
	}
	var out []*Node
	for _, n := range g.Nodes {
		if n.Status == NodePending && !blocked[n.ID] {
			out = append(out, n)
		}
	}
	return out
}

// Done reports whether no node can run any more: each has ended, or waits
// on one that did not complete.
func (g *Graph) Done() bool {
	if len(g.Ready()) > 0 {
		return false
	}
	for _, n := range g.Nodes {
		if n.Status == NodeRunning {
			return false
		}
	}
	return true
}

// AllCompleted reports whether every node completed.
func (g *Graph) AllCompleted() bool {
	for _, n := range g.Nodes {
		if n.Status != NodeCompleted {
			return false
		}
	}
	return len(g.Nodes) > 0
}

// CancelDependents cancels, transitively, the pending nodes that depend on
// id, and returns their ids.
func (g *Graph) CancelDependents(id string) []string {
	var out []string
	queue := g.Dependents(id)
	for len(queue) > 0 {
		n := g.Node(queue[0])
		queue = queue[1:]
		if n == nil || n.Status != NodePending {
			continue
		}
		n.Status = NodeCancelled
		n.Error = "cancelled: it depends on " + id + ", which failed"
		out = append(out, n.ID)
		queue = append(queue, g.Dependents(n.ID)...)
	}
	return out
}

// TaskText is what node n is sent: its task, then what the nodes it
// depends on reported and the files they made.
func (g *Graph) TaskText(n *Node) string {
	deps := g.Deps(n.ID)
	if len(deps) == 0 {
		return n.Task
	}
	var b strings.Builder
	b.WriteString(n.Task)
	b.WriteString("\n\nResults of the tasks this one builds on:")
	for _, id := range deps {
		d := g.Node(id)
		if d == nil {
			continue
		}
		fmt.Fprintf(&b, "\n- %s (on %s): %s", d.ID, d.Device, oneLine(d.Result))
		if len(d.Outputs) > 0 {
			// Files stay where they were made: say where, and whether
			// this task can read them.
			where := "on " + d.Device + ", not copied here"
			if d.Device == n.Device {
				where = "on this device"
			}
			fmt.Fprintf(&b, " [files: %s (%s)]", strings.Join(d.Outputs, ", "), where)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no result given)"
	}
	return strings.Join(strings.Fields(s), " ")
}

// indented is s with its line breaks kept (a result may be a list, or
// lines a file must hold), each line after the first indented so that it
// stays under its item.
func indented(s, indent string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no result given)"
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Join(lines, "\n"+indent)
}

// Validate checks the graph against the devices that may run its nodes:
// ids are unique and not empty, edges join existing nodes, there is no
// cycle, and every node still to run is on a listed device that has the
// apps it needs. The error names each problem and what to do about it.
func (g *Graph) Validate(devices []Device) error {
	var errs []error
	seen := map[string]bool{}
	byID := map[string]Device{}
	for _, d := range devices {
		byID[d.ID] = d
	}
	for _, n := range g.Nodes {
		switch {
		case n.ID == "":
			errs = append(errs, errors.New("a node has no id: give every node a short unique id"))
			continue
		case seen[n.ID]:
			errs = append(errs, fmt.Errorf("node id %q is used twice: ids must be unique", n.ID))
		}
		seen[n.ID] = true
		if strings.TrimSpace(n.Task) == "" {
			errs = append(errs, fmt.Errorf("node %q has no task: say what its device must do", n.ID))
		}
		if n.Status.Ended() || n.Status == NodeRunning {
			continue // where it ran is history
		}
		d, ok := byID[n.Device]
		if !ok {
			errs = append(errs, fmt.Errorf("node %q is on device %q, which is not available (devices: %s)", n.ID, n.Device, deviceList(devices)))
			continue
		}
		for _, app := range n.Apps {
			if !slices.Contains(d.Apps, app) {
				errs = append(errs, fmt.Errorf("node %q needs app %q, which device %q does not have (it has: %s)", n.ID, app, d.ID, strings.Join(d.Apps, ", ")))
			}
		}
		if why := unmetRequires(n, d); len(why) > 0 {
			errs = append(errs, fmt.Errorf("node %q requires %s, which device %q does not offer: put it on a device that does", n.ID, strings.Join(why, ", "), d.ID))
		}
	}
	edges := map[Edge]bool{}
	for _, e := range g.Edges {
		switch {
		case !seen[e.From] || !seen[e.To]:
			errs = append(errs, fmt.Errorf("edge %s→%s joins a node that does not exist", e.From, e.To))
		case e.From == e.To:
			errs = append(errs, fmt.Errorf("edge %s→%s joins a node to itself", e.From, e.To))
		case edges[e]:
			errs = append(errs, fmt.Errorf("edge %s→%s is given twice", e.From, e.To))
		}
		edges[e] = true
	}
	if cyc := g.cycle(); len(cyc) > 0 {
		errs = append(errs, fmt.Errorf("the edges make a cycle (%s): a task cannot wait for itself; remove one of these edges", strings.Join(cyc, " → ")))
	}
	return errors.Join(errs...)
}

func deviceList(ds []Device) string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// cycle returns one cycle of the graph as the ids along it (the first
// repeated at the end), or nil.
func (g *Graph) cycle() []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, next := range g.Dependents(id) {
			switch color[next] {
			case grey:
				i := slices.Index(stack, next)
				found = append(slices.Clone(stack[i:]), next)
				return true
			case white:
				if visit(next) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for _, n := range g.Nodes {
		if color[n.ID] == white && visit(n.ID) {
			return found
		}
	}
	return nil
}

// Summary is the graph as the planner reads it: one line per node with
// its device, status, dependencies and result.
func (g *Graph) Summary() string {
	if len(g.Nodes) == 0 {
		return "(the graph is empty)"
	}
	var b strings.Builder
	for i, n := range g.Nodes {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "- %s [%s] on %s", n.ID, n.Status, n.Device)
		if need := n.Requires.parts(); len(need) > 0 {
			fmt.Fprintf(&b, " (requires %s)", strings.Join(need, "; "))
		}
		if deps := g.Deps(n.ID); len(deps) > 0 {
			fmt.Fprintf(&b, ", after %s", strings.Join(deps, ", "))
		}
		fmt.Fprintf(&b, ": %s", indented(n.Task, "    "))
		switch {
		case n.Status == NodeCompleted:
			fmt.Fprintf(&b, "\n  result: %s", indented(n.Result, "    "))
		case n.Error != "":
			fmt.Fprintf(&b, "\n  error: %s", oneLine(n.Error))
		}
	}
	if g.FinishWhenDone {
		b.WriteString("\n(finish_when_done: the constellation ends as completed when every node has completed)")
	}
	return b.String()
}

// Defaults of Bounds.
const (
	DefaultMaxNodes = 2000
	DefaultMaxEdits = 5000
)

// Bounds limit a constellation's size, so that a planner that runs away
// is refused with the reason rather than swamping the server.
type Bounds struct {
	// MaxNodes bounds the nodes of a graph (DefaultMaxNodes when zero).
	MaxNodes int
	// MaxEdits bounds the edits of one planner reply (DefaultMaxEdits
	// when zero).
	MaxEdits int
}

func (b Bounds) maxNodes() int { return cmp.Or(max(b.MaxNodes, 0), DefaultMaxNodes) }
func (b Bounds) maxEdits() int { return cmp.Or(max(b.MaxEdits, 0), DefaultMaxEdits) }
