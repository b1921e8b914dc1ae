package strategy

import (
	"reflect"
	"testing"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/prompts"
)

// TestOneArgumentParser: the agent reads every tool call's arguments the
// way the step-level evaluator does (prompts.ParseArguments), with the
// same repairs and the same refusals.
func TestOneArgumentParser(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want map[string]any // nil: refused
	}{
		{`{"path":"a.txt"}`, map[string]any{"path": "a.txt"}},
		{``, map[string]any{}},
		{`null`, map[string]any{}},
		{`"{\"path\":\"a.txt\"}"`, map[string]any{"path": "a.txt"}}, // encoded twice
		{`{"path":"a.txt",}`, map[string]any{"path": "a.txt"}},      // trailing comma
		{`{'path': 'a.txt'}`, map[string]any{"path": "a.txt"}},      // single quotes
		{`{"force": True}`, map[string]any{"force": true}},          // a Python literal
		{`{"path":"C:\\temp\\a.txt"}`, map[string]any{"path": `C:\temp\a.txt`}},
		{`["a.txt"]`, nil},
		{`42`, nil},
		{`"a.txt"`, nil},
		{`"\"{\\\"path\\\":1}\""`, nil}, // encoded three times
	} {
		evalArgs, evalErr := prompts.ParseArguments(tt.raw)
		pc := NewContext(Setup{Agent: Agent{Role: fsm.App, App: "files"}})
		d, err := decideTools(pc, llm.Message{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: tt.raw}}})
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		a := d.Actions[0]
		if tt.want == nil {
			if evalErr == nil || a.Invalid == "" {
				t.Errorf("%s: accepted (agent %v, evaluator %v)", tt.raw, a.Arguments, evalArgs)
			}
			continue
		}
		if evalErr != nil || a.Invalid != "" {
			t.Errorf("%s: refused (agent %q, evaluator %v)", tt.raw, a.Invalid, evalErr)
			continue
		}
		if !reflect.DeepEqual(a.Arguments, tt.want) || !reflect.DeepEqual(evalArgs, tt.want) {
			t.Errorf("%s: agent %v, evaluator %v, want %v", tt.raw, a.Arguments, evalArgs, tt.want)
		}
	}
}
