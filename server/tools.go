package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/tools"
)

// A device's tools, as the server knows them. A Saucer device client
// answers get_mcp_tools outside a task (it says so with a tool list
// version in its registration, aip.MetaToolsVersion): the server asks it
// when it registers, again when it comes back, and again whenever a
// heartbeat carries another version. UFO's client routes every command
// by the agent that sends it (its mcp.yaml's agent names), so outside a
// task nothing can ask it: its tools are those its last task here listed
// (the agents' own get_mcp_tools and list_tools rounds), and the API says
// so.

// Where a device's tool list came from.
const (
	// ToolsFromDevice: the server asked the device outside a task.
	ToolsFromDevice = "device"
	// ToolsFromTask: the tool listings of the device's last task here.
	ToolsFromTask = "task"
)

// DeviceTool is one of a device's tools as the API shows it.
type DeviceTool struct {
	Namespace   string           `json:"namespace"`
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Type        command.ToolType `json:"tool_type,omitempty"`
	Description string           `json:"description,omitempty"`
	// Risk is Saucer's risk class (read, write, destructive, external)
	// where the device gave one.
	Risk string `json:"risk,omitempty"`
	// Annotations are the tool's MCP hints, where it gave them.
	Annotations ToolHints `json:"annotations"`
	// Streams are what the tool declares it streams while it runs (its
	// progress reports carry them).
	Streams []string `json:"streams,omitempty"`
}

// ToolHints are MCP's tool annotations; nil: the tool says nothing.
type ToolHints struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// DeviceTools answers GET /api/clients/{id}/tools.
type DeviceTools struct {
	ClientID string `json:"client_id"`
	// Source is ToolsFromDevice, ToolsFromTask, or empty: not known.
	Source    string    `json:"source,omitempty"`
	LearnedAt time.Time `json:"learned_at,omitzero"`
	// TaskID is the task whose listings they are (Source task).
	TaskID string `json:"task_id,omitempty"`
	// Note says, in words, where they come from and how current they are.
	Note  string       `json:"note"`
	Tools []DeviceTool `json:"tools"`
}

// ToolsSummary is what a device's entry in the device list says of its
// tools (GET /api/clients/{id}/tools has them).
type ToolsSummary struct {
	Count     int       `json:"count"`
	Source    string    `json:"source,omitempty"`
	LearnedAt time.Time `json:"learned_at,omitzero"`
	// Namespaces are the namespaces (apps) its tools are in, sorted: a
	// device that registered none (UFO's client) has these as its apps.
	Namespaces []string `json:"namespaces,omitempty"`
}

// toolList is what the server learned of a device's tools: replaced
// whole, never changed in place (readers hold it without the lock).
type toolList struct {
	Tools     []DeviceTool `json:"tools"`
	Source    string       `json:"source"`
	LearnedAt time.Time    `json:"learned_at"`
	TaskID    string       `json:"task_id,omitempty"`
	// Version is the device's tools_version the list answers.
	Version uint64 `json:"version,omitempty"`
}

func (l *toolList) summary() ToolsSummary {
	if l == nil {
		return ToolsSummary{}
	}
	var ns []string
	for _, t := range l.Tools {
		if t.Namespace != "" {
			ns = append(ns, t.Namespace)
		}
	}
	slices.Sort(ns)
	return ToolsSummary{Count: len(l.Tools), Source: l.Source, LearnedAt: l.LearnedAt, Namespaces: slices.Compact(ns)}
}

// view is the list as the API shows it, with a note in words.
func (l *toolList) view(clientID string, asks bool) DeviceTools {
	out := DeviceTools{ClientID: clientID, Tools: []DeviceTool{}}
	switch {
	case l == nil && asks:
		out.Note = "not known yet: the server asks the device for its tools when it registers"
	case l == nil:
		out.Note = "not known yet: the server asks UFO's client for its agent's tools (list_tools) when it registers, when its agent is known then, or at its first task"
	default:
		out.Tools, out.Source, out.LearnedAt, out.TaskID = l.Tools, l.Source, l.LearnedAt, l.TaskID
		if l.Source == ToolsFromDevice {
			out.Note = "asked of the device at " + l.LearnedAt.Format(time.RFC3339) + "; asked again when it reconnects or says its tools changed"
		} else {
			out.Note = fmt.Sprintf("listed by its last task here (%s) at %s: this device client does not list its tools outside a task (UFO's client answers only its agents), so they may have changed since", l.TaskID, l.LearnedAt.Format(time.RFC3339))
		}
	}
	return out
}

// deviceTool is what the API shows of a tool info.
func deviceTool(t command.ToolInfo) DeviceTool {
	dt := DeviceTool{Namespace: t.Namespace, Name: t.Name, Title: t.Title, Type: t.ToolType, Description: t.Description}
	dt.Risk, _ = t.Meta[tools.MetaRisk].(string)
	if dt.Title == "" {
		dt.Title, _ = t.Annotations["title"].(string)
	}
	hint := func(key string) *bool {
		if b, ok := t.Annotations[key].(bool); ok {
			return &b
		}
		return nil
	}
	dt.Annotations = ToolHints{ReadOnly: hint("readOnlyHint"), Destructive: hint("destructiveHint"),
		Idempotent: hint("idempotentHint"), OpenWorld: hint("openWorldHint")}
	if list, ok := t.Meta[tools.MetaStreams].([]any); ok {
		for _, s := range list {
			if s, ok := s.(string); ok && s != "" {
				dt.Streams = append(dt.Streams, s)
			}
		}
	}
	return dt
}

func sortTools(ts []DeviceTool) {
	slices.SortFunc(ts, func(a, b DeviceTool) int {
		if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// askTools asks a device that answers outside a task (a Saucer client)
// for its tools, in a command frame of its own on conn, and keeps the
// answer. version is the tool list version the device last declared. A
// probe already under way for the device is not doubled: it asks again
// when it ends if the version moved meanwhile.
func (s *Server) askTools(d *device, conn *aip.Conn, version uint64) {
	s.mu.Lock()
	d.toolsWanted = version
	if d.probing == conn || d.conn != conn || s.closing {
		s.mu.Unlock()
		return
	}
	d.probing = conn
	// It lives no longer than the connection, which the server's stop
	// closes and waits for.
	s.conns.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.conns.Done()
		for {
			list, err := s.probeTools(d, conn, version)
			s.mu.Lock()
			if err == nil {
				d.tools = list
			}
			again := err == nil && d.toolsWanted != version && d.conn == conn
			version = d.toolsWanted
			if !again && d.probing == conn {
				d.probing = nil
			}
			s.mu.Unlock()
			if err != nil {
				s.logf("%s: could not list its tools: %v", d.id, err)
				return
			}
			s.putDevice(d)
			s.publishClient(d)
			if !again {
				return
			}
		}
	}()
}

// probeTools sends get_mcp_tools and waits for its answer, until the
// command timeout, the connection's end or the server's.
func (s *Server) probeTools(d *device, conn *aip.Conn, version uint64) (*toolList, error) {
	timeout := s.opts.CommandTimeout
	if timeout <= 0 {
		timeout = dispatcher.DefaultTimeout
	}
	infos, err := s.probe(d, conn, "", command.Command{ToolName: command.GetMCPTools, ToolType: command.DataCollection, Parameters: map[string]any{}}, timeout)
	if err != nil {
		return nil, err
	}
	return fromDevice(infos, version), nil
}

// fromDevice is the tool list a device answered, as the API shows it.
func fromDevice(infos []command.ToolInfo, version uint64) *toolList {
	list := &toolList{Tools: make([]DeviceTool, 0, len(infos)), Source: ToolsFromDevice, LearnedAt: time.Now().UTC(), Version: version}
	for _, t := range infos {
		list.Tools = append(list.Tools, deviceTool(t))
	}
	sortTools(list.Tools)
	return list
}

// probe sends one listing command (get_mcp_tools, or list_tools to UFO's
// client) in a frame of its own, named for agent, and waits for its
// answer, a list of tool infos, until timeout, the connection's end or
// the server's.
func (s *Server) probe(d *device, conn *aip.Conn, agent string, cmd command.Command, timeout time.Duration) ([]command.ToolInfo, error) {
	ctx, cancel := context.WithTimeoutCause(conn.Context(), timeout, fmt.Errorf("no answer within %s", timeout))
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	id := s.opts.NewID()
	answer := make(chan *aip.ClientMessage, 1)
	s.mu.Lock()
	if d.probes == nil {
		d.probes = map[string]chan *aip.ClientMessage{}
	}
	d.probes[id] = answer
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(d.probes, id)
		s.mu.Unlock()
	}()
	cmd.CallID = s.opts.NewID()
	frame := &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, ResponseID: id, Timestamp: aip.Timestamp(time.Now()),
		AgentName: agent, Actions: []command.Command{cmd}}
	if err := conn.Send(ctx, frame); err != nil {
		return nil, err
	}
	var m *aip.ClientMessage
	select {
	case m = <-answer:
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer to %s: %w", cmd.ToolName, context.Cause(ctx))
	}
	if len(m.ActionResults) != 1 || !m.ActionResults[0].OK() {
		why := "no result"
		if len(m.ActionResults) == 1 {
			why = m.ActionResults[0].Error
		}
		return nil, fmt.Errorf("%s failed: %s", cmd.ToolName, why)
	}
	var infos []command.ToolInfo
	if err := json.Unmarshal(m.ActionResults[0].Result, &infos); err != nil {
		return nil, fmt.Errorf("%s did not answer a list of tool infos: %w", cmd.ToolName, err)
	}
	return infos, nil
}

// probeAnswer hands a command_results frame to the probe waiting for it;
// false: it answers no probe.
func (s *Server) probeAnswer(d *device, m *aip.ClientMessage) bool {
	s.mu.Lock()
	ch := d.probes[m.PrevResponseID]
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- m:
	default:
	}
	return true
}

// learnTools keeps the tool listings of a task's round (get_mcp_tools
// and list_tools, as the agents discover) for a device the server cannot
// ask outside a task: each listing replaces what the device had under
// the same filter (namespace, tool type).
func (s *Server) learnTools(d *device, taskID string, cmds []command.Command, res []command.Result) {
	var learned bool
	for i, c := range cmds {
		if i >= len(res) || !res[i].OK() || (c.ToolName != command.GetMCPTools && c.ToolName != command.ListTools) {
			continue
		}
		var infos []command.ToolInfo
		if json.Unmarshal(res[i].Result, &infos) != nil {
			continue
		}
		ns, _ := c.Parameters["namespace"].(string)
		tt, _ := c.Parameters["tool_type"].(string)
		s.mu.Lock()
		if d.asksTools && d.tools != nil && d.tools.Source == ToolsFromDevice {
			s.mu.Unlock()
			return // the device's own answer is current
		}
		list := &toolList{Source: ToolsFromTask, LearnedAt: time.Now().UTC(), TaskID: taskID}
		if d.tools != nil {
			for _, t := range d.tools.Tools {
				if (ns == "" || t.Namespace == ns) && (tt == "" || string(t.Type) == tt) {
					continue // replaced by this listing
				}
				list.Tools = append(list.Tools, t)
			}
		}
		for _, t := range infos {
			if (ns == "" || t.Namespace == ns) && (tt == "" || string(t.ToolType) == tt) {
				list.Tools = append(list.Tools, deviceTool(t))
			}
		}
		sortTools(list.Tools)
		d.tools = list
		s.mu.Unlock()
		learned = true
	}
	if learned {
		s.putDevice(d)
		s.publishClient(d)
	}
}

// learningDispatcher is a task's dispatcher that keeps the tool listings
// its rounds bring back (learnTools).
type learningDispatcher struct {
	inner  dispatcher.Dispatcher
	s      *Server
	d      *device
	taskID string
}

func (l learningDispatcher) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	res := l.inner.Execute(ctx, cmds)
	for _, c := range cmds {
		if c.ToolName == command.GetMCPTools || c.ToolName == command.ListTools {
			l.s.learnTools(l.d, l.taskID, cmds, res)
			break
		}
	}
	return res
}

// DeviceTools is what the server knows of a device's tools, from this
// server or, when another server of the cluster holds the device, from
// the store. ok is false for a device nobody holds.
func (s *Server) DeviceTools(id string) (DeviceTools, bool) {
	s.mu.Lock()
	d := s.devices[id]
	var list *toolList
	var asks bool
	if d != nil {
		list, asks = d.tools, d.asksTools
	}
	s.mu.Unlock()
	if d != nil {
		return list.view(id, asks), true
	}
	if s.peers != nil {
		if rec, ok := s.storedDevice(id); ok {
			return rec.Tools.view(id, rec.AsksTools), true
		}
	}
	return DeviceTools{}, false
}

// clientTools answers GET /api/clients/{id}/tools.
func (s *Server) clientTools(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	dt, ok := s.DeviceTools(id)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no device %q is registered (GET /api/clients lists them)", id)})
		return
	}
	writeJSON(w, http.StatusOK, dt)
}
