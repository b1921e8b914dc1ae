package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
)

// binDir holds the CLI built for the tests; TestMain removes it.
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

// saucerBinary builds the CLI once per test run, for tests that need it as
// a real process (ten of them: a build each made the package's tests
// minutes slower).
func saucerBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binError = os.MkdirTemp("", "saucer-bin-"); binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "saucer")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binError = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

func TestMCPServesOwnToolsOverStdioAndHTTP(t *testing.T) {
	bin := saucerBinary(t)
	dir := t.TempDir()

	// stdio: `saucer mcp shell` as another MCP host would start it.
	c, err := client.New(context.Background(), []client.Server{
		{Namespace: "shell", Command: bin, Args: []string{"mcp", "shell", "-C", dir}},
	}, client.Options{RequireAll: true})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Execute(context.Background(), command.Command{Namespace: "shell", ToolName: "execute_command",
		Parameters: map[string]any{"command": "echo over stdio > out.txt && cat out.txt"}})
	var out struct{ Stdout string }
	if err := json.Unmarshal(r.Result, &out); err != nil || out.Stdout != "over stdio\n" {
		t.Errorf("execute_command over stdio: %+v", r)
	}
	// The tool's declaration (title, class, output schema) crosses the
	// process boundary.
	if ts := c.Tools("shell", ""); len(ts) != 1 || ts[0].Title != "Run a shell command" || client.RiskOf(ts[0]) != client.RiskDestructive ||
		!strings.Contains(string(ts[0].OutputSchema), `"exit_code"`) {
		t.Errorf("shell tools over stdio: %+v", ts)
	}
	if r := c.Execute(context.Background(), command.Command{Namespace: "shell", ToolName: "execute_command",
		Parameters: map[string]any{"cmd": "true"}}); r.OK() || !strings.Contains(r.Error, `"cmd"`) {
		t.Errorf("bad arguments over stdio: %+v", r)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	// http: `saucer mcp files --http 127.0.0.1:0`.
	srv := exec.Command(bin, "mcp", "files", "-C", dir, "--http", "127.0.0.1:0")
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	_, url, found := strings.Cut(strings.TrimSpace(line), "serving at ")
	if err != nil || !found {
		t.Fatalf("no address in %q (%v)", line, err)
	}
	url = strings.TrimSuffix(url, " (Ctrl-C stops)")
	c, err = client.New(context.Background(), []client.Server{{Namespace: "files", URL: url}}, client.Options{RequireAll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r = c.Execute(context.Background(), command.Command{Namespace: "files", ToolName: "read_file", Parameters: map[string]any{"path": "out.txt"}})
	if !r.OK() || !strings.Contains(string(r.Result), "over stdio") {
		t.Errorf("read_file over http: %+v", r)
	}
	ts := c.Tools("files", "")
	if len(ts) != 4 {
		t.Fatalf("%d files tools over http", len(ts))
	}
	for _, info := range ts {
		want := client.RiskRead
		if info.Name == "write_file" {
			want = client.RiskWrite
		}
		if client.RiskOf(info) != want || info.Title == "" {
			t.Errorf("%s over http: risk %q, title %q", info.Name, client.RiskOf(info), info.Title)
		}
	}
}

func TestMCPRefusesUnknownServer(t *testing.T) {
	out, code := saucer(t, "mcp", "browser")
	if code != 2 || !strings.Contains(out, `unknown server "browser"`) {
		t.Errorf("exit %d: %s", code, out)
	}
}

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	out, code := saucer(t, "doctor", "--skip-provider", "-C", dir)
	if code != 0 || !strings.Contains(out, "ok    server shell (builtin)") || !strings.Contains(out, "checked 2 MCP servers") ||
		!strings.Contains(out, "info shell: a timeout kills the command's") {
		t.Errorf("healthy: exit %d\n%s", code, out)
	}
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("model: scripted:x.yaml\nmcp:\n  use: [shell, broken]\n  servers:\n    broken: {kind: stdio, command: /no/such/server, init_timeout: 2s}\n"), 0o644)
	start := time.Now()
	out, code = saucer(t, "doctor", "-c", cfgFile, "-C", dir)
	for _, want := range []string{"FAIL  server broken (stdio)", "cannot start /no/such/server", "fix: install the server", "ok    server shell"} {
		if !strings.Contains(out, want) {
			t.Errorf("broken server: output lacks %q\n%s", want, out)
		}
	}
	if code != 1 || time.Since(start) > 60*time.Second { // not forever
		t.Errorf("exit %d after %s", code, time.Since(start))
	}
	os.WriteFile(cfgFile, []byte("mcp:\n  use: [nothing]\n"), 0o644)
	if out, code = saucer(t, "doctor", "-c", cfgFile, "--skip-provider"); code != 1 || !strings.Contains(out, `mcp.use: no server "nothing"`) {
		t.Errorf("bad config: exit %d\n%s", code, out)
	}
}

// `saucer mcp files` ends on SIGTERM even while a call is stuck where no
// context reaches it: here, writing a 1 MB reply to a client that has
// stopped reading (mcp-go's Listen waits for such a call forever).
func TestMCPStopsOnSIGTERMMidCall(t *testing.T) {
	bin := saucerBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("a", 1<<20-1)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, "mcp", "files", "-C", dir)
	stdin, _ := srv.StdinPipe()
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	pid := srv.Process.Pid
	if pid <= 0 {
		t.Fatalf("no process id: %d", pid)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			syscall.Kill(pid, syscall.SIGKILL)
			<-exited
		}
	})
	out := bufio.NewReader(stdout)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}}`+"\n")
	// The reply has begun: the call is in flight, and its write blocks
	// once the pipe is full, since nothing reads any more.
	if start, err := out.Peek(len(`{"jsonrpc"`)); err != nil || string(start) != `{"jsonrpc"` {
		t.Fatalf("reply to read_file: %q %v", start, err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("exit after SIGTERM: %v", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("saucer mcp files still runs 30s after SIGTERM")
	}
}
