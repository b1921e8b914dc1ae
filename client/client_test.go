package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/files"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/tools"
)

// customServer is a hand-written MCP server whose tools misbehave in the
// ways real third-party servers do.
func customServer() *server.MCPServer {
	s := server.NewMCPServer("custom", "1")
	s.AddTool(mcp.NewTool("always_fails", mcp.WithDescription("reports an error")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("the printer is out of paper"), nil
		})
	s.AddTool(mcp.NewTool("silent_failure"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{}}, nil
		})
	s.AddTool(mcp.NewTool("protocol_error"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, context.DeadlineExceeded // a Go error: mcp-go makes it a JSON-RPC error
		})
	s.AddTool(mcp.NewTool("panics"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var m map[string]int
			m["x"] = 1
			return nil, nil
		})
	s.AddTool(mcp.NewTool("screenshot", mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultImage("the screen", "aGVsbG8=", "image/png"), nil
		})
	s.AddTool(mcp.NewTool("plain_text"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("just words"), nil
		})
	s.AddTool(mcp.NewTool("json_text"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(`{"answer": 42}`), nil
		})
	s.AddTool(mcp.NewTool("echo_args"),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(req.GetArguments(), "args"), nil
		})
	s.AddTool(mcp.NewTool("stubborn", mcp.WithDescription("sleeps and ignores its context")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(time.Minute)
			return mcp.NewToolResultText("done"), nil
		})
	return s
}

type fixture struct {
	dir string
	c   *client.Client
}

func newFixture(t *testing.T, opts client.Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	fs, err := files.New(files.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(context.Background(), []client.Server{
		{Namespace: "shell", Description: "runs commands", MCP: shell.New(shell.Options{Dir: dir})},
		{Namespace: "files", Description: "reads and writes files", MCP: fs},
		client.Foreign(client.Server{Namespace: "custom", Description: "misbehaves"}, customServer()),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return &fixture{dir: dir, c: c}
}

func keys(infos []command.ToolInfo) []string {
	var k []string
	for _, t := range infos {
		k = append(k, t.Namespace+"/"+t.Key)
	}
	return k
}

func TestDiscovery(t *testing.T) {
	f := newFixture(t, client.Options{})
	got := keys(f.c.Tools("", ""))
	want := []string{
		"custom/action::always_fails", "custom/action::echo_args", "custom/action::json_text", "custom/action::panics",
		"custom/action::plain_text", "custom/action::protocol_error", "custom/data_collection::screenshot",
		"custom/action::silent_failure", "custom/action::stubborn",
		"files/data_collection::list_dir", "files/data_collection::read_file", "files/data_collection::search_files",
		"files/action::write_file",
		"shell/action::execute_command",
	}
	if !slices.Equal(got, want) {
		t.Errorf("tools:\n got %q\nwant %q", got, want)
	}

	read := f.c.Tools("files", command.DataCollection)[1]
	if read.Name != "read_file" || read.Title != "Read a file" || !strings.Contains(read.Description, f.dir) {
		t.Errorf("read_file info: %+v", read)
	}
	var schema struct {
		Type       string                    `json:"type"`
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(read.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || !slices.Equal(schema.Required, []string{"path"}) || schema.Properties["offset"]["type"] != "integer" {
		t.Errorf("read_file input schema: %s", read.InputSchema)
	}
	if len(read.OutputSchema) == 0 || !strings.Contains(string(read.OutputSchema), `"truncated"`) {
		t.Errorf("read_file output schema: %s", read.OutputSchema)
	}
	if read.Annotations["readOnlyHint"] != true {
		t.Errorf("annotations: %v", read.Annotations)
	}

	ns := f.c.Namespaces()
	wantNS := []client.Namespace{{"shell", "runs commands", 1}, {"files", "reads and writes files", 4}, {"custom", "misbehaves", 9}}
	if !slices.Equal(ns, wantNS) {
		t.Errorf("namespaces: %+v", ns)
	}
}

func TestToolTypeOverride(t *testing.T) {
	fs, err := files.New(files.Options{Roots: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(context.Background(), []client.Server{{Namespace: "files", ToolType: command.Action, MCP: fs}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := len(c.Tools("", command.DataCollection)); n != 0 {
		t.Errorf("%d data_collection tools despite ToolType action", n)
	}
	if got := c.Tools("", command.Action); len(got) != 4 || got[1].Key != "action::read_file" {
		t.Errorf("tools: %q", keys(got))
	}
}

func TestNewRefusesBadServers(t *testing.T) {
	mk := func() *tools.Server { return shell.New(shell.Options{}) }
	tests := []struct {
		name    string
		servers []client.Server
		want    string
	}{
		{"duplicate namespace", []client.Server{{Namespace: "a", MCP: mk()}, {Namespace: "a", MCP: mk()}}, `namespace "a" is used by two servers`},
		{"empty namespace", []client.Server{{MCP: mk()}}, "empty namespace"},
		{"no server", []client.Server{{Namespace: "a"}}, `server "a" has no MCP server`},
		{"bad tool type", []client.Server{{Namespace: "a", ToolType: "observe", MCP: mk()}}, `tool type "observe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(context.Background(), tt.servers, client.Options{})
			if err == nil {
				c.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// exec runs one command and fails the test on a Go-level surprise.
func (f *fixture) exec(t *testing.T, cmd command.Command) command.Result {
	t.Helper()
	if cmd.CallID == "" {
		cmd.CallID = "call-" + cmd.ToolName
	}
	r := f.c.Execute(context.Background(), cmd)
	if r.CallID != cmd.CallID {
		t.Errorf("call id %q, want %q", r.CallID, cmd.CallID)
	}
	return r
}

func TestBuiltins(t *testing.T) {
	f := newFixture(t, client.Options{})
	tools := func(r command.Result) []string {
		t.Helper()
		if !r.OK() {
			t.Fatalf("failed: %s", r.Error)
		}
		var infos []command.ToolInfo
		if err := json.Unmarshal(r.Result, &infos); err != nil {
			t.Fatal(err)
		}
		return keys(infos)
	}
	got := tools(f.exec(t, command.Command{ToolName: command.GetMCPTools, Parameters: map[string]any{"namespace": "files", "tool_type": "data_collection"}}))
	if want := []string{"files/data_collection::list_dir", "files/data_collection::read_file", "files/data_collection::search_files"}; !slices.Equal(got, want) {
		t.Errorf("get_mcp_tools files/data_collection = %q", got)
	}
	if got := tools(f.exec(t, command.Command{ToolName: command.GetMCPTools})); len(got) != 14 {
		t.Errorf("get_mcp_tools without filters: %d tools", len(got))
	}
	got = tools(f.exec(t, command.Command{ToolName: command.ListTools, Parameters: map[string]any{"tool_type": "data_collection"}}))
	if want := []string{"custom/data_collection::screenshot", "files/data_collection::list_dir", "files/data_collection::read_file", "files/data_collection::search_files"}; !slices.Equal(got, want) {
		t.Errorf("list_tools data_collection = %q", got)
	}

	for _, tt := range []struct {
		cmd  command.Command
		want string
	}{
		{command.Command{ToolName: command.GetMCPTools, Parameters: map[string]any{"namespace": "paint"}}, `unknown namespace "paint"; known namespaces: shell, files, custom`},
		{command.Command{ToolName: command.ListTools, Parameters: map[string]any{"tool_type": "observe"}}, `tool_type "observe" must be`},
		{command.Command{ToolName: command.GetMCPTools, Parameters: map[string]any{"namespace": 3}}, `"namespace" must be a string`},
	} {
		if r := f.exec(t, tt.cmd); r.Status != command.Failure || !strings.Contains(r.Error, tt.want) {
			t.Errorf("%v: %+v, want failure %q", tt.cmd, r, tt.want)
		}
	}

	r := f.exec(t, command.Command{ToolName: command.GetDeviceInfo})
	var d command.DeviceInfo
	if err := json.Unmarshal(r.Result, &d); err != nil || !r.OK() {
		t.Fatalf("%+v %v", r, err)
	}
	host, _ := os.Hostname()
	if d.CPUCount <= 0 || d.Hostname != host || d.Platform == "" || d.MemoryTotalGB <= 0 || !slices.Contains(d.Features, "cli") {
		t.Errorf("device info: %+v", d)
	}
}

func TestDeviceOverride(t *testing.T) {
	want := command.DeviceInfo{DeviceID: "dev-1", Platform: "windows", Hostname: "box", CPUCount: 2}
	f := newFixture(t, client.Options{Device: want})
	if got := f.c.Device(); got.DeviceID != "dev-1" || got.Platform != "windows" || got.Hostname != "box" {
		t.Errorf("Device() = %+v", got)
	}
}

func TestDetectDevice(t *testing.T) {
	d := client.DetectDevice()
	if d.CPUCount <= 0 || d.Hostname == "" || d.Arch == "" || d.PlatformType != "computer" || d.SchemaVersion != "1.0" {
		t.Errorf("%+v", d)
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil && (d.MemoryTotalGB <= 0 || !strings.Contains(d.OSVersion, "kernel ")) {
		t.Errorf("memory %v, os %q: /proc was not read", d.MemoryTotalGB, d.OSVersion)
	}
	// Two decimals at most.
	if s := strings.TrimRight(strings.TrimRight(json.Number(jsonOf(d.MemoryTotalGB)).String(), "0"), "."); strings.Contains(s, ".") && len(s)-strings.Index(s, ".")-1 > 2 {
		t.Errorf("memory_total_gb %v has more than two decimals", d.MemoryTotalGB)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestExecuteTools(t *testing.T) {
	f := newFixture(t, client.Options{})

	r := f.exec(t, command.Command{ToolName: "execute_command", Parameters: map[string]any{"command": "echo hi; echo err >&2; exit 4"}})
	var out struct {
		Stdout, Stderr string
		ExitCode       int `json:"exit_code"`
	}
	if err := json.Unmarshal(r.Result, &out); err != nil || !r.OK() || r.Namespace != "shell" {
		t.Fatalf("%+v %v", r, err)
	}
	if out.Stdout != "hi\n" || out.Stderr != "err\n" || out.ExitCode != 4 {
		t.Errorf("execute_command: %+v", out)
	}

	r = f.exec(t, command.Command{ToolName: "write_file", Namespace: "files", Parameters: map[string]any{"path": "notes/a.txt", "content": "hello", "create_dirs": true}})
	if !r.OK() || r.Namespace != "files" {
		t.Fatalf("write_file: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "notes", "a.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("file on disk: %q %v", b, err)
	}
	r = f.exec(t, command.Command{ToolName: "read_file", Parameters: map[string]any{"path": "notes/a.txt"}})
	var read struct{ Content string }
	if err := json.Unmarshal(r.Result, &read); err != nil || read.Content != "hello" {
		t.Errorf("read_file: %+v %v", r, err)
	}
}

func TestExecuteOutcomes(t *testing.T) {
	f := newFixture(t, client.Options{})
	tests := []struct {
		name       string
		cmd        command.Command
		wantStatus command.ResultStatus
		wantError  string // substring
		wantResult string // exact JSON, when set
		wantNS     string
	}{
		{"empty tool name", command.Command{Namespace: "files"}, command.Success, "", `"No action taken."`, "files"},
		{"unknown tool suggests", command.Command{ToolName: "red_file"}, command.Failure, `unknown tool "red_file"; did you mean read_file (namespace files)?`, "", ""},
		{"unknown tool in namespace", command.Command{ToolName: "execute", Namespace: "shell"}, command.Failure, `unknown tool "execute" in namespace "shell"; did you mean execute_command (namespace shell)?`, "", "shell"},
		{"nothing close", command.Command{ToolName: "zzzzzzzzzz"}, command.Failure, "known namespaces: shell, files, custom; get_mcp_tools lists their tools", "", ""},
		{"unknown namespace", command.Command{ToolName: "read_file", Namespace: "paint"}, command.Failure, `unknown namespace "paint"`, "", "paint"},
		{"missing required argument", command.Command{ToolName: "read_file"}, command.Failure, `missing required argument "path"`, "", "files"},
		{"wrong argument type", command.Command{ToolName: "read_file", Parameters: map[string]any{"path": 5}}, command.Failure, `invalid arguments for files.read_file: argument "path": got number, want string`, "", "files"},
		{"tool error result", command.Command{ToolName: "always_fails"}, command.Failure, "the printer is out of paper", "", "custom"},
		{"error without text", command.Command{ToolName: "silent_failure"}, command.Failure, "silent_failure reported an error without a message", "", "custom"},
		{"protocol error", command.Command{ToolName: "protocol_error"}, command.Failure, "calling custom.protocol_error failed:", "", "custom"},
		{"panic", command.Command{ToolName: "panics"}, command.Failure, "tool panicked: assignment to entry in nil map", "", "custom"},
		{"plain text becomes a JSON string", command.Command{ToolName: "plain_text"}, command.Success, "", `"just words"`, "custom"},
		{"JSON text stays JSON", command.Command{ToolName: "json_text"}, command.Success, "", `{"answer": 42}`, "custom"},
		{"structured content", command.Command{ToolName: "echo_args", Parameters: map[string]any{"a": 1}}, command.Success, "", `{"a":1}`, "custom"},
		{"image entries", command.Command{ToolName: "screenshot"}, command.Success, "",
			`[{"text":"the screen","type":"text"},{"data":"aGVsbG8=","mime_type":"image/png","type":"image"}]`, "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.exec(t, tt.cmd)
			if r.Status != tt.wantStatus || !strings.Contains(r.Error, tt.wantError) || r.Namespace != tt.wantNS {
				t.Errorf("got %s %q ns %q, want %s %q ns %q", r.Status, r.Error, r.Namespace, tt.wantStatus, tt.wantError, tt.wantNS)
			}
			if tt.wantResult != "" && string(r.Result) != tt.wantResult {
				t.Errorf("result %s, want %s", r.Result, tt.wantResult)
			}
		})
	}
}

func TestAmbiguousTool(t *testing.T) {
	mk := func(name string) *tools.Server {
		s := &tools.Server{Name: name}
		s.Add(tools.New("status", "reports "+name, tools.Annotations{}, func(ctx context.Context, in struct{}) (string, error) { return name, nil }))
		return s
	}
	c, err := client.New(context.Background(), []client.Server{{Namespace: "git", MCP: mk("git")}, {Namespace: "svn", MCP: mk("svn")}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.Execute(context.Background(), command.Command{ToolName: "status", CallID: "1"})
	if r.OK() || !strings.Contains(r.Error, "offered by several namespaces (git, svn)") {
		t.Errorf("ambiguous: %+v", r)
	}
	r = c.Execute(context.Background(), command.Command{ToolName: "status", Namespace: "svn", CallID: "2"})
	if !r.OK() || string(r.Result) != `"svn"` || r.Namespace != "svn" {
		t.Errorf("with namespace: %+v", r)
	}
}

func TestCallTimeout(t *testing.T) {
	f := newFixture(t, client.Options{CallTimeout: 100 * time.Millisecond})
	start := time.Now()
	r := f.exec(t, command.Command{ToolName: "stubborn"})
	if elapsed := time.Since(start); elapsed > 30*time.Second { // the tool sleeps a minute
		t.Errorf("took %s with a 100ms call timeout and a tool that ignores its context", elapsed)
	}
	if r.Status != command.Failure || r.Error != "stubborn timed out after 100ms" {
		t.Errorf("%+v", r)
	}

	// A cancelled caller is told so, not that the tool timed out.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = f.c.Execute(ctx, command.Command{ToolName: "stubborn", CallID: "x"})
	if r.Status != command.Failure || !strings.Contains(r.Error, "stubborn was cancelled") {
		t.Errorf("cancelled: %+v", r)
	}
}

func TestConcurrentExecute(t *testing.T) {
	f := newFixture(t, client.Options{})
	const n = 16
	errs := make(chan string, n)
	for i := range n {
		go func() {
			word := strings.Repeat("w", i+1)
			r := f.c.Execute(context.Background(), command.Command{ToolName: "execute_command", CallID: word,
				Parameters: map[string]any{"command": "echo " + word}})
			var out struct{ Stdout string }
			if err := json.Unmarshal(r.Result, &out); err != nil || out.Stdout != word+"\n" || r.CallID != word {
				errs <- fmt.Sprintf("call %d: %+v", i, r)
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
}
