package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
)

// ufoDevice answers rounds the way UFO's device client does (the frames
// in testdata/aip/transcripts): only the list_tools meta tool, by tool
// type; no get_mcp_tools and no get_device_info (its device information
// came with its registration); after the first failure the rest of the
// round is skipped, not run.
type ufoDevice struct {
	mu  sync.Mutex
	ran []string
	// askers is the agent that asked for each command of ran (UFO's
	// client routes a frame by it; the dispatcher names it in the frame).
	askers []string
	file   map[string]string
}

func (d *ufoDevice) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]command.Result, len(cmds))
	failed := false
	for i, c := range cmds {
		id := fmt.Sprintf("call-%d", len(d.ran)+1)
		if failed {
			out[i] = command.SkippedResult(id, "skipped: an earlier command of the round failed")
			continue
		}
		d.ran = append(d.ran, c.ToolName)
		d.askers = append(d.askers, command.AgentFrom(ctx))
		switch c.ToolName {
		case command.ListTools:
			tt, _ := c.Parameters["tool_type"].(string)
			var tools []command.ToolInfo
			if tt == string(command.Action) {
				tools = []command.ToolInfo{{Key: "action::write_file", Name: "write_file", Namespace: "files", ToolType: command.Action,
					Description: "Write a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)}}
			}
			b, _ := json.Marshal(tools)
			out[i] = command.Result{Status: command.Success, Result: b, CallID: id}
		case "write_file":
			p, _ := c.Parameters["path"].(string)
			if p == "" || strings.Contains(p, "..") {
				out[i], failed = command.Failed(id, "invalid path"), true
				continue
			}
			d.file[p], _ = c.Parameters["content"].(string)
			out[i] = command.Succeeded(id, "written")
		default:
			out[i], failed = command.Failed(id, fmt.Sprintf("Tool %s is not registered", c.ToolName)), true
		}
	}
	return out
}

// TestUFODeviceClient: a task runs end to end on a device that speaks only
// what UFO's client speaks: discovery falls back to list_tools, the device
// information comes from the registration, a failing command and the skip
// after it reach the model, and the task finishes.
func TestUFODeviceClient(t *testing.T) {
	dev := &ufoDevice{file: map[string]string{}}
	script, _ := scripted.Parse([]byte(`
replies:
  - expect: "vm"
    tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write hello to a.txt."}}]
  - tool_calls:
      - {name: write_file, arguments: {path: "../escape", content: "x"}}
      - {name: write_file, arguments: {path: a.txt, content: "hello"}}
  - expect: "skipped: an earlier command of the round failed"
    tool_calls: [{name: write_file, arguments: {path: a.txt, content: "hello"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "a.txt written"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done"}}]
`), "yaml")
	cfg := config.Default()
	sess, err := session.New(cfg, session.Options{Dispatcher: dev, Model: scripted.New(*script),
		Apps:       map[string]string{"files": "Files on the UFO device."},
		DeviceInfo: command.DeviceInfo{Platform: "linux", Hostname: "vm"}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(context.Background(), "write hello to a.txt")
	if !out.OK() {
		t.Fatalf("outcome %s %q (the device ran %v)", out.Status, out.Answer, dev.ran)
	}
	if dev.file["a.txt"] != "hello" {
		t.Errorf("files %v", dev.file)
	}
	if !strings.Contains(strings.Join(dev.ran, " "), "get_mcp_tools list_tools list_tools") {
		t.Errorf("discovery: %v", dev.ran)
	}
	for i, tool := range dev.ran {
		if tool == "write_file" && dev.askers[i] != command.AppAgentName || dev.askers[i] == "" {
			t.Errorf("%s was asked for by %q (all: %v)", tool, dev.askers[i], dev.askers)
		}
	}
}
