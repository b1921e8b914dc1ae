package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

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

// sampleTools are tools of every result kind, as a server holds them.
func sampleTools() *tools.Server {
	s := &tools.Server{Name: "test"}
	s.Add(
		tools.New("echo", "echoes its input", tools.Annotations{Title: "Echo", Risk: tools.RiskRead},
			func(ctx context.Context, in sampleInput) (echoOut, error) {
				return echoOut{Path: in.Path, Limit: in.Limit}, nil
			}),
		tools.New("fail", "always fails", tools.Annotations{},
			func(ctx context.Context, in struct{}) (any, error) { return nil, errors.New("disk is on fire") }),
		tools.New("boom", "panics", tools.Annotations{},
			func(ctx context.Context, in struct{}) (any, error) { panic("nil map") }),
		tools.New("hello", "says hello", tools.Annotations{},
			func(ctx context.Context, in struct{}) (string, error) { return "hello there", nil }),
		tools.New("picture", "returns text and an image", tools.Annotations{},
			func(ctx context.Context, in struct{}) (tools.Content, error) {
				return tools.Content{tools.Text("a red dot"), tools.Image([]byte("\x89PNG"), "image/png")}, nil
			}),
		tools.New("pdf", "returns a part no MCP content can carry", tools.Annotations{},
			func(ctx context.Context, in struct{}) (tools.Content, error) {
				return tools.Content{{Data: []byte("%PDF"), MIMEType: "application/pdf"}}, nil
			}),
		tools.New("list", "returns a list", tools.Annotations{},
			func(ctx context.Context, in struct{}) ([]int, error) { return []int{1, 2}, nil }),
	)
	return s
}

func TestNewDerivesSchemas(t *testing.T) {
	echo := sampleTools().Tool("echo")
	if string(echo.InputSchema()) != string(tools.Schema[sampleInput]()) {
		t.Errorf("input schema = %s", echo.InputSchema())
	}
	if string(echo.OutputSchema()) != string(tools.Schema[echoOut]()) {
		t.Errorf("output schema = %s", echo.OutputSchema())
	}
	if out := sampleTools().Tool("list").OutputSchema(); out != nil {
		t.Errorf("a list result has an output schema: %s", out)
	}
}

func TestCallResults(t *testing.T) {
	s := sampleTools()
	tests := []struct {
		name, tool  string
		args        string
		wantError   bool
		wantText    []string // substrings of the text
		wantStructd bool
	}{
		{"structured", "echo", `{"path": "a.txt", "limit": 5}`, false, []string{`"path":"a.txt"`, `"limit":5`}, true},
		{"handler error", "fail", ``, true, []string{"disk is on fire"}, false},
		{"panic", "boom", `null`, true, []string{"boom crashed", "nil map"}, false},
		{"string result is plain text", "hello", `{}`, false, []string{"hello there"}, false},
		{"non-object result is text only", "list", ``, false, []string{"[1,2]"}, false},
		{"not an object", "echo", `[1]`, true, []string{"arguments must be a JSON object"}, false},
		{"missing required", "echo", `{"limit": 5}`, true, []string{`missing required argument "path"`}, false},
		{"null required", "echo", `{"path": null}`, true, []string{`missing required argument "path"`}, false},
		{"wrong type", "echo", `{"path": "a", "limit": "ten"}`, true, []string{`invalid arguments for echo: argument "limit" must be an integer, not string`}, false},
		{"unknown argument", "echo", `{"file_path": "a"}`, true, []string{`unknown argument "file_path"`, "at, limit, mode, path, tags"}, false},
		{"no arguments allowed", "hello", `{"x": 1}`, true, []string{`unknown argument "x"; this tool takes no arguments`}, false},
		{"unknown part type", "pdf", ``, true, []string{`tool pdf returned a part of type "application/pdf"`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.Tool(tt.tool).Call(context.Background(), json.RawMessage(tt.args), nil)
			if res.IsError != tt.wantError {
				t.Fatalf("IsError = %v, want %v; text %q", res.IsError, tt.wantError, res.Text())
			}
			for _, want := range tt.wantText {
				if !strings.Contains(res.Text(), want) {
					t.Errorf("text %q does not contain %q", res.Text(), want)
				}
			}
			if got := res.Structured != nil; got != tt.wantStructd {
				t.Errorf("structured content present = %v, want %v (%s)", got, tt.wantStructd, res.Structured)
			}
		})
	}
}

func TestCallContentResult(t *testing.T) {
	res := sampleTools().Tool("picture").Call(context.Background(), nil, nil)
	if res.IsError || len(res.Content) != 2 || res.Text() != "a red dot" {
		t.Fatalf("content = %+v", res.Content)
	}
	if img := res.Content[1]; img.MIMEType != "image/png" || string(img.Data) != "\x89PNG" {
		t.Fatalf("the image did not come through: %+v", img)
	}
}

func TestCallWithoutHandler(t *testing.T) {
	res := (&tools.Tool{Name: "bare"}).Call(context.Background(), nil, nil)
	if !res.IsError || !strings.Contains(res.Text(), "tool bare has no handler") {
		t.Errorf("result = %+v", res)
	}
}

func TestProgressGoesToTheCallerUntilTheCallEnds(t *testing.T) {
	late := make(chan func(), 1)
	tool := tools.New("count", "counts to three", tools.Annotations{Streams: []string{tools.StreamProgress}},
		func(ctx context.Context, in struct{}) (string, error) {
			for i := 1; i <= 3; i++ {
				tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
			}
			late <- func() { tools.ReportProgress(ctx, tools.Progress{Progress: 4, Message: "too late"}) }
			return "done", nil
		})
	var got []tools.Progress
	res := tool.Call(context.Background(), nil, func(p tools.Progress) { got = append(got, p) })
	if res.IsError || res.Text() != "done" {
		t.Fatalf("result = %+v", res)
	}
	(<-late)() // a goroutine of the handler reports after the call ended
	want := []tools.Progress{
		{Progress: 1, Total: 3, Message: "step 1"}, {Progress: 2, Total: 3, Message: "step 2"}, {Progress: 3, Total: 3, Message: "step 3"}}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %+v, want %+v", got, want)
	}
	// Without a caller who listens, reporting does nothing (and does not
	// crash).
	if res := tool.Call(context.Background(), nil, nil); res.Text() != "done" {
		t.Errorf("without progress: %+v", res)
	}
	(<-late)()
}

func TestNewPanicsOnNonStructInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with a string input type did not panic")
		}
	}()
	tools.New("bad", "", tools.Annotations{}, func(ctx context.Context, in string) (any, error) { return nil, nil })
}

func TestServerAddRefusesDuplicatesAndNamelessTools(t *testing.T) {
	noop := func(ctx context.Context, in struct{}) (string, error) { return "", nil }
	for _, tt := range []struct {
		name string
		add  []*tools.Tool
		want string
	}{
		{"duplicate", []*tools.Tool{tools.New("a", "", tools.Annotations{}, noop), tools.New("a", "", tools.Annotations{}, noop)}, `two tools named "a"`},
		{"nameless", []*tools.Tool{tools.New("", "", tools.Annotations{}, noop)}, "a tool has no name"},
		{"nil", []*tools.Tool{nil}, "Add(nil)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), tt.want) {
					t.Errorf("panic = %v, want one saying %q", p, tt.want)
				}
			}()
			(&tools.Server{Name: "s"}).Add(tt.add...)
		})
	}
	s := sampleTools()
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"echo", "fail", "boom", "hello", "picture", "pdf", "list"}) {
		t.Errorf("tools in order of adding: %v", names)
	}
	if s.Tool("nope") != nil {
		t.Error("Tool of an unknown name is not nil")
	}
}

func TestRiskValid(t *testing.T) {
	for _, r := range []tools.Risk{tools.RiskRead, tools.RiskWrite, tools.RiskDestructive, tools.RiskExternal} {
		if !r.Valid() {
			t.Errorf("%q is not valid", r)
		}
	}
	if tools.Risk("dangerous").Valid() || tools.Risk("").Valid() {
		t.Error("an unknown class is valid")
	}
}
