package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func ask(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.System("You are an agent."), llm.User(text)}}
}

func mustComplete(t *testing.T, m *Model, req *llm.Request) *llm.Response {
	t.Helper()
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

const sessionYAML = `
loop: false
replies:
  - text: "I will look around."
    tool_calls:
      - name: execute_command
        arguments: {command: "echo hi", cwd: /tmp}
        id: call_a
      - name: read_file
        arguments: '{"path": "/etc/hosts"'
  - json: {status: FINISH, result: "done <ok> & fine", n: 3, ratio: 0.5, tags: [a, b], none: null, yes: true}
    finish_reason: length
  - text: "` + "```json\\n{\\\"status\\\": \\\"CONTINUE\\\"}\\n```" + `"
    usage: {prompt_tokens: 12, completion_tokens: 5, cached_tokens: 2}
  - error: rate_limit
`

const sessionJSON = `{
	"loop": false,
	"replies": [
		{"text": "I will look around.", "tool_calls": [
			{"name": "execute_command", "arguments": {"command": "echo hi", "cwd": "/tmp"}, "id": "call_a"},
			{"name": "read_file", "arguments": "{\"path\": \"\/etc/hosts\""}
		]},
		{"json": {"status": "FINISH", "result": "done <ok> & fine", "n": 3, "ratio": 0.5, "tags": ["a", "b"], "none": null, "yes": true},
		 "finish_reason": "length"},
		{"text": "` + "```json\\n{\\\"status\\\": \\\"CONTINUE\\\"}\\n```" + `",
		 "usage": {"prompt_tokens": 12, "completion_tokens": 5, "cached_tokens": 2}},
		{"error": "rate_limit"}
	]
}`

// checkSession asserts the replies of sessionYAML / sessionJSON.
func checkSession(t *testing.T, m *Model) {
	t.Helper()
	req := ask("look around")

	first := mustComplete(t, m, req)
	wantCalls := []llm.ToolCall{
		{ID: "call_a", Name: "execute_command", Arguments: `{"command":"echo hi","cwd":"/tmp"}`},
		{ID: "call_1_2", Name: "read_file", Arguments: `{"path": "/etc/hosts"`},
	}
	if first.Message.Role != llm.RoleAssistant || first.Message.Content != "I will look around." ||
		!reflect.DeepEqual(first.Message.ToolCalls, wantCalls) || first.FinishReason != "tool_calls" || first.Model != "scripted" {
		t.Fatalf("reply 1 = %+v", first)
	}

	second := mustComplete(t, m, req)
	wantJSON := `{"status":"FINISH","result":"done <ok> & fine","n":3,"ratio":0.5,"tags":["a","b"],"none":null,"yes":true}`
	if second.Message.Content != wantJSON || second.FinishReason != "length" || second.Message.ToolCalls != nil {
		t.Fatalf("reply 2 = %+v\nwant content %s", second, wantJSON)
	}

	third := mustComplete(t, m, req)
	wantUsage := llm.Usage{PromptTokens: 12, CompletionTokens: 5, CachedTokens: 2, TotalTokens: 17}
	if third.Message.Content != "```json\n{\"status\": \"CONTINUE\"}\n```" || third.Usage != wantUsage || third.FinishReason != "stop" {
		t.Fatalf("reply 3 = %+v", third)
	}

	_, err := m.Complete(context.Background(), req)
	if !errors.Is(err, llm.ErrRateLimit) {
		t.Fatalf("reply 4 error = %v, want a rate limit", err)
	}
	var exhausted *ExhaustedError
	if _, err := m.Complete(context.Background(), req); !errors.As(err, &exhausted) {
		t.Fatalf("call 5 error = %v, want *ExhaustedError", err)
	}
	if m.Count() != 5 || m.Remaining() != 0 {
		t.Fatalf("Count %d Remaining %d, want 5 and 0", m.Count(), m.Remaining())
	}
}

func TestLoadYAML(t *testing.T) {
	m, err := Load(writeFile(t, "session.yaml", sessionYAML))
	if err != nil {
		t.Fatal(err)
	}
	checkSession(t, m)
}

func TestLoadJSON(t *testing.T) {
	m, err := Load(writeFile(t, "session.json", sessionJSON))
	if err != nil {
		t.Fatal(err)
	}
	checkSession(t, m)
}

func TestLoadExample(t *testing.T) {
	m, err := Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resp := mustComplete(t, m, ask("please list the files"))
	if resp.Message.ToolCalls[0].Arguments != `{"command":"ls -la","timeout":5}` {
		t.Fatalf("arguments = %s", resp.Message.ToolCalls[0].Arguments)
	}
	resp = mustComplete(t, m, &llm.Request{Messages: []llm.Message{
		llm.User("please list the files"),
		{Role: llm.RoleTool, Content: "total 3"},
	}})
	if resp.Message.Content != `{"status":"FINISH","result":"3 files","observation":{"count":3,"hidden":false}}` {
		t.Fatalf("content = %s", resp.Message.Content)
	}
}

// TestYAMLValuesAsJSON covers how YAML scalars become JSON content.
func TestYAMLValuesAsJSON(t *testing.T) {
	tests := []struct {
		yaml string
		want string
	}{
		{`{b: 1, a: 2}`, `{"b":1,"a":2}`},
		{`"just a string"`, `"just a string"`},
		{`0x1F`, `31`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`-1.5e3`, `-1.5e3`},
		{`[1, "2", three, ~]`, `[1,"2","three",null]`},
		{`{"quoted key": "x", 7: y}`, `{"quoted key":"x","7":"y"}`},
		{"&anchor {k: v}", `{"k":"v"}`},
		{`{when: 2024-01-02}`, `{"when":"2024-01-02"}`},
		{`"<tag> & \"q\""`, `"<tag> & \"q\""`},
	}
	for _, tt := range tests {
		s, err := Parse([]byte("replies:\n  - json: "+tt.yaml+"\n"), "yaml")
		if err != nil {
			t.Errorf("json: %s: %v", tt.yaml, err)
			continue
		}
		resp := mustComplete(t, New(*s), ask("x"))
		if resp.Message.Content != tt.want {
			t.Errorf("json: %s gave %s, want %s", tt.yaml, resp.Message.Content, tt.want)
		}
	}
}

func TestNewFromGo(t *testing.T) {
	m := New(Script{Replies: []Reply{
		{JSON: map[string]any{"status": "CONTINUE", "note": "a<b"}},
		{ToolCalls: []ToolCall{{Name: "noargs"}, {Name: "typed", Arguments: struct {
			Path string `json:"path"`
		}{"/x"}}}},
	}})
	if got := mustComplete(t, m, ask("x")).Message.Content; got != `{"note":"a<b","status":"CONTINUE"}` {
		t.Fatalf("content = %s", got)
	}
	calls := mustComplete(t, m, ask("x")).Message.ToolCalls
	if calls[0].Arguments != "{}" || calls[1].Arguments != `{"path":"/x"}` {
		t.Fatalf("tool calls = %+v", calls)
	}
}

func TestNewPanicsOnInvalidScript(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(error).Error(), "reply 1") {
			t.Fatalf("recover() = %v, want an error naming reply 1", r)
		}
	}()
	New(Script{Replies: []Reply{{}}})
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		want                []string
	}{
		{"unknown reply key", "s.yaml", "replies:\n  - text: hi\n  - txt: hello\n",
			[]string{"s.yaml", "reply 2", `unknown key "txt"`, "line 3", "valid keys: expect, latency, text"}},
		{"unknown reply key in JSON", "s.json", `{"replies": [{"text": "a"}, {"text": "b"}, {"text": "c", "Latency": "1s"}]}`,
			[]string{"s.json", "reply 3", `unknown key "Latency"`}},
		{"unknown top-level key", "s.yaml", "loops: true\nreplies:\n  - text: hi\n",
			[]string{`unknown key "loops" at the top level`, "line 1"}},
		{"unknown tool-call key", "s.yaml", "replies:\n  - tool_calls:\n      - name: x\n        args: {}\n",
			[]string{"reply 1", "tool call 1", `unknown key "args"`, "line 4"}},
		{"unknown usage key", "s.yaml", "replies:\n  - text: x\n    usage: {total_tokens: 3}\n",
			[]string{"reply 1", `unknown key "total_tokens"`}},
		{"empty reply", "s.yaml", "replies:\n  - text: a\n  - expect: b\n",
			[]string{"reply 2 (line 3)", "the reply is empty"}},
		{"text and json", "s.yaml", "replies:\n  - text: a\n    json: {b: 1}\n",
			[]string{"reply 1", "mutually exclusive"}},
		{"error with text", "s.yaml", "replies:\n  - text: a\n    error: auth\n",
			[]string{"reply 1", "remove text"}},
		{"unknown error kind", "s.yaml", "replies:\n  - error: overloaded\n",
			[]string{`unknown error kind "overloaded"`, "rate_limit"}},
		{"bad latency", "s.yaml", "replies:\n  - text: a\n    latency: 20\n",
			[]string{"reply 1", "latency", "20ms"}},
		{"negative latency", "s.yaml", "replies:\n  - text: a\n    latency: -1s\n",
			[]string{"reply 1", "negative"}},
		{"tool call without name", "s.yaml", "replies:\n  - tool_calls: [{arguments: {}}]\n",
			[]string{"reply 1", "no name"}},
		{"no replies", "s.yaml", "loop: true\n", []string{"no replies"}},
		{"empty file", "s.yaml", "", []string{"empty"}},
		{"replies not a list", "s.yaml", "replies: {text: a}\n", []string{"replies", "want a list"}},
		{"bad YAML", "s.yaml", "replies:\n  - text: [unclosed\n", []string{"s.yaml", "yaml"}},
		{"bad JSON", "s.json", `{"replies": [}`, []string{"s.json", "invalid character"}},
		{"unknown extension", "s.txt", "replies: [{text: a}]", []string{"s.txt", ".yaml, .yml or .json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tt.file, tt.content))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file error = %v", err)
	}
}

func TestScriptRoundTripsThroughJSONTags(t *testing.T) {
	s := Script{Loop: true, Replies: []Reply{{Text: "a", ToolCalls: []ToolCall{{Name: "t", Arguments: map[string]any{"k": 1}}}}}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data, "json")
	if err != nil {
		t.Fatalf("Parse(%s): %v", data, err)
	}
	if !back.Loop || back.Replies[0].Text != "a" || string(back.Replies[0].ToolCalls[0].Arguments.(json.RawMessage)) != `{"k":1}` {
		t.Fatalf("round trip = %+v", back)
	}
}

func TestScriptWithComputerUse(t *testing.T) {
	s, err := Parse([]byte("computer: true\nreplies:\n  - tool_calls:\n      - name: computer\n        arguments: {actions: [{action: click, x: 10, y: 20}]}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := New(*s)
	if !llm.SupportsComputer(m) {
		t.Fatal("computer: true, yet the model has no computer tool")
	}
	resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("go")}, Computer: &llm.Computer{Width: 800, Height: 600}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.ParseComputerCall(resp.Message.ToolCalls[0].Arguments)
	if x, y, _ := c.Actions[0].Point(); err != nil || c.Actions[0].Action != llm.ActClick || x != 10 || y != 20 {
		t.Errorf("call %+v, %v", c, err)
	}
	if got := m.Calls()[0].Computer; got == nil || got.Width != 800 {
		t.Errorf("recorded request's computer %+v", got)
	}
	if llm.SupportsComputer(New(Script{Replies: []Reply{{Text: "a"}}})) {
		t.Error("a script without computer: true claims the tool")
	}
	if _, err := Parse([]byte("computer: maybe\nreplies: [{text: a}]\n"), "yaml"); err == nil || !strings.Contains(err.Error(), "computer") {
		t.Errorf("computer: maybe: %v", err)
	}
}
