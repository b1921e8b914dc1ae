package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/ufopeer"
	"github.com/saucerhq/saucer/server"
)

// These tests run UFO's own device client (microsoft/UFO's
// ufo.client.client, pinned in ../shared/peers/ufo) and its Linux bash
// MCP server against `saucer serve`: the real other side, which answers
// nothing to a frame it cannot route.

// ufoRig is a saucer server with UFO's bash MCP server and client.
type ufoRig struct {
	addr string
	peer *ufopeer.Peer
	mcp  *ufopeer.Proc
	srv  *proc
	logs func() string
}

// ufoScript writes a scripted model.
func ufoScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.yaml")
	if err := os.WriteFile(path, []byte("replies:\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startUFORig starts UFO's bash MCP server and `saucer serve` with the
// script and extra flags; the client comes with connectUFO.
func startUFORig(t *testing.T, script string, extra ...string) *ufoRig {
	t.Helper()
	peer := ufopeer.New(t)
	r := &ufoRig{addr: freeAddr(t), peer: peer}
	r.mcp = peer.ServeBashMCP(t)
	args := append([]string{"serve", "--model", "scripted:" + script, "--addr", r.addr, "--token", "k"}, extra...)
	r.srv = startSaucer(t, saucerBinary(t), []string{"SAUCER_RUNS=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}, args...)
	r.logs = func() string { return "server:\n" + r.srv.out.String() }
	waitHTTP(t, r.addr)
	return r
}

// connectUFO starts UFO's client as id on platform and waits until the
// server has its tools (it lists them once the client registers).
func (r *ufoRig) connectUFO(t *testing.T, id, platform string) *ufopeer.Proc {
	t.Helper()
	cl := r.peer.Client(t, "ws://"+r.addr+"/ws?token=k", id, platform)
	cl.WaitFor(t, "Successfully registered as "+id, 60*time.Second)
	if !r.toolsKnown(t, id, 90*time.Second) {
		var tools server.DeviceTools
		apiCall(t, r.addr, "GET", "/api/clients/"+id+"/tools", nil, &tools)
		t.Fatalf("the server never learned %s's tools (%s)\n%s\nclient:\n%s", id, tools.Note, r.logs(), cl.Output())
	}
	return cl
}

// toolsKnown follows the server's event stream until id's entry lists
// tools (in the first snapshot, or a client event after it).
func (r *ufoRig) toolsKnown(t *testing.T, id string, within time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+r.addr+"/api/events", nil)
	req.Header.Set("X-API-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	typ := ""
	for sc.Scan() {
		l := sc.Text()
		if rest, ok := strings.CutPrefix(l, "event: "); ok {
			typ = rest
		}
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var clients []server.ClientInfo
		switch typ {
		case server.EventSnapshot:
			var snap server.Snapshot
			json.Unmarshal([]byte(data), &snap)
			clients = snap.Clients
		case server.EventClient:
			var ci server.ClientInfo
			json.Unmarshal([]byte(data), &ci)
			clients = []server.ClientInfo{ci}
		}
		for _, ci := range clients {
			if ci.ClientID == id && ci.Tools.Count > 0 {
				return true
			}
		}
	}
	return false
}

// dispatch sends a task to id and waits for its end.
func (r *ufoRig) dispatch(t *testing.T, id, request string, more func() string) server.TaskInfo {
	t.Helper()
	var disp server.DispatchResponse
	if code := apiCall(t, r.addr, "POST", "/api/dispatch", server.DispatchRequest{ClientID: id, Request: request}, &disp); code != 200 {
		t.Fatalf("dispatch: %d\n%s", code, r.logs())
	}
	return r.await(t, disp.TaskID, more)
}

func (r *ufoRig) await(t *testing.T, taskID string, more func() string) server.TaskInfo {
	t.Helper()
	var info server.TaskInfo
	for deadline := time.Now().Add(3 * time.Minute); info.Status != server.StatusCompleted && info.Status != server.StatusFailed; {
		if time.Now().After(deadline) {
			t.Fatalf("task %s is still %q after 3 minutes\n%s\n%s", taskID, info.Status, r.logs(), more())
		}
		apiCall(t, r.addr, "GET", "/api/tasks/"+taskID+"?wait=20s", nil, &info)
	}
	return info
}

// TestUFOClientRunsATask: a task of several steps runs on UFO's own
// client. Discovery costs the client one list_tools, sent as UFO's
// server sends it; a tool the model invents is refused on the server
// with the device's list (the client never sees it); a tool that fails
// on the device comes back as a failure; nothing the client received was
// unroutable.
func TestUFOClientRunsATask(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "motd.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := ufoScript(t, fmt.Sprintf(`
  - expect: "BashExecutor"
    tool_calls: [{name: assign_subtask, arguments: {app: BashExecutor, subtask: "Read motd.txt in %[1]s and say what the answer is."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "cat %[1]s/motd.txt", api_key: %[2]q}}]
  - expect: "the answer is 42"
    tool_calls: [{name: delete_file, arguments: {path: "%[1]s/motd.txt"}}]
  - expect: "there is no tool \"delete_file\""
    tool_calls: [{name: execute_command, arguments: {command: "uname -s"}}]
  - expect: "api_key"
    tool_calls: [{name: execute_command, arguments: {command: "wc -l %[1]s/motd.txt", api_key: %[2]q}}]
  - expect: "1 %[1]s/motd.txt"
    tool_calls: [{name: finish_task, arguments: {result: "42"}}]
  - expect: "42"
    tool_calls: [{name: finish_task, arguments: {result: "The answer is 42."}}]
`, work, ufopeer.APIKey))
	r := startUFORig(t, script)
	cl := r.connectUFO(t, "ufo1", "linux")
	info := r.dispatch(t, "ufo1", "What is the answer in motd.txt?", cl.Output)
	if info.Status != server.StatusCompleted || info.Result != "The answer is 42." {
		t.Fatalf("task %s (%s): %q\n%s\nclient:\n%s", info.Status, info.Error, info.Result, r.logs(), cl.Output())
	}
	var states []string
	for _, c := range info.Commands {
		states = append(states, c.ToolName+":"+string(c.State))
	}
	if got, want := strings.Join(states, " "), "execute_command:completed execute_command:failed execute_command:completed"; got != want {
		t.Errorf("commands sent to the device: %s, want %s (delete_file is refused before sending)", got, want)
	}
	// One listing for the connection, however many agents asked.
	if n := cl.Count("Running meta tool: list_tools"); n != 1 {
		t.Errorf("the client listed its tools %d times, want once\n%s", n, cl.Output())
	}
	for _, bad := range []string{"Error handling message", "is not registered", "Agent configuration for"} {
		if cl.Count(bad) > 0 {
			t.Errorf("the client logged %q: it was sent something it cannot route\n%s", bad, cl.Output())
		}
	}
	if n := r.mcp.Count("CALL"); n != 3 {
		t.Errorf("the bash MCP server ran %d tool calls, want 3\n%s", n, r.mcp.Output())
	}
}

// TestUFOClientAsMobile: a client registered as mobile is driven through
// UFO's MobileAgent, whose data collection and action servers are
// distinct namespaces; each command goes out under the tool type its
// namespace listed it with.
func TestUFOClientAsMobile(t *testing.T) {
	script := ufoScript(t, fmt.Sprintf(`
  - expect: "MobileDataCollector"
    tool_calls: [{name: assign_subtask, arguments: {app: MobileDataCollector, subtask: "Say which user runs the device's commands."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "whoami", api_key: %[1]q}}]
  - expect: "stdout"
    tool_calls: [{name: finish_task, arguments: {result: "a user was named"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "named"}}]
`, ufopeer.APIKey))
	r := startUFORig(t, script)
	cl := r.connectUFO(t, "phone1", "mobile")
	var tools server.DeviceTools
	apiCall(t, r.addr, "GET", "/api/clients/phone1/tools", nil, &tools)
	kinds := map[string]string{}
	for _, tl := range tools.Tools {
		kinds[tl.Namespace] = string(tl.Type)
	}
	if kinds["MobileDataCollector"] != "data_collection" || kinds["MobileActionExecutor"] != "action" {
		t.Errorf("phone1's tools by namespace: %v", kinds)
	}
	info := r.dispatch(t, "phone1", "Who runs the commands?", cl.Output)
	if info.Status != server.StatusCompleted {
		t.Fatalf("task %s (%s)\n%s\nclient:\n%s", info.Status, info.Error, r.logs(), cl.Output())
	}
	if cl.Count("agent_name='MobileAgent'") == 0 || cl.Count("Error handling message") > 0 {
		t.Errorf("the client was not driven through MobileAgent, or could not route a frame\n%s", cl.Output())
	}
	if !strings.Contains(cl.Output(), "'command': 'whoami'}, tool_type='data_collection'") {
		t.Errorf("whoami did not go out as a data collection command\n%s", cl.Output())
	}
}

// TestUFOClientAcrossAServerKill: the server is killed (SIGKILL) while
// UFO's client runs a command, and starts again on the same store. The
// client comes back by itself; the task resumes, the command cut short
// is reported to the model as of unknown outcome instead of being sent
// again, and the task completes: the device ran each command once.
func TestUFOClientAcrossAServerKill(t *testing.T) {
	script := ufoScript(t, fmt.Sprintf(`
  - tool_calls: [{name: assign_subtask, arguments: {app: BashExecutor, subtask: "Follow /dev/null for a while, then say the kernel's name."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "tail -f /dev/null", timeout: 4, api_key: %[1]q}}]
  - expect: "unknown"
    tool_calls: [{name: execute_command, arguments: {command: "uname -s", api_key: %[1]q}}]
  - expect: "Linux"
    tool_calls: [{name: finish_task, arguments: {result: "Linux"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "The kernel is Linux."}}]
`, ufopeer.APIKey))
	store := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	r := startUFORig(t, script, "--store", store)
	cl := r.connectUFO(t, "ufo1", "linux")
	var disp server.DispatchResponse
	if code := apiCall(t, r.addr, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "ufo1", Request: "what kernel?"}, &disp); code != 200 {
		t.Fatalf("dispatch: %d\n%s", code, r.logs())
	}
	r.mcp.WaitFor(t, "tail -f /dev/null", 60*time.Second)
	r.srv.kill(t)
	before := r.srv.out.String()
	r.srv = startSaucer(t, saucerBinary(t), []string{"SAUCER_RUNS=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()},
		"serve", "--model", "scripted:"+script, "--addr", r.addr, "--token", "k", "--store", store)
	r.logs = func() string { return "server before the kill:\n" + before + "\nserver:\n" + r.srv.out.String() }
	waitHTTP(t, r.addr)
	info := r.await(t, disp.TaskID, cl.Output)
	if info.Status != server.StatusCompleted || info.Result != "The kernel is Linux." {
		t.Fatalf("task %s (%s): %q\n%s\nclient:\n%s", info.Status, info.Error, info.Result, r.logs(), cl.Output())
	}
	if n := r.mcp.Count("tail -f /dev/null"); n != 1 {
		t.Errorf("the command cut short by the kill ran %d times, want once\n%s", n, r.mcp.Output())
	}
	if n := r.mcp.Count("uname -s"); n != 1 {
		t.Errorf("uname ran %d times, want once\n%s", n, r.mcp.Output())
	}
}

// TestUFOClientInAConstellation: UFO's client registers no apps; its
// apps are the namespaces of the tools it lists, so a constellation's
// planner sees them and a node that needs one runs on it.
func TestUFOClientInAConstellation(t *testing.T) {
	script := ufoScript(t, fmt.Sprintf(`
  - expect: "BashExecutor"
    tool_calls:
      - {name: add_node, arguments: {id: kernel, device: ufo1, task: "Say the name of the kernel.", apps: [BashExecutor]}}
      - {name: finish_when_done, arguments: {}}
  - tool_calls: [{name: assign_subtask, arguments: {app: BashExecutor, subtask: "Say the name of the kernel."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "uname -s", api_key: %[1]q}}]
  - expect: "Linux"
    tool_calls: [{name: finish_task, arguments: {result: "Linux"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "The kernel is Linux."}}]
`, ufopeer.APIKey))
	r := startUFORig(t, script)
	cl := r.connectUFO(t, "ufo1", "linux")
	var clients struct{ Clients []server.ClientInfo }
	apiCall(t, r.addr, "GET", "/api/clients", nil, &clients)
	if len(clients.Clients) != 1 || !slices.Contains(clients.Clients[0].Tools.Namespaces, "BashExecutor") {
		t.Fatalf("the UFO client's tool namespaces: %+v", clients.Clients)
	}
	out, code := saucer(t, "constellation", "--server", r.addr, "--token", "k", "What kernel does the device run?")
	if code != 0 || !strings.Contains(out, "[completed] on ufo1") || !strings.Contains(out, "The kernel is Linux.") {
		t.Fatalf("exit %d\n%s\n%s\nclient:\n%s", code, out, r.logs(), cl.Output())
	}
	if n := r.mcp.Count("uname -s"); n != 1 {
		t.Errorf("uname ran %d times, want once\n%s", n, r.mcp.Output())
	}
}
