package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/fsm"
)

// saucer runs the CLI in-process and returns its output and exit code.
func saucer(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.code
	default:
		return out.String() + err.Error(), 2
	}
}

// The README's no-key demo, exactly: host → files app → shell app, for real.
func TestRunDemo(t *testing.T) {
	dir := t.TempDir()
	out, code := saucer(t, "run", "--model", "scripted:../../examples/demo.yaml", "--workdir", dir,
		"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "notes", "hello.txt"))
	if err != nil || string(b) != "Hello from Saucer\n" {
		t.Fatalf("hello.txt = %q, %v", b, err)
	}
	for _, want := range []string{
		"[host step 1] ASSIGN",
		"→ app:files#1: Write the line",
		"[app:files#1 step 1] CONTINUE",
		"files.write_file",
		"[app:shell#2 step 1] CONTINUE",
		"shell.execute_command",
		"hello.txt", // ls's real output, in the result line
		"FINISH after 7 steps",
		"Done: notes/hello.txt says 'Hello from Saucer'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
}

func TestRunFailureExitsNonZero(t *testing.T) {
	script := filepath.Join(t.TempDir(), "fail.yaml")
	os.WriteFile(script, []byte("replies:\n  - tool_calls: [{name: fail_task, arguments: {reason: cannot do that}}]\n"), 0o644)
	out, code := saucer(t, "run", "-m", "scripted:"+script, "-C", t.TempDir(), "impossible")
	if code != 1 || !strings.Contains(out, "FAIL after 1 steps") || !strings.Contains(out, "cannot do that") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestRunBadModelSpec(t *testing.T) {
	out, code := saucer(t, "run", "--model", "nonsense", "task")
	if code != 2 || !strings.Contains(out, "PROVIDER:MODEL") {
		t.Fatalf("exit %d: %s", code, out)
	}
	t.Setenv("OPENAI_API_KEY", "")
	out, code = saucer(t, "run", "--model", "openai:gpt-4o", "-C", t.TempDir(), "task")
	if code != 2 || !strings.Contains(out, "OPENAI_API_KEY") {
		t.Fatalf("missing key: exit %d: %s", code, out)
	}
}

func TestToolsCommand(t *testing.T) {
	out, code := saucer(t, "tools", "-C", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"shell", "execute_command", "files", "read_file", "write_file", "list_dir", "search_files", "data_collection", "action"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}
}

func TestFSMCommand(t *testing.T) {
	out, code := saucer(t, "fsm", "--mermaid")
	if code != 0 || out != fsm.MermaidAll() {
		t.Fatalf("exit %d, output differs from the fsm golden", code)
	}
	golden, err := os.ReadFile("../../fsm/testdata/fsm.mmd")
	if err != nil || string(golden) != out {
		t.Errorf("saucer fsm --mermaid differs from fsm/testdata/fsm.mmd (%v)", err)
	}
}

func TestConfigCommand(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(cfgFile, []byte("model: ollama:qwen2.5\nproviders:\n  openai: {api_key: sk-very-secret}\nagent: {max_steps: 7}\n"), 0o644)
	out, code := saucer(t, "config", "--config", cfgFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if strings.Contains(out, "sk-very-secret") || !strings.Contains(out, "[redacted]") {
		t.Errorf("secret not redacted:\n%s", out)
	}
	for _, want := range []string{"model: ollama:qwen2.5", "max_steps: 7", "max_rounds: 10"} {
		if !strings.Contains(out, want) {
			t.Errorf("config lacks %q:\n%s", want, out)
		}
	}
	os.WriteFile(cfgFile, []byte("agent: {max_stepz: 7}\n"), 0o644)
	out, code = saucer(t, "config", "--config", cfgFile)
	if code != 2 || !strings.Contains(out, `unknown key "agent.max_stepz" in `+cfgFile+` line 1; did you mean "agent.max_steps"?`) {
		t.Errorf("unknown key: exit %d: %s", code, out)
	}
}

func TestAppServerSets(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(cfgFile, []byte("mcp:\n  apps:\n    terminal: [shell]\n"), 0o644)
	out, code := saucer(t, "tools", "--config", cfgFile, "--app", "terminal", "-C", t.TempDir())
	if code != 0 || !strings.Contains(out, "execute_command") || strings.Contains(out, "read_file") {
		t.Fatalf("exit %d, want only the shell's tools:\n%s", code, out)
	}
	out, code = saucer(t, "tools", "--config", cfgFile, "--app", "nope", "-C", t.TempDir())
	if code != 2 || !strings.Contains(out, "terminal") {
		t.Errorf("unknown app: exit %d: %s", code, out)
	}
}

// An empty task, and a --model or --mode given empty, are refused with
// what to do, never run with the config's model in silence.
func TestEmptyTaskAndFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-C", t.TempDir(), ""}, "the task is empty: say what to do"},
		{[]string{"run", "-C", t.TempDir(), " ", "\t"}, "the task is empty"},
		{[]string{"run", "--model", "", "-C", t.TempDir(), "list files"}, "--model is empty: give a model as PROVIDER:MODEL"},
		{[]string{"run", "--model=", "-C", t.TempDir(), "list files"}, "--model is empty"},
		{[]string{"run", "--mode", " ", "-C", t.TempDir(), "list files"}, "--mode is empty: give tools or json"},
		{[]string{"eval", "--model", "", "../../evals/suites/demo.yaml", "-o", t.TempDir()}, "--model is empty"},
	} {
		out, code := saucer(t, tc.args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, want 2 saying %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}
