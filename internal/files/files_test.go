package files

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/internal/mcpserve"
)

type fixture struct {
	root, other, outside string
	c                    *mcpclient.Client
}

// newFixture builds a root with some files, a second allowed root, and a
// directory outside both, then connects an in-process client to a real
// files server.
func newFixture(t *testing.T, maxRead int) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{
		root:    filepath.Join(base, "root"),
		other:   filepath.Join(base, "other"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{f.root, f.other, f.outside, filepath.Join(f.root, "sub", "deep"), filepath.Join(f.root, ".git")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	write(t, filepath.Join(f.root, "a.txt"), "alpha\nbeta\ngamma\n")
	write(t, filepath.Join(f.root, "sub", "b.go"), "package sub\n\nfunc Beta() {}\n")
	write(t, filepath.Join(f.root, "sub", "deep", "c.go"), "package deep // beta\n")
	write(t, filepath.Join(f.root, ".git", "config.go"), "beta\n")
	write(t, filepath.Join(f.other, "o.txt"), "other root\n")
	write(t, filepath.Join(f.outside, "secret.txt"), "top secret\n")
	// Links: one leaving the roots, one staying inside (relative), one
	// absolute but inside, one into the second root.
	must(t, os.Symlink(f.outside, filepath.Join(f.root, "escape")))
	must(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.root, "secret-link.txt")))
	must(t, os.Symlink("sub/b.go", filepath.Join(f.root, "inner-link.go")))
	must(t, os.Symlink(filepath.Join(f.root, "a.txt"), filepath.Join(f.root, "abs-inner-link.txt")))
	must(t, os.Symlink(f.other, filepath.Join(f.root, "to-other")))

	s, err := New(Options{Roots: []string{f.root, f.other}, MaxRead: maxRead})
	must(t, err)
	c, err := mcpclient.NewInProcessClient(mcpserve.New(s))
	must(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	must(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "test"}}})
	must(t, err)
	f.c = c
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(content), 0o644))
}

// call runs a tool and decodes its JSON result into out unless it failed;
// it returns the error text of a failed call, or "".
func (f *fixture) call(t *testing.T, tool string, args map[string]any, out any) string {
	t.Helper()
	res, err := f.c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := mcp.AsTextContent(ct); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		if text == "" {
			t.Fatalf("%s: error result without text", tool)
		}
		return text
	}
	if out != nil {
		must(t, json.Unmarshal([]byte(text), out))
	}
	return ""
}

func TestReadFile(t *testing.T) {
	f := newFixture(t, 0)
	tests := []struct {
		name, path string
		offset     int
		limit      int
		wantPath   string
		want       string
		truncated  bool
	}{
		{"relative", "a.txt", 0, 0, filepath.Join(f.root, "a.txt"), "alpha\nbeta\ngamma\n", false},
		{"absolute", filepath.Join(f.root, "sub", "b.go"), 0, 0, filepath.Join(f.root, "sub", "b.go"), "package sub\n\nfunc Beta() {}\n", false},
		{"second root", filepath.Join(f.other, "o.txt"), 0, 0, filepath.Join(f.other, "o.txt"), "other root\n", false},
		{"offset and limit", "a.txt", 6, 4, filepath.Join(f.root, "a.txt"), "beta", true},
		{"offset past end", "a.txt", 100, 0, filepath.Join(f.root, "a.txt"), "", false},
		{"relative symlink inside root", "inner-link.go", 0, 0, filepath.Join(f.root, "inner-link.go"), "package sub\n\nfunc Beta() {}\n", false},
		{"absolute symlink inside root", "abs-inner-link.txt", 0, 5, filepath.Join(f.root, "abs-inner-link.txt"), "alpha", true},
		{"symlink into the other root", "to-other/o.txt", 0, 0, filepath.Join(f.root, "to-other", "o.txt"), "other root\n", false},
		{"dot-dot that stays inside", "sub/../a.txt", 0, 5, filepath.Join(f.root, "a.txt"), "alpha", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out ReadOutput
			args := map[string]any{"path": tt.path}
			if tt.offset > 0 {
				args["offset"] = tt.offset
			}
			if tt.limit > 0 {
				args["limit"] = tt.limit
			}
			if msg := f.call(t, "read_file", args, &out); msg != "" {
				t.Fatal(msg)
			}
			if out.Path != tt.wantPath || out.Content != tt.want || out.Truncated != tt.truncated || out.Encoding != "" {
				t.Errorf("got %+v, want path %s content %q truncated %v", out, tt.wantPath, tt.want, tt.truncated)
			}
		})
	}
}

func TestReadFileLimitsAndBinary(t *testing.T) {
	f := newFixture(t, 8)
	var out ReadOutput
	if msg := f.call(t, "read_file", map[string]any{"path": "a.txt", "limit": 100}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Content != "alpha\nbe" || !out.Truncated || out.Size != 17 {
		t.Errorf("MaxRead 8 not applied: %+v", out)
	}

	// A multi-byte character cut by the limit is left for the next read.
	write(t, filepath.Join(f.root, "utf.txt"), "abcdefgé!")
	if msg := f.call(t, "read_file", map[string]any{"path": "utf.txt"}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Content != "abcdefg" || out.Encoding != "" || !out.Truncated {
		t.Errorf("cut character: %+v", out)
	}

	write(t, filepath.Join(f.root, "bin"), "\x00\x01\x02\xff")
	if msg := f.call(t, "read_file", map[string]any{"path": "bin"}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Encoding != "base64" || out.Content != base64.StdEncoding.EncodeToString([]byte("\x00\x01\x02\xff")) {
		t.Errorf("binary: %+v", out)
	}
}

func TestConfinement(t *testing.T) {
	f := newFixture(t, 0)
	outsideMsg := "is outside the allowed roots [" + f.root + " " + f.other + "]"
	tests := []struct {
		name, tool string
		args       map[string]any
	}{
		{"read ../ escape", "read_file", map[string]any{"path": "../outside/secret.txt"}},
		{"read deep ../ escape", "read_file", map[string]any{"path": "sub/../../outside/secret.txt"}},
		{"read absolute outside", "read_file", map[string]any{"path": filepath.Join(f.outside, "secret.txt")}},
		{"read absolute with ..", "read_file", map[string]any{"path": f.root + "/../outside/secret.txt"}},
		{"read via dir symlink", "read_file", map[string]any{"path": "escape/secret.txt"}},
		{"read via file symlink", "read_file", map[string]any{"path": "secret-link.txt"}},
		{"write via dir symlink", "write_file", map[string]any{"path": "escape/new.txt", "content": "x"}},
		{"write via file symlink", "write_file", map[string]any{"path": "secret-link.txt", "content": "overwritten"}},
		{"write with create_dirs via symlink", "write_file", map[string]any{"path": "escape/a/b.txt", "content": "x", "create_dirs": true}},
		{"write ../", "write_file", map[string]any{"path": "../outside/new.txt", "content": "x"}},
		{"list outside", "list_dir", map[string]any{"path": f.outside}},
		{"list via symlink", "list_dir", map[string]any{"path": "escape"}},
		{"search via symlink", "search_files", map[string]any{"path": "escape", "pattern": "*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := f.call(t, tt.tool, tt.args, nil)
			if !strings.Contains(msg, outsideMsg) {
				t.Errorf("got %q, want an error containing %q", msg, outsideMsg)
			}
		})
	}
	// Nothing outside was touched.
	b, err := os.ReadFile(filepath.Join(f.outside, "secret.txt"))
	must(t, err)
	if string(b) != "top secret\n" {
		t.Errorf("secret.txt changed to %q", b)
	}
	entries, err := os.ReadDir(f.outside)
	must(t, err)
	if len(entries) != 1 {
		t.Errorf("files were created outside the roots: %v", entries)
	}
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t, 0)
	var w WriteOutput
	if msg := f.call(t, "write_file", map[string]any{"path": "new.txt", "content": "one\n"}, &w); msg != "" {
		t.Fatal(msg)
	}
	if w.Path != filepath.Join(f.root, "new.txt") || w.BytesWritten != 4 {
		t.Errorf("write: %+v", w)
	}
	if msg := f.call(t, "write_file", map[string]any{"path": "new.txt", "content": "two\n", "append": true}, &w); msg != "" {
		t.Fatal(msg)
	}
	var r ReadOutput
	if msg := f.call(t, "read_file", map[string]any{"path": "new.txt"}, &r); msg != "" {
		t.Fatal(msg)
	}
	if r.Content != "one\ntwo\n" {
		t.Errorf("after append: %q", r.Content)
	}
	if msg := f.call(t, "write_file", map[string]any{"path": "new.txt", "content": ""}, &w); msg != "" || w.BytesWritten != 0 {
		t.Fatalf("empty write: %q %+v", msg, w)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "new.txt")); len(b) != 0 {
		t.Errorf("replace did not truncate: %q", b)
	}

	msg := f.call(t, "write_file", map[string]any{"path": "x/y/z.txt", "content": "deep"}, nil)
	if !strings.Contains(msg, "does not exist; pass create_dirs: true") {
		t.Errorf("missing parent: %q", msg)
	}
	if msg := f.call(t, "write_file", map[string]any{"path": "x/y/z.txt", "content": "deep", "create_dirs": true}, &w); msg != "" {
		t.Fatal(msg)
	}
	if b, err := os.ReadFile(filepath.Join(f.root, "x", "y", "z.txt")); err != nil || string(b) != "deep" {
		t.Errorf("create_dirs: %q %v", b, err)
	}
	// Writing through a symlink that stays inside changes its target.
	if msg := f.call(t, "write_file", map[string]any{"path": "to-other/o.txt", "content": "changed"}, &w); msg != "" {
		t.Fatal(msg)
	}
	if b, _ := os.ReadFile(filepath.Join(f.other, "o.txt")); string(b) != "changed" {
		t.Errorf("write via inner symlink: %q", b)
	}
	if msg := f.call(t, "write_file", map[string]any{"path": "sub", "content": "x"}, nil); !strings.Contains(msg, "is a directory") {
		t.Errorf("write to a directory: %q", msg)
	}
}

func TestErrorsNameThePath(t *testing.T) {
	f := newFixture(t, 0)
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": "nope.txt"}, filepath.Join(f.root, "nope.txt") + " does not exist"},
		{"read_file", map[string]any{"path": "sub"}, "is a directory; use list_dir"},
		{"list_dir", map[string]any{"path": "a.txt"}, "a.txt is not a directory"},
		{"list_dir", map[string]any{"path": "nope"}, filepath.Join(f.root, "nope") + " does not exist"},
		{"search_files", map[string]any{"pattern": "[x"}, "not a valid glob"},
		{"read_file", map[string]any{}, `missing required argument "path"`},
	}
	for _, tt := range tests {
		if msg := f.call(t, tt.tool, tt.args, nil); !strings.Contains(msg, tt.want) {
			t.Errorf("%s %v: got %q, want %q", tt.tool, tt.args, msg, tt.want)
		}
	}
}

func TestListDir(t *testing.T) {
	f := newFixture(t, 0)
	names := func(out ListOutput) []string {
		var n []string
		for _, e := range out.Entries {
			n = append(n, e.Name+":"+e.Type)
		}
		return n
	}
	var out ListOutput
	if msg := f.call(t, "list_dir", map[string]any{}, &out); msg != "" {
		t.Fatal(msg)
	}
	want := []string{".git:dir", "a.txt:file", "abs-inner-link.txt:symlink", "escape:symlink", "inner-link.go:symlink",
		"secret-link.txt:symlink", "sub:dir", "to-other:symlink"}
	if out.Path != f.root || !slices.Equal(names(out), want) || out.Truncated {
		t.Errorf("list root: %s %v truncated=%v\nwant %v", out.Path, names(out), out.Truncated, want)
	}
	if out.Entries[1].Size != 17 {
		t.Errorf("a.txt size = %d", out.Entries[1].Size)
	}

	if msg := f.call(t, "list_dir", map[string]any{"path": "sub", "recursive": true}, &out); msg != "" {
		t.Fatal(msg)
	}
	if want := []string{"b.go:file", "deep:dir", "deep/c.go:file"}; !slices.Equal(names(out), want) {
		t.Errorf("recursive: %v, want %v", names(out), want)
	}

	if msg := f.call(t, "list_dir", map[string]any{"max_entries": 2}, &out); msg != "" {
		t.Fatal(msg)
	}
	if len(out.Entries) != 2 || !out.Truncated {
		t.Errorf("max_entries: %v truncated=%v", names(out), out.Truncated)
	}
}

func TestSearchFiles(t *testing.T) {
	f := newFixture(t, 0)
	paths := func(out SearchOutput) []string {
		var p []string
		for _, m := range out.Matches {
			rel, _ := filepath.Rel(f.root, m.Path)
			if m.Line > 0 {
				rel += ":" + string(rune('0'+m.Line)) + ":" + m.Text
			}
			p = append(p, rel)
		}
		return p
	}
	tests := []struct {
		name string
		args map[string]any
		want []string
	}{
		// Symlinked files are searched through the link; .git is skipped.
		{"glob on names", map[string]any{"pattern": "*.go"}, []string{"inner-link.go", "sub/b.go", "sub/deep/c.go"}},
		{"glob with slash", map[string]any{"pattern": "sub/*/*.go"}, []string{"sub/deep/c.go"}},
		{"contains", map[string]any{"pattern": "*", "contains": "eta"}, []string{"a.txt:2:beta", "inner-link.go:3:func Beta() {}", "sub/b.go:3:func Beta() {}", "sub/deep/c.go:1:package deep // beta"}},
		{"links leaving the roots are not read", map[string]any{"pattern": "*", "contains": "secret"}, nil},
		{"under a path", map[string]any{"path": "sub", "pattern": "*.go", "contains": "package"}, []string{"sub/b.go:1:package sub", "sub/deep/c.go:1:package deep // beta"}},
		{"no match", map[string]any{"pattern": "*.rs"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out SearchOutput
			if msg := f.call(t, "search_files", tt.args, &out); msg != "" {
				t.Fatal(msg)
			}
			if got := paths(out); !slices.Equal(got, tt.want) || out.Truncated {
				t.Errorf("got %q truncated=%v, want %q", got, out.Truncated, tt.want)
			}
		})
	}
	var out SearchOutput
	if msg := f.call(t, "search_files", map[string]any{"pattern": "*", "max_results": 1}, &out); msg != "" {
		t.Fatal(msg)
	}
	if len(out.Matches) != 1 || !out.Truncated {
		t.Errorf("max_results: %+v", out)
	}
}

func TestNewRejectsBadRoots(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	write(t, file, "x")
	for _, roots := range [][]string{{file}, {filepath.Join(t.TempDir(), "missing")}} {
		if _, err := New(Options{Roots: roots}); err == nil {
			t.Errorf("New(%v) succeeded", roots)
		}
	}
}

func TestAnnotations(t *testing.T) {
	f := newFixture(t, 0)
	list, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	must(t, err)
	readOnly := map[string]bool{}
	for _, tool := range list.Tools {
		readOnly[tool.Name] = tool.Annotations.ReadOnlyHint != nil && *tool.Annotations.ReadOnlyHint
		if tool.Name == "write_file" && (tool.Annotations.DestructiveHint == nil || *tool.Annotations.DestructiveHint) {
			t.Errorf("write_file destructiveHint = %v, want false", tool.Annotations.DestructiveHint)
		}
	}
	want := map[string]bool{"read_file": true, "list_dir": true, "search_files": true, "write_file": false}
	if len(readOnly) != len(want) {
		t.Fatalf("tools: %v", readOnly)
	}
	for name, ro := range want {
		if readOnly[name] != ro {
			t.Errorf("%s readOnlyHint = %v, want %v", name, readOnly[name], ro)
		}
	}
}

// A FIFO (or any file that is not regular) is refused at once, and the
// server goes on serving.
func TestReadRefusesFIFO(t *testing.T) {
	f := newFixture(t, 0)
	must(t, syscall.Mkfifo(filepath.Join(f.root, "pipe"), 0o644))
	for range 8 { // each would have wedged the server before
		if msg := f.call(t, "read_file", map[string]any{"path": "pipe"}, nil); !strings.Contains(msg, "is not a regular file") {
			t.Fatalf("reading a FIFO: %q", msg)
		}
	}
	var out ReadOutput
	if msg := f.call(t, "read_file", map[string]any{"path": "a.txt"}, &out); msg != "" || !strings.Contains(out.Content, "alpha") {
		t.Errorf("after the FIFO: %q %+v", msg, out)
	}
}

// callNotBlockedBy calls a tool that must answer without waiting on the
// FIFO pipe. If no answer comes within d, the test fails, and the FIFO is
// opened at both ends so that the blocked call ends and the test does not
// hang (the in-process client does not give up on its own).
func (f *fixture) callNotBlockedBy(t *testing.T, pipe string, d time.Duration, tool string, args map[string]any) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		res, err := f.c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
		var text string
		if err != nil {
			text = "protocol error: " + err.Error()
		} else if res.IsError {
			for _, ct := range res.Content {
				if tc, ok := mcp.AsTextContent(ct); ok {
					text += tc.Text
				}
			}
		}
		done <- text
	}()
	select {
	case text := <-done:
		return text
	case <-time.After(d):
	}
	rescue, err := os.OpenFile(pipe, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err == nil {
		defer rescue.Close()
	}
	select {
	case <-done:
		t.Fatalf("%s %v waited on the FIFO until the test opened it (more than %s)", tool, args, d)
	case <-time.After(d):
		t.Fatalf("%s %v is still blocked", tool, args)
	}
	return ""
}

// write_file on a FIFO is refused at once, whether or not something reads
// it, named directly or through a symlink, and nothing reaches a reader;
// search_files passes a FIFO over instead of waiting for a writer.
func TestWriteAndSearchRefuseFIFO(t *testing.T) {
	f := newFixture(t, 0)
	pipe := filepath.Join(f.root, "pipe.txt")
	must(t, syscall.Mkfifo(pipe, 0o644))
	must(t, os.Symlink("pipe.txt", filepath.Join(f.root, "pipe-link.txt")))
	for _, args := range []map[string]any{
		{"path": "pipe.txt", "content": "x"},
		{"path": "pipe.txt", "content": "x", "append": true},
		{"path": "pipe-link.txt", "content": "x"},
	} {
		if msg := f.callNotBlockedBy(t, pipe, 10*time.Second, "write_file", args); !strings.Contains(msg, "is not a regular file (a FIFO)") {
			t.Errorf("write_file %v with no reader: %q", args, msg)
		}
	}

	// With a reader waiting, the open would succeed: what was opened is
	// checked, and the reader gets nothing.
	reader, err := os.OpenFile(pipe, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	must(t, err)
	defer reader.Close()
	if msg := f.callNotBlockedBy(t, pipe, 10*time.Second, "write_file", map[string]any{"path": "pipe.txt", "content": "leak"}); !strings.Contains(msg, "is not a regular file (a FIFO)") {
		t.Errorf("write_file with a reader: %q", msg)
	}
	buf := make([]byte, 8)
	if n, _ := reader.Read(buf); n != 0 {
		t.Errorf("the FIFO's reader got %q", buf[:n])
	}

	var out SearchOutput
	reader.Close()
	if msg := f.callNotBlockedBy(t, pipe, 10*time.Second, "search_files", map[string]any{"pattern": "*.txt", "contains": "alpha"}); msg != "" {
		t.Fatal(msg)
	}
	if msg := f.call(t, "search_files", map[string]any{"pattern": "*.txt", "contains": "alpha"}, &out); msg != "" || len(out.Matches) != 1 || out.Matches[0].Line != 1 {
		t.Errorf("search beside a FIFO: %q %+v", msg, out)
	}
}
