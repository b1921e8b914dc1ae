package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
)

// UFO's device client speaks another dialect than Saucer's. It routes
// each command frame through the agent the frame names (an entry of its
// mcp.yaml) and looks each command up as tool_type::tool_name among
// that agent's tools; what it cannot route (get_mcp_tools,
// get_device_info, a tool it does not have, a tool under the wrong
// tool_type) raises in its router, which logs the error and answers
// nothing: the round would wait out its whole timeout. So the server
// speaks to it as UFO's own server does:
//
//   - it lists the tools once per connection and agent, with the one
//     meta tool UFO's agents use, list_tools sent as an action (no
//     filter: the action and data collection tools at once);
//   - the agents' discovery (get_mcp_tools, list_tools, get_device_info)
//     is answered from that list and the registration, without a round;
//   - each command goes out with the tool_type the device listed it
//     under, and a tool it never listed is refused here with a failure
//     Result that names the tools it has; what came after it in the
//     round is skipped, as UFO's client skips after a failure.

// ufoDiscoveryTimeout bounds the wait for a UFO client's tool list. Its
// list_tools is answered by the client itself, but the first command of
// an agent also connects the agent's MCP servers.
const ufoDiscoveryTimeout = time.Minute

// ufoCatalog is one agent's tools on one connection of a UFO client.
type ufoCatalog struct {
	conn  *aip.Conn // the connection it was asked on
	done  chan struct{}
	tools []command.ToolInfo // set before done closes
	err   error
}

// speaksUFO says d is UFO's device client, not Saucer's: it declared
// neither a tool list version, nor its namespaces, nor its run. Called
// with s.mu held.
func (d *device) speaksUFO() bool {
	return !d.asksTools && d.instance == "" && d.namespaces == nil
}

// ufoTools returns the tools agent offers on d's current connection,
// asking the device once per connection (concurrent callers share the
// one question). While d is away its last list serves.
func (s *Server) ufoTools(ctx context.Context, d *device, agent string) ([]command.ToolInfo, error) {
	c, err := s.ufoCatalog(d, agent)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		return c.tools, c.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// ufoCatalog returns agent's catalog on d's current connection, asking
// the device for it unless it was asked on this connection already (and
// did not fail).
func (s *Server) ufoCatalog(d *device, agent string) (*ufoCatalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	conn := d.conn
	c := d.catalogs[agent]
	// c.err is set, under s.mu, only as done closes: a failed question
	// is over and is asked again.
	if c != nil && (conn == nil || c.conn == conn) && c.err == nil {
		return c, nil
	}
	if conn == nil {
		return nil, fmt.Errorf("device %s is not connected, and its tools are not known yet: they are asked for when it connects", d.id)
	}
	c = &ufoCatalog{conn: conn, done: make(chan struct{})}
	if d.catalogs == nil {
		d.catalogs = map[string]*ufoCatalog{}
	}
	d.catalogs[agent] = c
	s.conns.Add(1) // it lives no longer than the connection, which the server's stop closes and waits for
	go func() {
		defer s.conns.Done()
		list := command.Command{ToolName: command.ListTools, ToolType: command.Action, Parameters: map[string]any{}}
		infos, err := s.probe(d, conn, agent, list, ufoDiscoveryTimeout)
		if err != nil {
			err = fmt.Errorf("UFO's device client %s did not list the tools of its agent %s: %w (it answers nothing to a frame it cannot route: "+
				"check that its mcp.yaml has the agent %s and that the agent's MCP servers are up)", d.id, agent, err, agent)
			s.logf("%v", err)
		}
		s.mu.Lock()
		c.tools, c.err = infos, err
		if err == nil {
			d.tools = fromDevice(infos, 0) // the API shows the device's tools as the device listed them
		}
		close(c.done)
		s.mu.Unlock()
		if err == nil {
			s.putDevice(d)
			s.publishClient(d)
		}
	}()
	return c, nil
}

// ufoDispatcher is a task's dispatcher for a UFO device client: it
// answers discovery from the device's tool list and sends only what the
// device can route, with the tool type it listed (see above).
type ufoDispatcher struct {
	inner dispatcher.Dispatcher
	s     *Server
	d     *device
	// agent is the agent_name of the task's frames; empty: the agent
	// that asks (command.AgentFrom).
	agent string
}

func (u ufoDispatcher) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	agent := cmp.Or(u.agent, command.AgentFrom(ctx))
	if agent == "" {
		agent = command.AppAgentName
	}
	tools, listErr := u.s.ufoTools(ctx, u.d, agent)
	var send []command.Command // what goes to the device, in order
	var at []int               // where each one's result goes
	refused := -1              // the first command refused here
	for i, c := range cmds {
		if refused >= 0 {
			out[i] = command.SkippedResult(c.CallID, fmt.Sprintf("skipped: %s before it was refused", cmds[refused].ToolName))
			continue
		}
		switch c.ToolName {
		case command.GetMCPTools, command.ListTools:
			if listErr != nil {
				out[i] = command.Failed(c.CallID, listErr.Error())
				continue
			}
			ns, _ := c.Parameters["namespace"].(string)
			tt, _ := c.Parameters["tool_type"].(string)
			some := []command.ToolInfo{}
			for _, t := range tools {
				if (ns == "" || t.Namespace == ns) && (tt == "" || string(t.ToolType) == tt) {
					some = append(some, t)
				}
			}
			b, _ := json.Marshal(some)
			out[i] = command.Result{Status: command.Success, Result: b, CallID: c.CallID}
			continue
		case command.GetDeviceInfo:
			u.s.mu.Lock()
			info := u.d.info
			u.s.mu.Unlock()
			b, _ := json.Marshal(info)
			out[i] = command.Result{Status: command.Success, Result: b, CallID: c.CallID}
			continue
		}
		if listErr != nil {
			out[i], refused = command.Failed(c.CallID, fmt.Sprintf("%s was not sent: %v", c.ToolName, listErr)), i
			continue
		}
		t, ok := ufoLookup(tools, c)
		if !ok {
			out[i], refused = command.Failed(c.CallID, ufoUnknown(u.d.id, agent, c, tools)), i
			continue
		}
		c.ToolType = t.ToolType // the device looks it up as tool_type::tool_name
		send, at = append(send, c), append(at, i)
	}
	if len(send) > 0 {
		res := u.inner.Execute(ctx, send)
		for k, r := range res {
			if k < len(at) {
				out[at[k]] = r
			}
		}
	}
	return out
}

// ufoLookup finds the tool c names among tools: by name, within c's
// namespace when it names one, of c's tool type when that matches one
// (else of the type the device has it under).
func ufoLookup(tools []command.ToolInfo, c command.Command) (command.ToolInfo, bool) {
	var found command.ToolInfo
	ok := false
	for _, t := range tools {
		if t.Name != c.ToolName || (c.Namespace != "" && t.Namespace != c.Namespace) {
			continue
		}
		if t.ToolType == c.ToolType || !ok {
			found, ok = t, true
		}
	}
	return found, ok
}

// ufoUnknown says that the device never listed c's tool, and what it has.
func ufoUnknown(id, agent string, c command.Command, tools []command.ToolInfo) string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	where := ""
	if c.Namespace != "" {
		where = " in " + c.Namespace
	}
	have := "none"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return fmt.Sprintf("there is no tool %q%s on device %s (its agent %s lists: %s); it was not sent. Use one of the listed tools",
		c.ToolName, where, id, agent, have)
}

// listUFOTools asks a UFO client that just registered for its tools,
// when the agent its frames name is known without a task (the agent of
// its platform or of remote.device_agents): tasks then find them
// listed, and the API shows them.
func (s *Server) listUFOTools(d *device) {
	s.mu.Lock()
	ufo := d.speaksUFO()
	agent, err := s.agentNameLocked(d)
	s.mu.Unlock()
	if !ufo || err != nil || agent == "" {
		return
	}
	_, _ = s.ufoCatalog(d, agent) // a failure is logged, and tasks ask again
}
