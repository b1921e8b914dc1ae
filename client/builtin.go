package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

// Names of the introspection commands of the declared command interface,
// answered by the client itself like get_mcp_tools.
const (
	// Describe returns the declared interface: every command with its
	// description, argument schema, what it returns and the events it
	// streams; parameters {namespace?}.
	Describe = "describe"
	// GetState returns the device info and the state of every server.
	GetState = "get_state"
	// Screenshot returns the display as a PNG; declared only where a
	// display exists.
	Screenshot = "screenshot"
)

// EventProgress is the event a running tool streams: an MCP progress
// notification, delivered to the callback set with WithProgress. A tool's
// other declared streams travel as progress events too.
const EventProgress = tools.StreamProgress

// Interface is the device's declared command interface, the answer to
// describe.
type Interface struct {
	Description string                 `json:"description"`
	Commands    map[string]CommandSpec `json:"commands"`
	Events      map[string]EventSpec   `json:"events"`
}

// CommandSpec declares one command. Tools are keyed "namespace.tool",
// built-in commands by their bare name.
type CommandSpec struct {
	Description string           `json:"description"`
	Namespace   string           `json:"namespace,omitempty"`
	ToolType    command.ToolType `json:"tool_type,omitempty"`
	Risk        Risk             `json:"risk,omitempty"`
	Args        json.RawMessage  `json:"args,omitempty"`
	Returns     json.RawMessage  `json:"returns,omitempty"`
	Streams     []string         `json:"streams,omitempty"`
}

// EventSpec declares one event.
type EventSpec struct {
	Description string `json:"description"`
}

// builtin answers the client's own commands. ok is false for a name that
// is not one, or for screenshot on a device without a display, which is
// then as unknown as any undeclared command.
func (c *Client) builtin(ctx context.Context, cmd command.Command) (command.Result, bool) {
	switch cmd.ToolName {
	case command.GetMCPTools:
		return c.getMCPTools(cmd), true
	case command.ListTools:
		return c.listTools(cmd), true
	case command.GetDeviceInfo:
		return command.Succeeded(cmd.CallID, c.opts.Device), true
	case command.CommandStatus, command.CancelCommand:
		return c.control(ctx, cmd), true
	case Describe:
		ns, err := stringParam(cmd.Parameters, "namespace")
		if err != nil {
			return command.Failed(cmd.CallID, "describe: "+err.Error()), true
		}
		if ns != "" && c.byNamespace[ns] == nil {
			return command.Failed(cmd.CallID, fmt.Sprintf("describe: unknown namespace %q; known namespaces: %s", ns, c.namespaceList())), true
		}
		return command.Succeeded(cmd.CallID, c.Describe(ns)), true
	case GetState:
		return command.Succeeded(cmd.CallID, map[string]any{
			"device":  c.opts.Device,
			"servers": c.Status(),
			"display": c.opts.Screenshot != nil,
		}), true
	case Screenshot:
		if c.opts.Screenshot == nil {
			return command.Result{}, false
		}
		png, err := c.opts.Screenshot(ctx)
		if err != nil {
			return command.Failed(cmd.CallID, "screenshot: "+err.Error()), true
		}
		return command.Succeeded(cmd.CallID, map[string]any{
			"type": "image", "mime_type": "image/png", "data": base64.StdEncoding.EncodeToString(png),
		}), true
	}
	return command.Result{}, false
}

// Describe returns the declared interface of one namespace ("" for the
// whole device): its tools and, for the whole device, the built-in
// commands.
func (c *Client) Describe(namespace string) Interface {
	d := c.opts.Device
	in := Interface{
		Description: fmt.Sprintf("Device %s (%s) with %d MCP servers: %s.", d.Hostname, d.Platform, len(c.conns), c.namespaceList()),
		Commands:    map[string]CommandSpec{},
		Events: map[string]EventSpec{
			EventProgress: {Description: "Progress of a running tool call: {call_id, namespace, tool_name, progress, total?, message?}."},
		},
	}
	if namespace != "" {
		in.Description = c.byNamespace[namespace].srv.Description
	}
	for _, t := range c.Tools(namespace, "") {
		in.Commands[t.Namespace+"."+t.Name] = CommandSpec{
			Description: t.Description, Namespace: t.Namespace, ToolType: t.ToolType, Risk: RiskOf(t),
			Args: t.InputSchema, Returns: t.OutputSchema, Streams: streamsOf(t),
		}
	}
	if namespace != "" {
		return in
	}
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	toolType := `"tool_type":{"type":"string","enum":["action","data_collection"]}`
	in.Commands[command.GetMCPTools] = CommandSpec{Description: "List tool infos (namespace-qualified keys, schemas, annotations, risk).",
		Args: obj(`"namespace":{"type":"string"},` + toolType), Returns: json.RawMessage(`{"type":"array"}`)}
	in.Commands[command.ListTools] = CommandSpec{Description: "UFO's name for get_mcp_tools over all namespaces.",
		Args: obj(toolType), Returns: json.RawMessage(`{"type":"array"}`)}
	in.Commands[command.GetDeviceInfo] = CommandSpec{Description: "The device's system info.", Args: obj("")}
	in.Commands[Describe] = CommandSpec{Description: "This declared interface, for the device or one namespace.",
		Args: obj(`"namespace":{"type":"string"}`)}
	in.Commands[GetState] = CommandSpec{Description: "Device info and the state of every MCP server.", Args: obj(""),
		Returns: json.RawMessage(`{"type":"object","properties":{"device":{"type":"object"},"servers":{"type":"array"},"display":{"type":"boolean"}}}`)}
	in.Commands[command.CommandStatus] = CommandSpec{Description: "How a command is doing: its latest progress while it runs (one left running in the background), its result once it has ended; wait: seconds to wait for its end first (at most 60).",
		ToolType: command.DataCollection, Args: json.RawMessage(`{"type":"object","properties":{"call_id":{"type":"string"},"wait":{"type":"number","minimum":0}},"required":["call_id"]}`),
		Returns: json.RawMessage(`{"type":"object"}`)}
	in.Commands[command.CancelCommand] = CommandSpec{Description: "Stop a running command (its tool is cancelled; a shell command is killed with every process it started) and say how it ended.",
		ToolType: command.Action, Args: json.RawMessage(`{"type":"object","properties":{"call_id":{"type":"string"}},"required":["call_id"]}`),
		Returns: json.RawMessage(`{"type":"object"}`)}
	if c.opts.Screenshot != nil {
		in.Commands[Screenshot] = CommandSpec{Description: "Capture the display.", Args: obj(""),
			Returns: json.RawMessage(`{"type":"object","properties":{"mime_type":{"const":"image/png"},"data":{"type":"string","contentEncoding":"base64"}}}`)}
	}
	return in
}

// systemScreenshot finds a way to capture the display, or returns nil when
// the device has none (no DISPLAY or WAYLAND_DISPLAY on Linux) or no
// capture tool is installed.
func systemScreenshot() func(ctx context.Context) ([]byte, error) {
	var name string
	var args []string
	switch {
	case runtime.GOOS == "darwin":
		name, args = "screencapture", []string{"-x", "-t", "png", "/dev/stdout"}
	case os.Getenv("WAYLAND_DISPLAY") != "":
		name, args = "grim", []string{"-"}
	case os.Getenv("DISPLAY") != "":
		name, args = "import", []string{"-window", "root", "png:-"}
	default:
		return nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil
	}
	return func(ctx context.Context) ([]byte, error) {
		out, err := exec.CommandContext(ctx, path, args...).Output()
		if err != nil {
			return nil, fmt.Errorf("%s failed: %v", name, err)
		}
		return out, nil
	}
}
