package command_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/saucerhq/saucer/command"
)

const aipDir = "../testdata/aip"

// frameField returns one field of a recorded AIP frame as raw JSON.
func frameField(t *testing.T, file, field string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(aipDir, file))
	if err != nil {
		t.Fatalf("golden AIP frame: %v", err)
	}
	var frame map[string]json.RawMessage
	if err := json.Unmarshal(b, &frame); err != nil {
		t.Fatal(err)
	}
	return frame[field]
}

// sameJSON compares two JSON texts by value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestCommandsRoundTrip(t *testing.T) {
	raw := frameField(t, "s2c_command.json", "actions")
	var cmds []command.Command
	if err := json.Unmarshal(raw, &cmds); err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 || cmds[0].ToolName != "click_input" || cmds[0].ToolType != command.Action ||
		cmds[0].CallID != "00000000-0000-4000-8000-000000000011" || cmds[0].Parameters["button"] != "left" ||
		cmds[1].ToolName != command.ListTools || cmds[1].ToolType != command.DataCollection {
		t.Fatalf("decoded %+v", cmds)
	}
	out, err := json.Marshal(cmds)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, raw, out) {
		t.Errorf("re-encoded commands differ:\n got %s\nwant %s", out, raw)
	}
}

func TestResultsRoundTrip(t *testing.T) {
	raw := frameField(t, "c2s_command_results.json", "action_results")
	var rs []command.Result
	if err := json.Unmarshal(raw, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Status != command.Success || rs[0].Namespace != "UICollector" || !rs[0].OK() ||
		rs[1].Status != command.Failure || rs[1].Error != "Tool action::foo is not registered." || rs[1].Result != nil ||
		rs[2].Status != command.Skipped || rs[2].CallID != "00000000-0000-4000-8000-000000000014" {
		t.Fatalf("decoded %+v", rs)
	}
	if !bytes.Equal(rs[0].Result, []byte(`{
        "clicked": true
      }`)) && !sameJSON(t, rs[0].Result, []byte(`{"clicked":true}`)) {
		t.Errorf("payload %s", rs[0].Result)
	}
	out, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, raw, out) {
		t.Errorf("re-encoded results differ:\n got %s\nwant %s", out, raw)
	}
}

func TestNullAndMissingFields(t *testing.T) {
	var c command.Command
	if err := json.Unmarshal([]byte(`{"tool_name":"x","tool_type":"action","extra":1}`), &c); err != nil || c.CallID != "" || c.Parameters != nil {
		t.Fatalf("%+v %v", c, err)
	}
	b, _ := json.Marshal(c)
	if !sameJSON(t, b, []byte(`{"tool_name":"x","parameters":null,"tool_type":"action","call_id":null}`)) {
		t.Errorf("unset fields must be written as null, as UFO does: %s", b)
	}
	var r command.Result
	if err := json.Unmarshal([]byte(`{"status":"none"}`), &r); err != nil || r.Status != command.None {
		t.Fatalf("%+v %v", r, err)
	}
	b, _ = json.Marshal(r)
	if !sameJSON(t, b, []byte(`{"status":"none","error":null,"result":null,"namespace":null,"call_id":null}`)) {
		t.Errorf("result %s", b)
	}
	if err := json.Unmarshal([]byte(`{"status": 5}`), &r); err == nil {
		t.Error("a numeric status was accepted")
	}
}

func TestToolInfoRoundTrip(t *testing.T) {
	in := []byte(`{"tool_key":"action::write_file","tool_name":"write_file","title":null,"namespace":"files","tool_type":"action",
	  "description":"Write a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"output_schema":null,"meta":null,
	  "annotations":{"destructiveHint":false}}`)
	var ti command.ToolInfo
	if err := json.Unmarshal(in, &ti); err != nil {
		t.Fatal(err)
	}
	if ti.Key != "action::write_file" || ti.Namespace != "files" || ti.OutputSchema != nil || ti.Annotations["destructiveHint"] != false {
		t.Fatalf("%+v", ti)
	}
	out, _ := json.Marshal(ti)
	if !sameJSON(t, in, out) {
		t.Errorf("round trip:\n got %s\nwant %s", out, in)
	}
	// The key is derived when unset.
	out, _ = json.Marshal(command.ToolInfo{Name: "ls", ToolType: command.DataCollection, Namespace: "shell"})
	if !bytes.Contains(out, []byte(`"tool_key":"data_collection::ls"`)) {
		t.Errorf("derived key missing: %s", out)
	}
}

func TestHelpers(t *testing.T) {
	r := command.Succeeded("c1", map[string]int{"n": 1})
	if !r.OK() || string(r.Result) != `{"n":1}` || r.CallID != "c1" {
		t.Errorf("%+v", r)
	}
	if r := command.Succeeded("c2", func() {}); r.Status != command.Failure {
		t.Errorf("unencodable payload should fail: %+v", r)
	}
	c := command.Command{ToolName: "ls", Namespace: "shell", Parameters: map[string]any{"a": 1}}
	if c.String() != `shell.ls{"a":1}` || c.Key() != "::ls" {
		t.Errorf("%s %s", c, c.Key())
	}
}

// A result left running in the background is told by its status and its
// payload: UFO's devices may answer status none for a command that ended.
func TestRunningNeedsARunningStatus(t *testing.T) {
	if r := command.Running(command.Status{CallID: "c", Tool: "run", State: command.StateRunning}); !r.Running() {
		t.Errorf("Running's own result: %+v", r)
	}
	for _, r := range []command.Result{
		{Status: command.None, CallID: "c"},
		{Status: command.None, CallID: "c", Result: json.RawMessage(`null`)},
		{Status: command.None, CallID: "c", Result: json.RawMessage(`"ok"`)},
		{Status: command.None, CallID: "c", Result: json.RawMessage(`{"state":"completed"}`)},
		{Status: command.Success, CallID: "c", Result: json.RawMessage(`{"state":"running"}`)},
	} {
		if r.Running() {
			t.Errorf("%s %s taken for a command still running", r.Status, r.Result)
		}
	}
}
