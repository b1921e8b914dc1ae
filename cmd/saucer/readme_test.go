package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/local"
)

// readmeBlocks returns the README's fenced blocks of one language.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReadmeConfigExamples: every config example in the README is a config
// that `saucer config` accepts as run would, and the main one runs the demo
// task for real (with the scripted model in place of its Ollama model).
func TestReadmeConfigExamples(t *testing.T) {
	blocks := readmeBlocks(t, "yaml")
	if len(blocks) < 2 {
		t.Fatalf("found %d yaml blocks in the README", len(blocks))
	}
	for i, y := range blocks {
		dir := t.TempDir()
		file := filepath.Join(dir, "saucer.yaml")
		os.WriteFile(file, []byte(y), 0o644)
		if out, code := saucer(t, "config", "-c", file, "-C", dir); code != 0 {
			t.Errorf("README yaml block %d: saucer config exit %d\n%s", i+1, code, out)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(file, []byte(blocks[0]), 0o644)
	out, code := saucer(t, "run", "-c", file, "--model", "scripted:../../examples/demo.yaml", "-C", dir, "--no-record",
		"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "hello.txt")); code != 0 || string(b) != "Hello from Saucer\n" {
		t.Errorf("the demo under the README's config: exit %d, hello.txt %q\n%s", code, b, out)
	}
}

// What config and run refuse alike: a prompts folder or a files root that
// is not there.
func TestConfigRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, y := range map[string]string{
		"prompts": "prompts: ./no-such-prompts\n",
		"roots":   "tools: {files: {roots: [./no-such-root]}}\n",
	} {
		file := filepath.Join(dir, name+".yaml")
		os.WriteFile(file, []byte(y), 0o644)
		cfgOut, cfgCode := saucer(t, "config", "-c", file, "-C", dir)
		runOut, runCode := saucer(t, "run", "-c", file, "--model", "scripted:../../examples/demo.yaml", "-C", dir, "--no-record", "x")
		if cfgCode == 0 || runCode == 0 || !strings.Contains(cfgOut, "saucer run would refuse this config") {
			t.Errorf("%s: config exit %d, run exit %d\n%s\n%s", name, cfgCode, runCode, cfgOut, runOut)
		}
		docOut, docCode := saucer(t, "doctor", "--skip-provider", "-c", file, "-C", dir)
		if docCode == 0 || !strings.Contains(docOut, "FAIL config") {
			t.Errorf("%s: doctor exit %d\n%s", name, docCode, docOut)
		}
	}
}

// splitArgs splits a shell command line into words, with single and double
// quotes (enough for the README's commands).
func splitArgs(line string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// TestReadmeCommands: every saucer command line in the README names a
// command and flags that exist (those that need a key or a live peer are
// checked this far; the no-key demo and the demo suite also run in CI).
func TestReadmeCommands(t *testing.T) {
	n := 0
	for _, block := range readmeBlocks(t, "sh") {
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(strings.SplitN(line, " #", 2)[0])
			var args []string
			switch {
			case strings.HasPrefix(line, "saucer "):
				args = splitArgs(strings.TrimPrefix(line, "saucer "))
			case strings.HasPrefix(line, "go run ./cmd/saucer "):
				args = splitArgs(strings.TrimPrefix(line, "go run ./cmd/saucer "))
			default:
				continue
			}
			n++
			root := newRoot()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == root {
				t.Errorf("README: %q: no such command (%v)", line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("README: %q: %v", line, err)
			}
		}
	}
	if n < 8 {
		t.Errorf("found only %d saucer command lines in the README", n)
	}
}

// --stream shows the model's text as it arrives, before the step's line;
// without it (stdout not a terminal) nothing is streamed.
func TestRunStreams(t *testing.T) {
	args := func(extra ...string) []string {
		return append(append([]string{"run", "--no-record", "--model", "scripted:../../examples/demo.yaml", "-C", t.TempDir()}, extra...),
			"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	}
	out, code := saucer(t, args("--stream")...)
	streamed := "  host … Two parts: write the file with the files app, then list the folder with the shell.\n[host step 1] ASSIGN"
	if code != 0 || !strings.Contains(out, streamed) {
		t.Errorf("--stream: exit %d\n%s", code, out)
	}
	if out, _ := saucer(t, args()...); strings.Contains(out, "  host … ") {
		t.Errorf("streamed without a terminal:\n%s", out)
	}
}

// A run that reaches its budget exits 4 and says what it spent.
func TestRunBudgetExit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("budget: {model_calls: 3}\n"), 0o644)
	out, code := saucer(t, "run", "-c", file, "--no-record", "--model", "scripted:../../examples/demo.yaml", "-C", dir,
		"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if code != 4 || !strings.Contains(out, "stopped: the budget of 3 model calls is spent (used 3 model calls") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// The README's shell policy example does what its comments say.
func TestReadmeShellPolicyExample(t *testing.T) {
	var example string
	for _, b := range readmeBlocks(t, "yaml") {
		if strings.Contains(b, `"python3 -c *"`) {
			example = b
		}
	}
	if example == "" {
		t.Fatal("the README has no shell policy example")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "saucer.yaml")
	os.WriteFile(file, []byte(example), 0o644)
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, stop, err := local.Builtin(cfg, dir, "shell")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := mcpclient.NewInProcessClient(mcpserve.New(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "test"}}}); err != nil {
		t.Fatal(err)
	}
	for command, refused := range map[string]bool{
		"python3 script.py":         false,
		"python3 -c 'print(1)'":     false,
		"python3 -Ic 'print(1)'":    true,
		"python3 -m http.server":    true,
		"echo 'print(1)' | python3": true,
		"echo hi > notes.txt":       false,
		"cat notes.txt > copy.txt":  true,
	} {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": command}}})
		if err != nil {
			t.Fatal(err)
		}
		text, _ := mcp.AsTextContent(res.Content[0])
		if got := res.IsError && strings.HasPrefix(text.Text, "policy: "); got != refused {
			t.Errorf("%s: refused %v, the README says %v (%s)", command, got, refused, text.Text)
		}
	}
}
