package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

// noAction is UFO's answer to a command without a tool name.
const noAction = "No action taken."

// execute runs one command; cl, when not nil, tracks it.
func (c *Client) execute(ctx context.Context, cmd command.Command, cl *call) command.Result {
	if cmd.ToolName == "" {
		return withNamespace(command.Succeeded(cmd.CallID, noAction), cmd.Namespace)
	}
	if cn := c.byNamespace[cmd.Namespace]; cn == nil || cn.lookup(cmd.ToolName) == nil {
		if r, ok := c.builtin(ctx, cmd); ok {
			return r
		}
	}
	cn, t, msg := c.resolve(cmd)
	if cn == nil {
		return withNamespace(command.Failed(cmd.CallID, msg), cmd.Namespace)
	}
	ns := cn.srv.Namespace
	// Encoded once: checked against the schema, then sent (or handed to
	// an in-process tool) as they are.
	args, err := encodeArgs(cmd.Parameters)
	if err == nil && t.schema != nil {
		err = validateArgs(t.schema, args)
	}
	if err != nil {
		return withNamespace(command.Failed(cmd.CallID, fmt.Sprintf("invalid arguments for %s.%s: %v", ns, cmd.ToolName, err)), ns)
	}
	if slices.Contains(c.opts.Forbid, t.risk) {
		c.log.Warn("policy refused a command", "namespace", ns, "tool", cmd.ToolName, "risk", t.risk, "call_id", cmd.CallID)
		return withNamespace(command.Failed(cmd.CallID, fmt.Sprintf("policy: %s.%s is a %s tool, and this device does not run %s tools",
			ns, cmd.ToolName, t.risk, t.risk)), ns)
	}
	if cl != nil {
		cl.mu.Lock()
		cl.ns = ns
		cl.mu.Unlock()
	}
	return withNamespace(c.call(ctx, cn, cmd, args, cl), ns)
}

func withNamespace(r command.Result, ns string) command.Result {
	r.Namespace = ns
	return r
}

func (c *Client) getMCPTools(cmd command.Command) command.Result {
	ns, err := stringParam(cmd.Parameters, "namespace")
	if err != nil {
		return command.Failed(cmd.CallID, err.Error())
	}
	if ns != "" && c.byNamespace[ns] == nil {
		return command.Failed(cmd.CallID, fmt.Sprintf("get_mcp_tools: unknown namespace %q; known namespaces: %s", ns, c.namespaceList()))
	}
	tt, err := toolTypeParam(cmd.Parameters)
	if err != nil {
		return command.Failed(cmd.CallID, "get_mcp_tools: "+err.Error())
	}
	return command.Succeeded(cmd.CallID, c.Tools(ns, tt))
}

func (c *Client) listTools(cmd command.Command) command.Result {
	tt, err := toolTypeParam(cmd.Parameters)
	if err != nil {
		return command.Failed(cmd.CallID, "list_tools: "+err.Error())
	}
	return command.Succeeded(cmd.CallID, c.Tools("", tt))
}

func stringParam(params map[string]any, name string) (string, error) {
	v, ok := params[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("parameter %q must be a string, got %T", name, v)
	}
	return s, nil
}

func toolTypeParam(params map[string]any) (command.ToolType, error) {
	s, err := stringParam(params, "tool_type")
	if err != nil {
		return "", err
	}
	tt := command.ToolType(s)
	if tt != "" && !tt.Valid() {
		return "", fmt.Errorf("tool_type %q must be %q or %q", s, command.Action, command.DataCollection)
	}
	return tt, nil
}

// resolve finds the server and tool that run cmd, or says why there is
// none.
func (c *Client) resolve(cmd command.Command) (*conn, *tool, string) {
	if cmd.Namespace != "" {
		cn := c.byNamespace[cmd.Namespace]
		if cn == nil {
			return nil, nil, fmt.Sprintf("unknown namespace %q; known namespaces: %s", cmd.Namespace, c.namespaceList())
		}
		t := cn.lookup(cmd.ToolName)
		if t == nil && len(cn.toolList()) == 0 {
			if _, err := cn.current(); err != nil {
				return nil, nil, err.Error() // it never listed its tools: say why
			}
		}
		if t == nil {
			return nil, nil, c.unknownTool(cmd.ToolName, fmt.Sprintf(" in namespace %q", cmd.Namespace))
		}
		return cn, t, ""
	}
	var found []*conn
	var tools []*tool
	for _, cn := range c.conns {
		if t := cn.lookup(cmd.ToolName); t != nil {
			found, tools = append(found, cn), append(tools, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil, c.unknownTool(cmd.ToolName, "")
	case 1:
		return found[0], tools[0], ""
	}
	var names []string
	for _, cn := range found {
		names = append(names, cn.srv.Namespace)
	}
	return nil, nil, fmt.Sprintf("tool %q is offered by several namespaces (%s); say which one in the command's namespace",
		cmd.ToolName, strings.Join(names, ", "))
}

func (c *Client) unknownTool(name, where string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q%s", name, where)
	if near := closest(name, c.allTools(), 3); len(near) > 0 {
		b.WriteString("; did you mean ")
		for i, t := range near {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (namespace %s)", t.Name, t.Namespace)
		}
		b.WriteString("?")
	} else {
		fmt.Fprintf(&b, "; known namespaces: %s; get_mcp_tools lists their tools", c.namespaceList())
	}
	return b.String()
}

func (c *Client) namespaceList() string {
	if len(c.conns) == 0 {
		return "(none)"
	}
	var names []string
	for _, cn := range c.conns {
		names = append(names, cn.srv.Namespace)
	}
	return strings.Join(names, ", ")
}

// call runs the tool with its call timeout. The call runs in its own
// goroutine so that a tool that ignores its context cannot hold the caller
// past the timeout, and so that a panicking in-process tool becomes a
// failure instead of bringing the device down.
func (c *Client) call(ctx context.Context, cn *conn, cmd command.Command, args json.RawMessage, cl *call) command.Result {
	timeout := cn.srv.timeoutFor(cmd.ToolName, c.opts.CallTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	// Every call asks for progress (a progressToken), whether or not
	// anyone listens now: a command left running in the background is
	// asked about later. Reports end when the call returns, even for a
	// tool that goes on after its timeout: the caller hears nothing of a
	// call it has had the result of.
	fn := progressFrom(ctx)
	var mu sync.Mutex
	ended := false
	defer func() {
		mu.Lock()
		ended = true
		mu.Unlock()
	}()
	onProgress := func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ended:
		case cl != nil:
			cl.progress(p)
		case fn != nil:
			p.CallID, p.Namespace, p.Tool, p.State = cmd.CallID, cn.srv.Namespace, cmd.ToolName, command.StateRunning
			fn(p)
		}
	}
	settled := func() {}
	if cl != nil {
		cl.mu.Lock()
		cl.inProcess = cn.kind == KindBuiltin && cn.srv.MCP != nil
		cl.mu.Unlock()
		settled = func() { close(cl.settled) }
	}
	type reply struct {
		res command.Result
		err error
	}
	replies := make(chan reply, 1) // buffered: a late reply must not block its goroutine forever
	go func() {
		defer settled()
		defer func() {
			if p := recover(); p != nil {
				replies <- reply{err: fmt.Errorf("tool panicked: %v", p)}
			}
		}()
		res, err := cn.callTool(ctx, cmd, args, onProgress)
		replies <- reply{res, err}
	}()
	var r reply
	select {
	case r = <-replies:
	case <-ctx.Done():
		wait := time.Duration(0)
		if errors.Is(context.Cause(ctx), errCancelledByCommand) {
			// Asked to stop: a tool that does so says what it had done
			// (a shell command's output so far).
			wait = DefaultCancelWait
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case r = <-replies: // it finished just in time, or stopped when asked
		case <-t.C:
			return command.Failed(cmd.CallID, interrupted(ctx, cmd, timeout)+cn.lastWords())
		}
	}
	if r.err != nil {
		if ctx.Err() != nil {
			return command.Failed(cmd.CallID, interrupted(ctx, cmd, timeout)+cn.lastWords())
		}
		return command.Failed(cmd.CallID, fmt.Sprintf("calling %s.%s failed: %v", cn.srv.Namespace, cmd.ToolName, r.err))
	}
	res := r.res
	if n := len(res.Result); n > c.opts.MaxResultBytes {
		return command.Failed(cmd.CallID, fmt.Sprintf("the result of %s.%s is %d bytes, over the limit of %d bytes; ask for less (a smaller range, a filter, a page)",
			cn.srv.Namespace, cmd.ToolName, n, c.opts.MaxResultBytes))
	}
	return res
}

// errCallTimeout marks the client's own call timeout, to tell it from the
// caller's deadline or cancellation.
var errCallTimeout = errors.New("call timeout")

func interrupted(ctx context.Context, cmd command.Command, timeout time.Duration) string {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errCallTimeout):
		return fmt.Sprintf("%s timed out after %s", cmd.ToolName, timeout)
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Sprintf("%s did not finish before the caller's deadline", cmd.ToolName)
	}
	return fmt.Sprintf("%s was cancelled: %v", cmd.ToolName, cause)
}

// resultOf maps an MCP tool result to a command Result. An error result
// becomes a failure with its text. Otherwise the payload is the structured
// content if there is any; else a lone text content, kept as JSON when it
// is JSON and as a JSON string when it is not; else, when there are images
// or several contents, a list of content entries.
func resultOf(cmd command.Command, res *mcp.CallToolResult) command.Result {
	if res.IsError {
		msg := strings.TrimSpace(joinText(res.Content))
		if msg == "" {
			msg = fmt.Sprintf("%s reported an error without a message", cmd.ToolName)
		}
		return command.Failed(cmd.CallID, msg)
	}
	onlyText := !slices.ContainsFunc(res.Content, func(c mcp.Content) bool { _, ok := c.(mcp.TextContent); return !ok })
	if onlyText {
		if len(res.RawStructuredContent) > 0 {
			return command.Result{Status: command.Success, Result: res.RawStructuredContent, CallID: cmd.CallID}
		}
		if res.StructuredContent != nil {
			return command.Succeeded(cmd.CallID, res.StructuredContent)
		}
	}
	switch {
	case len(res.Content) == 0:
		return command.Result{Status: command.Success, CallID: cmd.CallID}
	case len(res.Content) == 1 && onlyText:
		text := res.Content[0].(mcp.TextContent).Text
		if json.Valid([]byte(text)) {
			return command.Result{Status: command.Success, Result: json.RawMessage(text), CallID: cmd.CallID}
		}
		return command.Succeeded(cmd.CallID, text)
	}
	entries := make([]any, 0, len(res.Content))
	for _, ct := range res.Content {
		entries = append(entries, contentEntry(ct))
	}
	return command.Succeeded(cmd.CallID, entries)
}

// callDirect calls a tool of Saucer's own server in this process, without
// MCP: the arguments go to the tool as they are, progress comes straight
// back, and the result is mapped as resultOf maps what MCP would have
// delivered (TestDirectCallsMatchMCP holds the two to the same bytes).
func callDirect(ctx context.Context, t *tools.Tool, cmd command.Command, args json.RawMessage, onProgress func(Progress)) command.Result {
	var progress func(tools.Progress)
	if onProgress != nil {
		progress = func(p tools.Progress) {
			onProgress(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	return resultOfTool(cmd, t.Call(ctx, args, progress))
}

// resultOfTool maps a Go tool's result to a command Result exactly as
// resultOf maps the same result served over MCP.
func resultOfTool(cmd command.Command, res tools.Result) command.Result {
	// MCP carries text as JSON strings, which hold valid UTF-8 only.
	onlyText := !slices.ContainsFunc(res.Content, func(p tools.Part) bool { return p.MIMEType != "" })
	if res.IsError {
		var texts []string
		for _, p := range res.Content {
			if p.MIMEType == "" {
				texts = append(texts, validUTF8(p.Text))
			}
		}
		msg := strings.TrimSpace(strings.Join(texts, "\n"))
		if msg == "" {
			msg = fmt.Sprintf("%s reported an error without a message", cmd.ToolName)
		}
		return command.Failed(cmd.CallID, msg)
	}
	if onlyText && len(res.Structured) > 0 {
		return command.Result{Status: command.Success, Result: res.Structured, CallID: cmd.CallID}
	}
	switch {
	case len(res.Content) == 0:
		return command.Result{Status: command.Success, CallID: cmd.CallID}
	case len(res.Content) == 1 && onlyText:
		text := validUTF8(res.Content[0].Text)
		if json.Valid([]byte(text)) {
			return command.Result{Status: command.Success, Result: json.RawMessage(text), CallID: cmd.CallID}
		}
		return command.Succeeded(cmd.CallID, text)
	}
	entries := make([]any, 0, len(res.Content))
	for _, p := range res.Content {
		switch {
		case p.MIMEType == "":
			entries = append(entries, map[string]any{"type": "text", "text": validUTF8(p.Text)})
		case strings.HasPrefix(p.MIMEType, "audio/"):
			entries = append(entries, map[string]any{"type": "audio", "mime_type": p.MIMEType, "data": base64.StdEncoding.EncodeToString(p.Data)})
		default: // tools.Tool.Call lets only images and audio through
			entries = append(entries, map[string]any{"type": "image", "mime_type": p.MIMEType, "data": base64.StdEncoding.EncodeToString(p.Data)})
		}
	}
	return command.Succeeded(cmd.CallID, entries)
}

// validUTF8 is s as a JSON string carries it: each byte that is not part
// of valid UTF-8 becomes U+FFFD, as encoding/json writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// contentEntry is one MCP content item as it goes into a Result.
func contentEntry(ct mcp.Content) any {
	switch ct := ct.(type) {
	case mcp.TextContent:
		return map[string]any{"type": "text", "text": ct.Text}
	case mcp.ImageContent:
		return map[string]any{"type": "image", "mime_type": ct.MIMEType, "data": ct.Data}
	case mcp.AudioContent:
		return map[string]any{"type": "audio", "mime_type": ct.MIMEType, "data": ct.Data}
	}
	return ct // resource links and embedded resources keep their MCP form
}

func joinText(contents []mcp.Content) string {
	var parts []string
	for _, ct := range contents {
		if t, ok := ct.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
