package strategy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
)

func TestDecideTools(t *testing.T) {
	app := NewContext(Setup{Agent: Agent{Role: fsm.App, App: "files"}, Mode: ModeTools})
	host := NewContext(Setup{Agent: Agent{Role: fsm.Host}, Mode: ModeTools})
	call := func(name, args string) llm.ToolCall {
		return llm.ToolCall{ID: "c_" + name, Name: name, Arguments: args}
	}
	cases := []struct {
		name    string
		pc      *Context
		msg     llm.Message
		status  fsm.State
		result  string
		actions int
		invalid string // substring of the first action's Invalid
	}{
		{"action", app, llm.Message{Content: "thinking", ToolCalls: []llm.ToolCall{call("read_file", `{"path":"a"}`)}}, fsm.Continue, "", 1, ""},
		{"finish", app, llm.Message{ToolCalls: []llm.ToolCall{call("finish_task", `{"result":"done"}`)}}, fsm.Finish, "done", 0, ""},
		{"fail", app, llm.Message{ToolCalls: []llm.ToolCall{call("fail_task", `{"reason":"no way"}`)}}, fsm.Fail, "no way", 0, ""},
		{"act and finish", app, llm.Message{ToolCalls: []llm.ToolCall{call("write_file", `{"path":"a","content":"b"}`), call("finish_task", `{"result":"ok"}`)}}, fsm.Finish, "ok", 1, ""},
		{"text only is the answer", app, llm.Message{Content: "<think>hmm</think>It is 42."}, fsm.Finish, "It is 42.", 0, ""},
		{"repaired arguments", app, llm.Message{ToolCalls: []llm.ToolCall{call("read_file", `{'path': 'a',}`)}}, fsm.Continue, "", 1, ""},
		{"hopeless arguments", app, llm.Message{ToolCalls: []llm.ToolCall{call("read_file", `path=a`)}}, fsm.Continue, "", 1, "not a JSON object"},
		{"app cannot assign", app, llm.Message{ToolCalls: []llm.ToolCall{call("assign_subtask", `{"app":"x","subtask":"y"}`)}}, fsm.Continue, "", 1, "cannot call assign_subtask"},
		{"host assigns", host, llm.Message{ToolCalls: []llm.ToolCall{call("assign_subtask", `{"app":"files","subtask":"y"}`)}}, fsm.Assign, "", 1, ""},
		{"host cannot act", host, llm.Message{ToolCalls: []llm.ToolCall{call("read_file", `{}`)}}, fsm.Assign, "", 1, "cannot run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := decide(c.pc, c.msg)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != c.status || d.Result != c.result || len(d.Actions) != c.actions {
				t.Fatalf("got %+v", d)
			}
			if c.invalid != "" && !strings.Contains(d.Actions[0].Invalid, c.invalid) {
				t.Errorf("invalid %q", d.Actions[0].Invalid)
			}
			if c.invalid == "" && c.actions > 0 && d.Actions[0].Invalid != "" {
				t.Errorf("unexpected invalid %q", d.Actions[0].Invalid)
			}
		})
	}
	if _, err := decide(app, llm.Message{}); err == nil {
		t.Error("an empty reply was accepted")
	}
}

// TestDecideRefusesCutArguments: a reply any of whose tool calls has
// arguments that end before their strings and brackets close is refused
// whole, whichever call was cut and whatever came with it; the reason
// names the call and shows where it ends.
func TestDecideRefusesCutArguments(t *testing.T) {
	app := NewContext(Setup{Agent: Agent{Role: fsm.App, App: "shell"}, Mode: ModeTools})
	host := NewContext(Setup{Agent: Agent{Role: fsm.Host}, Mode: ModeTools})
	call := func(name, args string) llm.ToolCall {
		return llm.ToolCall{ID: "c_" + name, Name: name, Arguments: args}
	}
	cut := call("execute_command", `{"command":"rm -rf keep`)
	for _, c := range []struct {
		name string
		pc   *Context
		msg  llm.Message
	}{
		{"alone", app, llm.Message{ToolCalls: []llm.ToolCall{cut}}},
		{"after a whole call", app, llm.Message{ToolCalls: []llm.ToolCall{call("execute_command", `{"command":"ls"}`), cut}}},
		{"before finish", app, llm.Message{Content: "done soon", ToolCalls: []llm.ToolCall{cut, call("finish_task", `{"result":"ok"}`)}}},
		{"a cut finish", app, llm.Message{ToolCalls: []llm.ToolCall{call("finish_task", `{"result":"removed keep/tm`)}}},
		{"a cut question", app, llm.Message{ToolCalls: []llm.ToolCall{call("ask_user", `{"question":"may I remove`)}}},
		{"a cut assignment", host, llm.Message{ToolCalls: []llm.ToolCall{call("assign_subtask", `{"app":"shell","subtask":"remove keep/t`)}}},
		{"cut between members", app, llm.Message{ToolCalls: []llm.ToolCall{call("execute_command", `{"command":"rm -rf keep",`)}}},
		{"cut in a twice-encoded object", app, llm.Message{ToolCalls: []llm.ToolCall{call("execute_command", `"{\"command\":\"rm -rf keep"`)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := decide(c.pc, c.msg)
			if err == nil {
				t.Fatalf("a reply with cut arguments was accepted: %+v", d)
			}
			for _, want := range []string{"cut off", "none of your reply was run"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("reason %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestResultText(t *testing.T) {
	ok := command.Succeeded("1", map[string]any{"stdout": "hi"})
	if got := ResultText(ok, 0); got != `{"stdout":"hi"}` {
		t.Errorf("success %q", got)
	}
	str := command.Succeeded("1", "plain text")
	if got := ResultText(str, 0); got != "plain text" {
		t.Errorf("string payload %q", got)
	}
	if got := ResultText(command.Failed("1", "no such file"), 0); got != "failure: no such file" {
		t.Errorf("failure %q", got)
	}
	long := command.Result{Status: command.Success, Result: json.RawMessage(`"` + strings.Repeat("é", 100) + `"`)}
	got := ResultText(long, 51)
	if !strings.Contains(got, "[truncated") || !strings.HasPrefix(got, strings.Repeat("é", 25)+"\n") {
		t.Errorf("truncation %q", got)
	}
}
