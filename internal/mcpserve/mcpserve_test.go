package mcpserve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/tools"
)

type readIn struct {
	Path string `json:"path" jsonschema_description:"file to read"`
}

type readOut struct {
	Text string `json:"text"`
}

type countIn struct {
	To int `json:"to"`
}

// sample is a server with a tool of each kind the conversion must carry.
func sample() *tools.Server {
	s := &tools.Server{Name: "sample", Version: "2.0.0", Instructions: "Use read first."}
	s.Add(
		tools.New("read", "reads a file", tools.Annotations{Title: "Read", Risk: tools.RiskRead, Idempotent: true},
			func(ctx context.Context, in readIn) (readOut, error) {
				return readOut{Text: "contents of " + in.Path}, nil
			}),
		tools.New("post", "posts a message", tools.Annotations{Risk: tools.RiskWrite, OpenWorld: true, Streams: []string{"output"}},
			func(ctx context.Context, in struct{}) (string, error) { return "posted", nil }),
		tools.New("undeclared", "says nothing about itself", tools.Annotations{},
			func(ctx context.Context, in struct{}) (any, error) { return nil, errors.New("disk is on fire") }),
		tools.New("boom", "panics", tools.Annotations{},
			func(ctx context.Context, in struct{}) (any, error) { panic("nil map") }),
		tools.New("picture", "returns text, an image and a sound", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in struct{}) (tools.Content, error) {
				return tools.Content{tools.Text("a red dot"), tools.Image([]byte("png!"), "image/png"), {Data: []byte("wav!"), MIMEType: "audio/wav"}}, nil
			}),
		tools.New("count", "counts, reporting each step", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in countIn) (string, error) {
				for i := 1; i <= in.To; i++ {
					tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Total: float64(in.To), Message: fmt.Sprint("step ", i)})
				}
				return fmt.Sprint("counted to ", in.To), nil
			}),
	)
	return s
}

// connect starts c and initialises it; notes receives the server's
// notifications.
func connect(t *testing.T, c *mcpclient.Client) <-chan mcp.JSONRPCNotification {
	t.Helper()
	notes := make(chan mcp.JSONRPCNotification, 100)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "test"}}})
	if err != nil {
		t.Fatal(err)
	}
	if init.ServerInfo.Name != "sample" || init.ServerInfo.Version != "2.0.0" || init.Instructions != "Use read first." {
		t.Errorf("server info %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	return notes
}

func inProcess(t *testing.T) (*mcpclient.Client, <-chan mcp.JSONRPCNotification) {
	c, err := mcpclient.NewInProcessClient(mcpserve.New(sample()))
	if err != nil {
		t.Fatal(err)
	}
	return c, connect(t, c)
}

func call(t *testing.T, c *mcpclient.Client, name string, args any, token mcp.ProgressToken) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}}
	if token != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("CallTool(%s): protocol error %v (a tool must never produce one)", name, err)
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

func TestToolsAreAdvertisedWithSchemasHintsAndMeta(t *testing.T) {
	c, _ := inProcess(t)
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
	}
	read := byName["read"]
	if read.Title != "Read" || read.Annotations.Title != "Read" || read.Description != "reads a file" {
		t.Errorf("read: %+v", read)
	}
	if !slices.Equal(read.InputSchema.Required, []string{"path"}) || read.InputSchema.Properties["path"] == nil {
		t.Errorf("input schema = %+v", read.InputSchema)
	}
	if read.OutputSchema.Type != "object" || read.OutputSchema.Properties["text"] == nil {
		t.Errorf("output schema = %+v", read.OutputSchema)
	}
	type hints struct{ readOnly, destructive, idempotent, openWorld *bool }
	yes, no := true, false
	for name, want := range map[string]hints{
		"read": {&yes, &no, &yes, &no},
		"post": {&no, &no, &no, &yes},
		// No class declared: MCP's defaults (destructive, open world) hold.
		"undeclared": {nil, nil, nil, nil},
	} {
		a := byName[name].Annotations
		got := hints{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint}
		if show(got.readOnly) != show(want.readOnly) || show(got.destructive) != show(want.destructive) ||
			show(got.idempotent) != show(want.idempotent) || show(got.openWorld) != show(want.openWorld) {
			t.Errorf("%s: hints readOnly %s destructive %s idempotent %s openWorld %s", name,
				show(got.readOnly), show(got.destructive), show(got.idempotent), show(got.openWorld))
		}
	}
	// What the hints cannot say goes in _meta: post is write (its hints
	// alone would read as external) and streams its output.
	post := byName["post"]
	if post.Meta == nil || post.Meta.AdditionalFields[tools.MetaRisk] != "write" ||
		fmt.Sprint(post.Meta.AdditionalFields[tools.MetaStreams]) != "[output]" {
		t.Errorf("post meta: %+v", post.Meta)
	}
	if m := byName["undeclared"].Meta; m != nil {
		t.Errorf("undeclared has meta %+v", m)
	}
}

func show(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

func TestResultsAreMCPResults(t *testing.T) {
	c, _ := inProcess(t)
	res := call(t, c, "read", map[string]any{"path": "a.txt"}, nil)
	if res.IsError || text(res) != `{"text":"contents of a.txt"}` || res.StructuredContent == nil {
		t.Errorf("read: %+v", res)
	}
	for _, tt := range []struct{ tool, want string }{
		{"undeclared", "disk is on fire"},
		{"boom", "boom crashed: nil map"},
	} {
		if res := call(t, c, tt.tool, nil, nil); !res.IsError || !strings.Contains(text(res), tt.want) {
			t.Errorf("%s: %+v", tt.tool, res)
		}
	}
	if res := call(t, c, "read", map[string]any{"file": "a.txt"}, nil); !res.IsError || !strings.Contains(text(res), `unknown argument "file"`) {
		t.Errorf("bad arguments: %+v", res)
	}
	res = call(t, c, "picture", nil, nil)
	if len(res.Content) != 3 || text(res) != "a red dot" {
		t.Fatalf("picture: %+v", res.Content)
	}
	img, ok := mcp.AsImageContent(res.Content[1])
	if !ok || img.MIMEType != "image/png" || img.Data != "cG5nIQ==" { // base64 of png!
		t.Errorf("image: %+v", res.Content[1])
	}
	audio, ok := mcp.AsAudioContent(res.Content[2])
	if !ok || audio.MIMEType != "audio/wav" || audio.Data != "d2F2IQ==" {
		t.Errorf("audio: %+v", res.Content[2])
	}
}

// progressOf waits for n progress notifications.
func progressOf(t *testing.T, notes <-chan mcp.JSONRPCNotification, n int) []string {
	t.Helper()
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case note := <-notes:
			if note.Method == "notifications/progress" {
				f := note.Params.AdditionalFields
				got = append(got, fmt.Sprintf("%v %v/%v %v", f["progressToken"], f["progress"], f["total"], f["message"]))
			}
		case <-deadline:
			t.Fatalf("%d progress notifications arrived, want %d: %q", len(got), n, got)
		}
	}
	return got
}

// checkProgress calls count without a token, then with one: the caller
// gets exactly the second call's reports, with its token.
func checkProgress(t *testing.T, c *mcpclient.Client, notes <-chan mcp.JSONRPCNotification) {
	t.Helper()
	if res := call(t, c, "count", map[string]any{"to": 2}, nil); text(res) != "counted to 2" {
		t.Fatalf("count: %+v", res)
	}
	if res := call(t, c, "count", map[string]any{"to": 3}, "tok-7"); text(res) != "counted to 3" {
		t.Fatalf("count: %+v", res)
	}
	// Notifications keep their order, so a report of the first call would
	// come first.
	want := []string{"tok-7 1/3 step 1", "tok-7 2/3 step 2", "tok-7 3/3 step 3"}
	if got := progressOf(t, notes, 3); !slices.Equal(got, want) {
		t.Errorf("progress:\n got %q\nwant %q", got, want)
	}
}

func TestProgressReachesTheClientInProcess(t *testing.T) {
	c, notes := inProcess(t)
	checkProgress(t, c, notes)
}

func TestStdio(t *testing.T) {
	// A real stdio session over pipes: JSON-RPC lines both ways.
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- mcpserve.Stdio(ctx, sample(), serverIn, serverOut) }()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Stdio: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Stdio did not return after its input closed")
		}
	})
	c := mcpclient.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader(""))))
	notes := connect(t, c)
	if res := call(t, c, "read", map[string]any{"path": "b"}, nil); text(res) != `{"text":"contents of b"}` {
		t.Errorf("read over stdio: %+v", res)
	}
	checkProgress(t, c, notes)
}
