package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Add registers a typed tool on s. The input schema is Schema[In] (so In
// must be a struct); when Out is a struct, Schema[Out] becomes the output
// schema too. The annotations' Title, if set, is also the tool's title.
//
// The registered handler never returns a Go error to mcp-go, because mcp-go
// turns one into a protocol error the model never sees. Instead:
//   - arguments that do not fit In (not an object, an unknown name, a missing
//     required argument, a wrong type) give an error result naming the
//     argument and what was expected;
//   - an error from handler gives an error result with err.Error();
//   - a panic in handler gives an error result saying so;
//   - a Content value is returned as its contents;
//   - otherwise the value is returned as JSON text and, when it encodes as a
//     JSON object, as structured content as well. A string result is
//     returned as plain text.
//
// Add panics if In is not a struct: that is a programming error, found the
// first time the server is built.
func Add[In, Out any](s *server.MCPServer, name, description string, annotations mcp.ToolAnnotation,
	handler func(ctx context.Context, in In) (Out, error)) {
	inSchema := Schema[In]()
	args, err := parseArgSpec(inSchema)
	if err != nil {
		panic(fmt.Sprintf("tools.Add(%q): input type %T: %v", name, *new(In), err))
	}
	tool := mcp.Tool{
		Name:           name,
		Title:          annotations.Title,
		Description:    description,
		RawInputSchema: inSchema,
		Annotations:    annotations,
	}
	if isStruct(reflect.TypeFor[Out]()) {
		tool.RawOutputSchema = Schema[Out]()
	}
	s.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = mcp.NewToolResultError(fmt.Sprintf("tool %s crashed: %v", name, p)), nil
			}
		}()
		var in In
		if err := args.decode(rawArguments(req), &in); err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("invalid arguments for %s: %v", name, err)), nil
		}
		out, err := handler(ctx, in)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return resultOf(out), nil
	})
}

func isStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

// Content is a handler result made of MCP contents as they are, for a
// tool that returns more than JSON (a screenshot beside its text).
type Content []mcp.Content

// resultOf turns a handler's value into a tool result.
func resultOf(v any) *mcp.CallToolResult {
	if s, ok := v.(string); ok {
		return mcp.NewToolResultText(s)
	}
	if c, ok := v.(Content); ok {
		return &mcp.CallToolResult{Content: c}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("encode tool result: %v", err))
	}
	res := mcp.NewToolResultText(string(b))
	// Structured content must be a JSON object (MCP spec); anything else is
	// carried by the text alone.
	if len(b) > 0 && b[0] == '{' {
		res.StructuredContent = json.RawMessage(b)
	}
	return res
}

// rawArguments returns the call's arguments as JSON, whichever way the
// transport delivered them.
func rawArguments(req mcp.CallToolRequest) []byte {
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
		// does, the decoder reports the arguments as unreadable.
		return []byte("!")
	}
	return b
}

// argSpec is what the decoder needs from an input schema: the argument
// names it accepts and those it requires.
type argSpec struct {
	names    []string
	required []string
}

func parseArgSpec(schema json.RawMessage) (argSpec, error) {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return argSpec{}, err
	}
	if s.Type != "object" {
		return argSpec{}, fmt.Errorf("schema type is %q, want a struct (object)", s.Type)
	}
	spec := argSpec{required: s.Required}
	for n := range s.Properties {
		spec.names = append(spec.names, n)
	}
	slices.Sort(spec.names)
	return spec, nil
}

// decode checks raw against the spec and decodes it into dst. Its errors
// name the offending argument, for the model to correct its call.
func (a argSpec) decode(raw []byte, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return errors.New("arguments must be a JSON object")
	}
	for name := range fields {
		if !slices.Contains(a.names, name) {
			return fmt.Errorf("unknown argument %q; this tool takes %s", name, a.describeNames())
		}
	}
	for _, name := range a.required {
		if v, ok := fields[name]; !ok || string(v) == "null" {
			return fmt.Errorf("missing required argument %q", name)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("argument %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
		}
		return err
	}
	return nil
}

func (a argSpec) describeNames() string {
	if len(a.names) == 0 {
		return "no arguments"
	}
	return "only " + strings.Join(a.names, ", ")
}

// jsonKind names the JSON kind that decodes into a Go type, in the words a
// schema uses.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}
