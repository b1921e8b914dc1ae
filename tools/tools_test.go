package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/tools"
)

type point struct {
	X int `json:"x" jsonschema_description:"horizontal position"`
	Y int `json:"y,omitempty"`
}

type sampleInput struct {
	Path  string  `json:"path" jsonschema_description:"file to read"`
	Limit int     `json:"limit,omitempty" jsonschema_description:"bytes at most"`
	Mode  string  `json:"mode,omitempty" jsonschema:"enum=fast,enum=slow"`
	At    point   `json:"at,omitzero"`
	Tags  []point `json:"tags,omitempty"`
}

func TestSchemaIsSelfContainedObject(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(tools.Schema[sampleInput](), &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"$ref", "$defs", "$schema", "$id", "definitions"} {
		if _, ok := s[k]; ok {
			t.Errorf("schema has top-level %q: %v", k, s)
		}
	}
	if s["type"] != "object" {
		t.Errorf("type = %v, want object", s["type"])
	}
	if s["additionalProperties"] != false {
		t.Errorf("additionalProperties = %v, want false", s["additionalProperties"])
	}
	req, _ := s["required"].([]any)
	if len(req) != 1 || req[0] != "path" {
		t.Errorf("required = %v, want [path]", req)
	}
	props := s["properties"].(map[string]any)
	path := props["path"].(map[string]any)
	if path["type"] != "string" || path["description"] != "file to read" {
		t.Errorf("path property = %v", path)
	}
	mode := props["mode"].(map[string]any)
	if !slices.Equal(toStrings(mode["enum"]), []string{"fast", "slow"}) {
		t.Errorf("mode enum = %v", mode["enum"])
	}
	// A nested struct is written inline, with its own required list.
	at := props["at"].(map[string]any)
	if at["type"] != "object" || !slices.Equal(toStrings(at["required"]), []string{"x"}) {
		t.Errorf("nested struct = %v", at)
	}
	if strings.Contains(string(tools.Schema[sampleInput]()), "$ref") {
		t.Error("schema references a definition somewhere")
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

type echoOut struct {
	Path  string `json:"path"`
	Limit int    `json:"limit"`
}

func newTestServer(t *testing.T) *mcpclient.Client {
	t.Helper()
	s := server.NewMCPServer("test", "1")
	tools.Add(s, "echo", "echoes its input", mcp.ToolAnnotation{Title: "Echo", ReadOnlyHint: mcp.ToBoolPtr(true)},
		func(ctx context.Context, in sampleInput) (echoOut, error) {
			return echoOut{Path: in.Path, Limit: in.Limit}, nil
		})
	tools.Add(s, "fail", "always fails", mcp.ToolAnnotation{},
		func(ctx context.Context, in struct{}) (any, error) { return nil, errors.New("disk is on fire") })
	tools.Add(s, "boom", "panics", mcp.ToolAnnotation{},
		func(ctx context.Context, in struct{}) (any, error) { panic("nil map") })
	tools.Add(s, "hello", "says hello", mcp.ToolAnnotation{},
		func(ctx context.Context, in struct{}) (string, error) { return "hello there", nil })
	tools.Add(s, "picture", "returns text and an image", mcp.ToolAnnotation{},
		func(ctx context.Context, in struct{}) (tools.Content, error) {
			return tools.Content{mcp.NewTextContent("a red dot"), mcp.NewImageContent("iVBORw0KGgo=", "image/png")}, nil
		})
	tools.Add(s, "list", "returns a list", mcp.ToolAnnotation{},
		func(ctx context.Context, in struct{}) ([]int, error) { return []int{1, 2}, nil })

	c, err := mcpclient.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "test"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

func call(t *testing.T, c *mcpclient.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("CallTool(%s): protocol error %v (Add must never produce one)", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestAddAdvertisesSchemasAndAnnotations(t *testing.T) {
	c := newTestServer(t)
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var echo *mcp.Tool
	for i := range list.Tools {
		if list.Tools[i].Name == "echo" {
			echo = &list.Tools[i]
		}
	}
	if echo == nil {
		t.Fatalf("echo not listed: %+v", list.Tools)
	}
	if echo.Title != "Echo" || echo.Annotations.ReadOnlyHint == nil || !*echo.Annotations.ReadOnlyHint {
		t.Errorf("title/annotations lost: %+v", echo)
	}
	if !slices.Equal(echo.InputSchema.Required, []string{"path"}) || echo.InputSchema.Properties["path"] == nil {
		t.Errorf("input schema = %+v", echo.InputSchema)
	}
	if echo.OutputSchema.Type != "object" || echo.OutputSchema.Properties["limit"] == nil {
		t.Errorf("output schema = %+v", echo.OutputSchema)
	}
}

func TestAddResults(t *testing.T) {
	c := newTestServer(t)
	tests := []struct {
		name, tool  string
		args        any
		wantError   bool
		wantText    []string // substrings of the text content
		wantStructd bool
	}{
		{"structured", "echo", map[string]any{"path": "a.txt", "limit": 5}, false, []string{`"path":"a.txt"`, `"limit":5`}, true},
		{"handler error", "fail", nil, true, []string{"disk is on fire"}, false},
		{"panic", "boom", nil, true, []string{"boom crashed", "nil map"}, false},
		{"string result is plain text", "hello", map[string]any{}, false, []string{"hello there"}, false},
		{"non-object result is text only", "list", nil, false, []string{"[1,2]"}, false},
		{"missing required", "echo", map[string]any{"limit": 5}, true, []string{`missing required argument "path"`}, false},
		{"null required", "echo", map[string]any{"path": nil}, true, []string{`missing required argument "path"`}, false},
		{"wrong type", "echo", map[string]any{"path": "a", "limit": "ten"}, true, []string{`argument "limit" must be an integer, not string`}, false},
		{"unknown argument", "echo", map[string]any{"file_path": "a"}, true, []string{`unknown argument "file_path"`, "at, limit, mode, path, tags"}, false},
		{"no arguments allowed", "hello", map[string]any{"x": 1}, true, []string{`unknown argument "x"; this tool takes no arguments`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, c, tt.tool, tt.args)
			if res.IsError != tt.wantError {
				t.Fatalf("IsError = %v, want %v; text %q", res.IsError, tt.wantError, text(res))
			}
			for _, want := range tt.wantText {
				if !strings.Contains(text(res), want) {
					t.Errorf("text %q does not contain %q", text(res), want)
				}
			}
			if got := res.StructuredContent != nil; got != tt.wantStructd {
				t.Errorf("structured content present = %v, want %v (%v)", got, tt.wantStructd, res.StructuredContent)
			}
		})
	}
}

func TestAddContentResult(t *testing.T) {
	res := call(t, newTestServer(t), "picture", nil)
	if res.IsError || len(res.Content) != 2 || text(res) != "a red dot" {
		t.Fatalf("content = %+v", res.Content)
	}
	img, ok := mcp.AsImageContent(res.Content[1])
	if !ok || img.MIMEType != "image/png" || img.Data != "iVBORw0KGgo=" {
		t.Fatalf("the image did not come through: %+v", res.Content[1])
	}
}

func TestAddPanicsOnNonStructInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Add with a string input type did not panic")
		}
	}()
	tools.Add(server.NewMCPServer("x", "1"), "bad", "", mcp.ToolAnnotation{},
		func(ctx context.Context, in string) (any, error) { return nil, nil })
}
