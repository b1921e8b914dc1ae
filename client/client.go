// Package client is the device client: it connects to the device's MCP
// servers, caches what tools they offer, and runs Commands as MCP tool
// calls, turning every outcome, including transport failures, into a
// command.Result.
//
// Each MCP server is one namespace (an "app" for the host agent). For now
// the servers run in the same process; stdio and streamable HTTP servers
// will join them behind the same Client.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/command"
)

// ProtocolVersion is the MCP revision the client asks for. It is pinned to
// a released revision because mcp-go otherwise opens with a probe for a
// draft one.
const ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION // "2025-11-25"

// DefaultCallTimeout bounds one tool call when Options.CallTimeout is zero.
// It is longer than the limits of Saucer's own tools, so that those report
// their own, more informative timeouts first.
const DefaultCallTimeout = 15 * time.Minute

// Server is one MCP server the client serves tools from.
type Server struct {
	// Namespace names the server's tools for routing and for the agents;
	// it must be unique within a Client.
	Namespace string
	// Description tells the host agent what the namespace is for.
	Description string
	// ToolType, when set, is the type of every tool of this server. When
	// empty each tool's type follows its annotations: readOnlyHint true
	// makes it data_collection, anything else action.
	ToolType command.ToolType
	// MCP is the in-process server.
	MCP *server.MCPServer
}

// Options configures a Client. The zero value is usable.
type Options struct {
	// Device describes the device; the zero value means DetectDevice().
	Device command.DeviceInfo
	// CallTimeout bounds each tool call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
}

// Namespace summarises one server for the host agent.
type Namespace struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Tools       int    `json:"tools"`
}

// Client runs Commands against a set of MCP servers. It is safe for
// concurrent use; its tool list is fixed when New returns.
type Client struct {
	device      command.DeviceInfo
	callTimeout time.Duration
	conns       []*connection // in the order given to New
	byNamespace map[string]*connection
	tools       []command.ToolInfo // sorted by namespace, then name
}

// connection is one live MCP session and the tools it offers.
type connection struct {
	server Server
	mcp    *mcpclient.Client
	tools  map[string]command.ToolInfo
}

// New connects to each server, initialises the MCP session and lists its
// tools. It fails, closing what it opened, if a namespace is empty or
// repeated, or if a server cannot be reached or listed.
func New(ctx context.Context, servers []Server, opts Options) (*Client, error) {
	c := &Client{
		device:      opts.Device,
		callTimeout: opts.CallTimeout,
		byNamespace: make(map[string]*connection, len(servers)),
	}
	if reflect.ValueOf(c.device).IsZero() {
		c.device = DetectDevice()
	}
	if c.callTimeout <= 0 {
		c.callTimeout = DefaultCallTimeout
	}
	for _, s := range servers {
		conn, err := c.connect(ctx, s)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.conns = append(c.conns, conn)
		c.byNamespace[s.Namespace] = conn
		for _, t := range conn.tools {
			c.tools = append(c.tools, t)
		}
	}
	slices.SortFunc(c.tools, func(a, b command.ToolInfo) int {
		if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return strings.Compare(a.Name, b.Name)
	})
	return c, nil
}

func (c *Client) connect(ctx context.Context, s Server) (*connection, error) {
	switch {
	case s.Namespace == "":
		return nil, errors.New("client: a server has an empty namespace; give each server a unique name")
	case c.byNamespace[s.Namespace] != nil:
		return nil, fmt.Errorf("client: namespace %q is used by two servers; namespaces must be unique", s.Namespace)
	case s.MCP == nil:
		return nil, fmt.Errorf("client: server %q has no MCP server", s.Namespace)
	case s.ToolType != "" && !s.ToolType.Valid():
		return nil, fmt.Errorf("client: server %q: tool type %q is neither %s nor %s", s.Namespace, s.ToolType, command.Action, command.DataCollection)
	}
	mc, err := mcpclient.NewInProcessClientWithOptions(s.MCP, mcpclient.WithProtocolVersion(ProtocolVersion))
	if err != nil {
		return nil, fmt.Errorf("client: server %q: %w", s.Namespace, err)
	}
	conn := &connection{server: s, mcp: mc}
	if err := conn.open(ctx); err != nil {
		mc.Close()
		return nil, fmt.Errorf("client: server %q: %w", s.Namespace, err)
	}
	return conn, nil
}

func (conn *connection) open(ctx context.Context) error {
	if err := conn.mcp.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	_, err := conn.mcp.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      mcp.Implementation{Name: "saucer", Version: "0.1.0"},
	}})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	list, err := conn.mcp.ListTools(ctx, mcp.ListToolsRequest{}) // follows pagination
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	conn.tools = make(map[string]command.ToolInfo, len(list.Tools))
	for _, t := range list.Tools {
		info, err := toolInfo(conn.server, t)
		if err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
		}
		conn.tools[t.Name] = info
	}
	return nil
}

// toolInfo describes an MCP tool in AIP's terms.
func toolInfo(s Server, t mcp.Tool) (command.ToolInfo, error) {
	toolType := s.ToolType
	if toolType == "" {
		toolType = command.Action
		if ro := t.Annotations.ReadOnlyHint; ro != nil && *ro {
			toolType = command.DataCollection
		}
	}
	info := command.ToolInfo{
		Key:         command.ToolKey(toolType, t.Name),
		Name:        t.Name,
		Title:       t.Title,
		Namespace:   s.Namespace,
		ToolType:    toolType,
		Description: t.Description,
	}
	if info.Title == "" {
		info.Title = t.Annotations.Title
	}
	var err error
	if info.InputSchema, err = schemaJSON(t.RawInputSchema, t.InputSchema, t.InputSchema.Type != ""); err != nil {
		return info, fmt.Errorf("input schema: %w", err)
	}
	if info.OutputSchema, err = schemaJSON(t.RawOutputSchema, t.OutputSchema, t.OutputSchema.Type != ""); err != nil {
		return info, fmt.Errorf("output schema: %w", err)
	}
	if info.Annotations, err = toMap(t.Annotations); err != nil {
		return info, fmt.Errorf("annotations: %w", err)
	}
	if t.Meta != nil {
		if info.Meta, err = toMap(t.Meta); err != nil {
			return info, fmt.Errorf("meta: %w", err)
		}
	}
	return info, nil
}

func schemaJSON(raw json.RawMessage, structured any, present bool) (json.RawMessage, error) {
	if len(raw) > 0 {
		return raw, nil
	}
	if !present {
		return nil, nil
	}
	return json.Marshal(structured)
}

// toMap re-encodes v as a JSON object; an empty object becomes nil.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// Tools lists the tools of one namespace ("" for all) and one type (""
// for both), sorted by namespace, then name. The slice is the caller's.
func (c *Client) Tools(namespace string, toolType command.ToolType) []command.ToolInfo {
	out := []command.ToolInfo{}
	for _, t := range c.tools {
		if (namespace == "" || t.Namespace == namespace) && (toolType == "" || t.ToolType == toolType) {
			out = append(out, t)
		}
	}
	return out
}

// Namespaces lists the servers in the order given to New.
func (c *Client) Namespaces() []Namespace {
	out := make([]Namespace, 0, len(c.conns))
	for _, conn := range c.conns {
		out = append(out, Namespace{Name: conn.server.Namespace, Description: conn.server.Description, Tools: len(conn.tools)})
	}
	return out
}

// Device describes the device the client runs on.
func (c *Client) Device() command.DeviceInfo { return c.device }

// Close ends every MCP session.
func (c *Client) Close() error {
	var errs []error
	for _, conn := range c.conns {
		if err := conn.mcp.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", conn.server.Namespace, err))
		}
	}
	return errors.Join(errs...)
}
