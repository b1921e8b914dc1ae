package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Tool is one tool: its name, what it does, what it declares about itself,
// the JSON Schemas of its input and output (from Go types), and its typed
// handler. Build one with New.
type Tool struct {
	// Name is the tool's name within its server.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Annotations declare the tool's title, risk class and streams.
	Annotations Annotations

	in, out json.RawMessage
	args    argSpec
	handle  func(ctx context.Context, raw []byte) (any, error)
}

// Annotations are what a tool declares about itself besides its schemas.
// The zero value declares nothing, and a caller must then assume the worst
// (MCP's defaults): a tool that may destroy data and reach outside the
// device.
type Annotations struct {
	// Title is a short name for people ("Run a shell command").
	Title string
	// Risk is the tool's risk class, the device policy's unit; empty means
	// undeclared, which the device client classes RiskDestructive.
	Risk Risk
	// Idempotent says that calling the tool again with the same arguments
	// has no further effect.
	Idempotent bool
	// OpenWorld says that the tool reaches outside the device (the network,
	// other people) whatever its class: a web search is RiskRead and
	// OpenWorld. RiskExternal implies it.
	OpenWorld bool
	// Streams names what the tool streams while it runs, besides its
	// result (StreamProgress, or a stream of its own such as "output").
	// Every stream travels as progress reports: see ReportProgress.
	Streams []string
	// Waits says that waiting is the tool's work: it returns when what it
	// waits for happens or when a timeout of its own, given in the call,
	// runs out. Such a call is never left running in the background
	// (agent.detach_after), because the model asked to wait for its answer.
	Waits bool
}

// Risk is how much harm a tool can do: the device policy's unit
// (mcp.policy.forbid in the config).
type Risk string

// Risk classes, from least to most worrying.
const (
	// RiskRead only reads the device.
	RiskRead Risk = "read"
	// RiskWrite changes the device in ways that can be undone or repeated.
	RiskWrite Risk = "write"
	// RiskDestructive may delete or overwrite what cannot be recovered.
	RiskDestructive Risk = "destructive"
	// RiskExternal reaches outside the device (the network, other people).
	RiskExternal Risk = "external"
)

// Valid reports whether r is one of the four classes.
func (r Risk) Valid() bool {
	switch r {
	case RiskRead, RiskWrite, RiskDestructive, RiskExternal:
		return true
	}
	return false
}

// The _meta keys under which a served tool declares what MCP's annotations
// cannot say: its risk class, its streams and whether it waits on purpose.
// Other MCP hosts ignore them.
const (
	MetaRisk    = "saucer/risk"
	MetaStreams = "saucer/streams"
	MetaWaits   = "saucer/waits"
)

// New makes handler a tool. The input schema is Schema[In] (so In must be
// a struct); when Out is a struct, Schema[Out] is the output schema too.
//
// A call never fails with a Go error, because a model never sees one:
//   - arguments that do not fit In (not an object, an unknown name, a
//     missing required argument, a wrong type) give an error result naming
//     the argument and what was expected;
//   - an error from handler gives an error result with err.Error();
//   - a panic in handler gives an error result saying so;
//   - a Content value is returned as its parts;
//   - a string is returned as plain text;
//   - any other value is returned as JSON text and, when it encodes as a
//     JSON object, as structured content as well.
//
// The handler reports progress with ReportProgress(ctx, ...).
//
// New panics if In is not a struct: that is a programming error, found the
// first time the server is built.
func New[In, Out any](name, description string, a Annotations, handler func(ctx context.Context, in In) (Out, error)) *Tool {
	t := &Tool{Name: name, Description: description, Annotations: a, in: Schema[In]()}
	var err error
	if t.args, err = parseArgSpec(t.in); err != nil {
		panic(fmt.Sprintf("tools.New(%q): input type %T: %v", name, *new(In), err))
	}
	if isStruct(reflect.TypeFor[Out]()) {
		t.out = Schema[Out]()
	}
	t.handle = func(ctx context.Context, raw []byte) (any, error) {
		var in In
		if err := t.args.decode(raw, &in); err != nil {
			return nil, argsError{err}
		}
		return handler(ctx, in)
	}
	return t
}

// argsError marks arguments that do not fit the input type.
type argsError struct{ error }

// InputSchema is the JSON Schema of the tool's arguments.
func (t *Tool) InputSchema() json.RawMessage { return t.in }

// OutputSchema is the JSON Schema of the tool's structured result, or nil
// when its result is not a struct.
func (t *Tool) OutputSchema() json.RawMessage { return t.out }

// Result is the outcome of a tool call.
type Result struct {
	// Content is what the call returned, in order; an error result holds
	// one text part, the error's message.
	Content Content
	// Structured is the result as a JSON object, when the handler's value
	// encodes as one.
	Structured json.RawMessage
	// IsError marks a failure for the model to read: bad arguments, the
	// handler's error, a panic.
	IsError bool
}

// Text joins the result's text parts with newlines.
func (r Result) Text() string {
	var parts []string
	for _, p := range r.Content {
		if p.MIMEType == "" {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func errorResult(msg string) Result { return Result{Content: Content{Text(msg)}, IsError: true} }

// Call runs the tool on args, a JSON object (empty or null means {}). It
// never fails: see New for what becomes an error result. progress, when
// not nil, receives the handler's progress reports until Call returns;
// later reports are dropped.
func (t *Tool) Call(ctx context.Context, args json.RawMessage, progress func(Progress)) (res Result) {
	if t.handle == nil {
		return errorResult(fmt.Sprintf("tool %s has no handler (build tools with tools.New)", t.Name))
	}
	if progress != nil {
		r := &reporter{fn: progress}
		defer r.end()
		ctx = context.WithValue(ctx, reporterKey{}, r)
	}
	defer func() {
		if p := recover(); p != nil {
			res = errorResult(fmt.Sprintf("tool %s crashed: %v", t.Name, p))
		}
	}()
	out, err := t.handle(ctx, args)
	if ae, ok := err.(argsError); ok {
		return errorResult(fmt.Sprintf("invalid arguments for %s: %v", t.Name, ae.error))
	}
	if err != nil {
		return errorResult(err.Error())
	}
	return t.resultOf(out)
}

// resultOf turns a handler's value into a result.
func (t *Tool) resultOf(v any) Result {
	switch v := v.(type) {
	case string:
		return Result{Content: Content{Text(v)}}
	case Content:
		for _, p := range v {
			if !p.valid() {
				return errorResult(fmt.Sprintf("tool %s returned a part of type %q; a part is text, an image (image/...) or audio (audio/...)",
					t.Name, p.MIMEType))
			}
		}
		return Result{Content: v}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(fmt.Sprintf("encode the result of %s: %v", t.Name, err))
	}
	res := Result{Content: Content{Text(string(b))}}
	// Structured content must be a JSON object (MCP spec); anything else is
	// carried by the text alone.
	if len(b) > 0 && b[0] == '{' {
		res.Structured = b
	}
	return res
}

func isStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

// Content is a handler result made of parts, for a tool that returns more
// than JSON: a screenshot beside its text.
type Content []Part

// Part is one piece of a Content: text, or data (an image or audio) with
// its MIME type.
type Part struct {
	// Text is the part's text when MIMEType is empty.
	Text string
	// Data is the part's bytes when MIMEType is set.
	Data []byte
	// MIMEType says what Data is: image/png, audio/wav, ...
	MIMEType string
}

// Text is a text part.
func Text(s string) Part { return Part{Text: s} }

// Image is an image part: data in the format mimeType names (image/png).
func Image(data []byte, mimeType string) Part { return Part{Data: data, MIMEType: mimeType} }

func (p Part) valid() bool {
	return p.MIMEType == "" || strings.HasPrefix(p.MIMEType, "image/") || strings.HasPrefix(p.MIMEType, "audio/")
}

// Server is a set of tools offered as one MCP server: a namespace of the
// device (client.Server.MCP), or a server of its own (`saucer mcp NAME`).
// Add its tools before it is served: a connection sees the tools the
// server held when it was made.
type Server struct {
	// Name is the server's name, advertised to MCP clients.
	Name string
	// Version is the server's version; empty means 1.0.0.
	Version string
	// Instructions tell a model how to use the tools together.
	Instructions string

	mu    sync.Mutex
	tools []*Tool
}

// Add adds tools to the server. It panics on a nil tool, an empty name or
// a name the server already has: programming errors, found the first time
// the server is built.
func (s *Server) Add(tools ...*Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tools {
		switch {
		case t == nil:
			panic(fmt.Sprintf("tools: server %q: Add(nil)", s.Name))
		case t.Name == "":
			panic(fmt.Sprintf("tools: server %q: a tool has no name", s.Name))
		case s.find(t.Name) != nil:
			panic(fmt.Sprintf("tools: server %q has two tools named %q", s.Name, t.Name))
		}
		s.tools = append(s.tools, t)
	}
}

// Tools returns the server's tools in the order they were added.
func (s *Server) Tools() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Tool(nil), s.tools...)
}

// Tool returns the tool named name, or nil.
func (s *Server) Tool(name string) *Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.find(name)
}

func (s *Server) find(name string) *Tool {
	for _, t := range s.tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}
