package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

const writeScript = `
replies:
  - expect: "notes/hello.txt"
    tool_calls:
      - name: assign_subtask
        arguments: {app: files, subtask: "Write 'Hello over AIP' to notes/hello.txt"}
  - tool_calls:
      - name: write_file
        arguments: {path: notes/hello.txt, content: "Hello over AIP\n", create_dirs: true}
  - expect: "bytes_written"
    tool_calls:
      - name: finish_task
        arguments: {result: "Wrote notes/hello.txt."}
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "Show notes/hello.txt"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "cat notes/hello.txt"}
  - expect: "Hello over AIP"
    tool_calls:
      - name: finish_task
        arguments: {result: "It says Hello over AIP."}
  - tool_calls:
      - name: finish_task
        arguments: {result: "Done: notes/hello.txt says Hello over AIP."}
`

// TestFullTaskOverAIP: POST /api/dispatch runs the host and app agents on
// the server with a scripted model; every command goes over a real
// loopback WebSocket to a device client running the real shell and files
// tools; GET /api/tasks/{id} shows the steps, the answer and each command's
// lifecycle.
func TestFullTaskOverAIP(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: scriptedSessions(t, writeScript)})
	dir := t.TempDir()
	connect(t, f.wsURL, "dev1", realDevice(t, dir), nil)

	var clients struct{ Clients []server.ClientInfo }
	f.api(t, "GET", "/api/clients", nil, &clients)
	if len(clients.Clients) != 1 || clients.Clients[0].ClientID != "dev1" || clients.Clients[0].Status != "connected" ||
		clients.Clients[0].Namespaces["files"] == "" {
		t.Fatalf("clients: %+v", clients)
	}

	var d server.DispatchResponse
	if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev1",
		Request: "Write 'Hello over AIP' to notes/hello.txt and show it", TaskName: "hello"}, &d); code != 200 {
		t.Fatalf("dispatch: %d %+v", code, d)
	}
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted || !strings.Contains(info.Result, "Hello over AIP") {
		t.Fatalf("task ended %s (%s): %q", info.Status, info.Error, info.Result)
	}
	b, err := os.ReadFile(filepath.Join(dir, "notes/hello.txt"))
	if err != nil || string(b) != "Hello over AIP\n" {
		t.Fatalf("the device's file: %q, %v", b, err)
	}
	if len(info.Steps) < 5 {
		t.Errorf("only %d steps recorded: %+v", len(info.Steps), info.Steps)
	}
	tools := map[string]bool{}
	for _, c := range info.Commands {
		tools[c.ToolName] = true
		if c.State != command.StateCompleted {
			t.Errorf("command %s (%s) ended %s: %s", c.ToolName, c.CallID, c.State, c.Error)
		}
		if c.CallID == "" || c.ResponseID == "" || c.CreatedAt.IsZero() || !c.ExpiresAt.After(c.CreatedAt) ||
			!strings.HasPrefix(c.QueuedBy, "api-key:") || strings.Contains(c.QueuedBy, token) {
			t.Errorf("lifecycle record incomplete: %+v", c)
		}
	}
	for _, want := range []string{"write_file", "execute_command", "get_mcp_tools"} {
		if !tools[want] {
			t.Errorf("no %s command recorded; got %v", want, tools)
		}
	}
}

// The task API shows what a task's model calls used and cost, and a
// model without a price as "cost unknown" (no dollar figure), never $0;
// its recorded run says the same.
func TestTaskShowsItsCost(t *testing.T) {
	for _, tc := range []struct {
		prices map[string]config.Price
		cost   string
	}{
		{nil, "cost unknown"},
		{map[string]config.Price{"openai-compatible:local": {Prompt: 1e6, Completion: 1e6}}, "$"},
	} {
		cfg := config.Default()
		cfg.Model, cfg.Prices = "openai-compatible:local", tc.prices
		s, err := scripted.Parse([]byte(writeScript), "yaml")
		if err != nil {
			t.Fatal(err)
		}
		runs := t.TempDir()
		f := newFixture(t, server.Options{RunsDir: runs,
			NewSession: server.RecordTo(runs, cfg, trajectory.Options{}, server.Sessions(cfg, session.Options{Model: scripted.New(*s)}))})
		connect(t, f.wsURL, "dev1", realDevice(t, t.TempDir()), nil)
		var d server.DispatchResponse
		if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev1", Request: "Write 'Hello over AIP' to notes/hello.txt and show it"}, &d); code != 200 {
			t.Fatalf("dispatch: %d %+v", code, d)
		}
		info := f.waitTask(t, d.TaskID)
		u := info.Usage
		if info.Status != server.StatusCompleted || u.PromptTokens == 0 || u.CompletionTokens == 0 || u.Estimated {
			t.Fatalf("task ended %s (%s), usage %+v", info.Status, info.Error, u)
		}
		if !strings.HasPrefix(info.Cost, tc.cost) || (info.CostUSD == nil) != (tc.cost == "cost unknown") {
			t.Errorf("cost %q (%v), want %q", info.Cost, info.CostUSD, tc.cost)
		}
		if info.CostUSD != nil && *info.CostUSD != float64(u.PromptTokens+u.CompletionTokens) {
			t.Errorf("cost $%v for %+v at $1 a token", *info.CostUSD, u)
		}
		// The recorded run says the same.
		var run server.RunInfo
		if code := f.api(t, "GET", "/api/runs/"+d.TaskID, nil, &run); code != 200 || run.Cost != info.Cost || (run.CostUSD == nil) != (info.CostUSD == nil) {
			t.Errorf("the recorded run: %d, cost %q (%v), want the task's %q", code, run.Cost, run.CostUSD, info.Cost)
		}
	}
}

// In remote mode the agents, and so the artifacts, are on the server: a
// result too long for every request is kept there, and read_artifact is
// answered there, never sent to the device.
func TestRemoteTaskReadsAnArtifact(t *testing.T) {
	var seq strings.Builder // 23,893 bytes: over max_result_chars, within the shell's 64 KiB
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	sum := sha256.Sum256([]byte(seq.String()))
	h := hex.EncodeToString(sum[:])[:12]
	script := fmt.Sprintf(`
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Count to 5000 and find 4321."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "seq 1 5000"}}]
  - expect: "[artifact %[1]s:"
    tool_calls: [{name: read_artifact, arguments: {handle: "%[1]s", grep: "^4321$"}}]
  - expect: "4321: 4321"
    tool_calls: [{name: finish_task, arguments: {result: "4321 is on line 4321"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "4321 is on line 4321"}}]
`, h)
	s, err := scripted.Parse([]byte(script), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(*s)
	// The newest result is shown whole up to show_bytes (64 KiB, as much
	// as the shell keeps): a smaller bound makes this one an artifact.
	cfg := config.Default()
	cfg.Agent.Context.ShowBytes = 8 << 10
	f := newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{Model: model})})
	connect(t, f.wsURL, "dev1", realDevice(t, t.TempDir()), nil)
	var d server.DispatchResponse
	if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev1", Request: "Count to 5000 and find 4321."}, &d); code != 200 {
		t.Fatalf("dispatch: %d %+v", code, d)
	}
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted || info.Result != "4321 is on line 4321" {
		t.Fatalf("task ended %s (%s): %q", info.Status, info.Error, info.Result)
	}
	for _, c := range info.Commands {
		if c.ToolName == "read_artifact" {
			t.Errorf("read_artifact went to the device: %+v", c)
		}
	}
	for i, req := range model.Calls() {
		for _, m := range req.Messages {
			if len(m.Content) > 16000 {
				t.Errorf("request %d carries a %d-byte %s turn", i, len(m.Content), m.Role)
			}
		}
	}
}
