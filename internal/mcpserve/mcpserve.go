// Package mcpserve serves a tools.Server over MCP with mcp-go: in-process
// for the device client, over stdio or streamable HTTP for `saucer mcp`.
// It is the one place where Saucer's tool type meets the MCP library's
// server side, so that swapping the library changes this package (and the
// client's connection code), not the tools.
package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/tools"
)

// New returns an mcp-go server offering the tools s holds now.
func New(s *tools.Server) *server.MCPServer {
	version := s.Version
	if version == "" {
		version = "1.0.0"
	}
	var opts []server.ServerOption
	if s.Instructions != "" {
		opts = append(opts, server.WithInstructions(s.Instructions))
	}
	ms := server.NewMCPServer(s.Name, version, opts...)
	for _, t := range s.Tools() {
		ms.AddTool(mcpTool(t), handler(t))
	}
	return ms
}

// Stdio serves s on in and out until ctx ends or in closes. out carries
// the protocol: nothing else may be written to it.
//
// A tool's progress notifications are written by the handler itself,
// before it returns, so that they reach the client before the result:
// mcp-go's stdio server writes notifications from a goroutine of its own,
// which loses the race with the result most times.
func Stdio(ctx context.Context, s *tools.Server, in io.Reader, out io.Writer) error {
	lw := &lineWriter{w: out}
	ss := server.NewStdioServer(New(s))
	ss.SetContextFunc(func(ctx context.Context) context.Context { return context.WithValue(ctx, directKey{}, lw) })
	return ss.Listen(ctx, in, lw)
}

// lineWriter serialises writes to the protocol stream: mcp-go writes each
// message in one call, and so do the handlers' direct notifications.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// notify writes one notification as a JSON-RPC line.
func (l *lineWriter) notify(method string, params map[string]any) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}

type directKey struct{}

// HTTP is a streamable HTTP endpoint serving s.
func HTTP(s *tools.Server) http.Handler {
	return server.NewStreamableHTTPServer(New(s))
}

// mcpTool describes t as an MCP tool: its schemas as they are, its
// annotations as MCP's hints, and what the hints cannot say (the exact
// risk class, the streams) in _meta.
func mcpTool(t *tools.Tool) mcp.Tool {
	a := t.Annotations
	mt := mcp.Tool{
		Name:            t.Name,
		Title:           a.Title,
		Description:     t.Description,
		RawInputSchema:  t.InputSchema(),
		RawOutputSchema: t.OutputSchema(),
		Annotations:     hints(a),
	}
	meta := map[string]any{}
	if a.Risk != "" {
		meta[tools.MetaRisk] = string(a.Risk)
	}
	if len(a.Streams) > 0 {
		meta[tools.MetaStreams] = a.Streams
	}
	if a.Waits {
		meta[tools.MetaWaits] = true
	}
	if len(meta) > 0 {
		mt.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return mt
}

// hints writes a risk class as MCP's hints. An undeclared class leaves
// readOnly and destructive unset, so that MCP's defaults (not read-only,
// destructive) apply.
func hints(a tools.Annotations) mcp.ToolAnnotation {
	h := mcp.ToolAnnotation{Title: a.Title}
	if a.Risk == "" {
		if a.Idempotent {
			h.IdempotentHint = mcp.ToBoolPtr(true)
		}
		if a.OpenWorld {
			h.OpenWorldHint = mcp.ToBoolPtr(true)
		}
		return h
	}
	h.ReadOnlyHint = mcp.ToBoolPtr(a.Risk == tools.RiskRead)
	h.DestructiveHint = mcp.ToBoolPtr(a.Risk == tools.RiskDestructive)
	h.IdempotentHint = mcp.ToBoolPtr(a.Idempotent)
	h.OpenWorldHint = mcp.ToBoolPtr(a.OpenWorld || a.Risk == tools.RiskExternal)
	return h
}

type progressKey struct{}

// WithProgress returns a context under which an in-process caller gets the
// progress reports of the call it makes directly, in order and all before
// the result. Notifications cannot promise that: mcp-go's in-process
// transport hands them to the client on a goroutine of their own, so a
// report sent just before the result arrives after it. (The in-process
// transport passes the caller's context to the handler.)
func WithProgress(ctx context.Context, fn func(tools.Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// handler runs t for mcp-go. It never returns a Go error, which mcp-go
// would turn into a protocol error the model never sees. The handler's
// progress reports go to an in-process caller's WithProgress, or, when the
// caller sent a progressToken, back to it as notifications/progress with
// that token.
func handler(t *tools.Tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		progress, _ := ctx.Value(progressKey{}).(func(tools.Progress))
		if progress == nil && req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			token, srv := req.Params.Meta.ProgressToken, server.ServerFromContext(ctx)
			direct, _ := ctx.Value(directKey{}).(*lineWriter)
			progress = func(p tools.Progress) {
				params := map[string]any{"progressToken": token, "progress": p.Progress}
				if p.Total != 0 {
					params["total"] = p.Total
				}
				if p.Message != "" {
					params["message"] = p.Message
				}
				// A report the session cannot take (its queue is full, the
				// client left) is lost; the call goes on.
				if direct != nil {
					_ = direct.notify("notifications/progress", params)
					return
				}
				_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
			}
		}
		return result(t.Call(ctx, rawArguments(req), progress)), nil
	}
}

// result writes a tool result in MCP's terms.
func result(r tools.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, 0, len(r.Content))}
	for _, p := range r.Content {
		switch {
		case p.MIMEType == "":
			out.Content = append(out.Content, mcp.NewTextContent(p.Text))
		case strings.HasPrefix(p.MIMEType, "audio/"):
			out.Content = append(out.Content, mcp.NewAudioContent(base64.StdEncoding.EncodeToString(p.Data), p.MIMEType))
		default: // Call lets only images and audio through
			out.Content = append(out.Content, mcp.NewImageContent(base64.StdEncoding.EncodeToString(p.Data), p.MIMEType))
		}
	}
	if len(r.Structured) > 0 {
		out.StructuredContent = r.Structured
	}
	return out
}

// rawArguments returns the call's arguments as JSON, whichever way the
// transport delivered them.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	if raw, ok := req.Params.Arguments.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		// Arguments came from decoded JSON, so this cannot happen; if it
		// does, the tool reports the arguments as unreadable.
		return json.RawMessage("!")
	}
	return b
}
