package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/tools"
)

// connect starts a real shell server and an in-process MCP client to it.
func connect(t *testing.T, opts Options) *mcpclient.Client {
	t.Helper()
	return inProcessClient(t, New(opts))
}

// inProcessClient is an MCP client of srv in this process, started and
// initialized; it is closed when the test ends.
func inProcessClient(t *testing.T, srv *tools.Server) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewInProcessClient(mcpserve.New(srv))
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

// run calls execute_command and returns the decoded output (when the call
// succeeded) and the text content.
func run(t *testing.T, c *mcpclient.Client, args map[string]any) (out ExecuteOutput, text string, isError bool) {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_command", Arguments: args}})
	if err != nil {
		t.Fatalf("protocol error: %v", err)
	}
	for _, ct := range res.Content {
		if tc, ok := mcp.AsTextContent(ct); ok {
			text += tc.Text
		}
	}
	if !res.IsError {
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("result text is not ExecuteOutput JSON: %v: %q", err, text)
		}
	}
	return out, text, res.IsError
}

func TestExecuteCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := connect(t, Options{Dir: dir, Env: []string{"FROM_OPTIONS=opt"}})
	tests := []struct {
		name       string
		args       map[string]any
		wantStdout string
		wantStderr string
		wantExit   int
	}{
		{"echo", map[string]any{"command": "echo hello"}, "hello\n", "", 0},
		{"exit code is data", map[string]any{"command": "echo partial; exit 3"}, "partial\n", "", 3},
		{"stderr", map[string]any{"command": "echo oops >&2"}, "", "oops\n", 0},
		{"default dir", map[string]any{"command": "pwd"}, dir + "\n", "", 0},
		{"relative cwd", map[string]any{"command": "pwd", "cwd": "sub"}, filepath.Join(dir, "sub") + "\n", "", 0},
		{"absolute cwd", map[string]any{"command": "pwd", "cwd": filepath.Join(dir, "sub")}, filepath.Join(dir, "sub") + "\n", "", 0},
		{"env as object", map[string]any{"command": `echo "$A-$B"`, "env": map[string]any{"A": "1", "B": "two"}}, "1-two\n", "", 0},
		{"env as list", map[string]any{"command": `echo "$A"`, "env": []any{"A=x=y"}}, "x=y\n", "", 0},
		{"options env", map[string]any{"command": `echo "$FROM_OPTIONS"`}, "opt\n", "", 0},
		{"stdin is empty", map[string]any{"command": "cat"}, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, text, isErr := run(t, c, tt.args)
			if isErr {
				t.Fatalf("error result: %s", text)
			}
			if out.Stdout != tt.wantStdout || out.Stderr != tt.wantStderr || out.ExitCode != tt.wantExit {
				t.Errorf("got stdout %q stderr %q exit %d; want %q %q %d", out.Stdout, out.Stderr, out.ExitCode, tt.wantStdout, tt.wantStderr, tt.wantExit)
			}
			if out.Truncated {
				t.Error("truncated set for small output")
			}
		})
	}
}

func TestExecuteCommandRefusals(t *testing.T) {
	c := connect(t, Options{Dir: t.TempDir(), MaxTimeout: time.Minute})
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing cwd", map[string]any{"command": "true", "cwd": "nope"}, "is not an existing directory"},
		{"empty command", map[string]any{"command": "  "}, "command is empty"},
		{"missing command", map[string]any{}, `missing required argument "command"`},
		{"timeout over limit", map[string]any{"command": "true", "timeout": 120}, "over the limit of 60s"},
		{"a timeout too big for a Duration", map[string]any{"command": "true", "timeout": 1e308}, "timeout 1e+308s is over the limit of 60s"},
		{"bad env entry", map[string]any{"command": "true", "env": []any{"NOEQUALS"}}, `"NOEQUALS" is not KEY=VALUE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, text, isErr := run(t, c, tt.args)
			if !isErr || !strings.Contains(text, tt.want) {
				t.Errorf("got isError=%v %q, want an error containing %q", isErr, text, tt.want)
			}
		})
	}
}

func TestBigOutputIsTruncatedAndMarked(t *testing.T) {
	c := connect(t, Options{Dir: t.TempDir(), MaxOutput: 1000})
	out, text, isErr := run(t, c, map[string]any{
		"command": "printf 'BEGIN'; head -c 5000 /dev/zero | tr '\\0' a; printf 'END'; printf 'e%.0s' $(seq 10) >&2",
	})
	if isErr {
		t.Fatal(text)
	}
	if !out.Truncated {
		t.Error("truncated = false for 5006 bytes with a 1000-byte cap")
	}
	if !strings.HasPrefix(out.Stdout, "BEGIN") || !strings.HasSuffix(out.Stdout, "END") {
		t.Errorf("head or tail lost: %q...%q", out.Stdout[:10], out.Stdout[len(out.Stdout)-10:])
	}
	const marker = "\n…[truncated 4008 bytes]…\n" // 5+5000+3 bytes written, 1000 kept
	if !strings.Contains(out.Stdout, marker) {
		t.Errorf("no truncation marker with the dropped count in %q", out.Stdout)
	}
	if n := strings.Count(strings.Replace(out.Stdout, marker, "", 1), "a"); n != 1000-len("BEGIN")-len("END") {
		t.Errorf("kept %d a's, want %d", n, 1000-8)
	}
	if out.Stderr != "eeeeeeeeee" {
		t.Errorf("stderr = %q; a small stream must be untouched", out.Stderr)
	}
}

func TestCapped(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"under cap", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly cap", 4, []string{"ab", "cd"}, "abcd"},
		{"small writes over cap", 4, []string{"a", "b", "c", "d", "e", "f"}, "ab\n…[truncated 2 bytes]…\nef"},
		{"one big write", 4, []string{"abcdefgh"}, "ab\n…[truncated 4 bytes]…\ngh"},
		{"big then small", 4, []string{"abcdefgh", "ij"}, "ab\n…[truncated 6 bytes]…\nij"},
		{"odd cap", 5, []string{"abcdefgh"}, "abc\n…[truncated 3 bytes]…\ngh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapped(tt.max)
			for _, w := range tt.writes {
				if n, _ := c.Write([]byte(w)); n != len(w) {
					t.Fatalf("Write returned %d, want %d", n, len(w))
				}
			}
			if got := c.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvSchemaOffersBothForms(t *testing.T) {
	c := connect(t, Options{})
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != "execute_command" {
		t.Fatalf("tools = %+v", list.Tools)
	}
	tool := list.Tools[0]
	env, _ := json.Marshal(tool.InputSchema.Properties["env"])
	if !strings.Contains(string(env), `"anyOf"`) || !strings.Contains(string(env), `"array"`) || !strings.Contains(string(env), `"description"`) {
		t.Errorf("env schema = %s", env)
	}
	if a := tool.Annotations; a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Errorf("annotations = %+v", a)
	}
}
