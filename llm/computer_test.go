package llm_test

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
)

type cuModel struct {
	llm.Model
	cu bool
}

func (m cuModel) SupportsComputer() bool { return m.cu }

func TestComputerCallRoundTrip(t *testing.T) {
	call := llm.ComputerCall{Actions: []llm.ComputerAction{
		llm.ComputerAction{Action: llm.ActClick, Button: "right", Count: 2}.At(10, 0),
		{Action: llm.ActKeys, Keys: []string{"ctrl+s"}},
	}, SafetyChecks: []llm.SafetyCheck{{ID: "cu_sc_1", Code: "malicious_instructions"}}}
	tc := llm.ComputerToolCall("toolu_1", call, []byte(`{"action":"right_click"}`))
	if tc.Name != llm.ComputerTool || string(tc.Raw) != `{"action":"right_click"}` {
		t.Fatalf("tool call %+v", tc)
	}
	got, err := llm.ParseComputerCall(tc.Arguments)
	if err != nil {
		t.Fatal(err)
	}
	x, y, ok := got.Actions[0].Point()
	if !ok || x != 10 || y != 0 || got.Actions[0].Button != "right" || got.Actions[1].Keys[0] != "ctrl+s" || got.SafetyChecks[0].ID != "cu_sc_1" {
		t.Fatalf("parsed %+v", got)
	}
	if _, _, ok := got.Actions[1].Point(); ok {
		t.Fatal("a keys action has no point")
	}
	for args, want := range map[string]string{
		`not json`:                    "not a ComputerCall",
		`{"actions":[]}`:              "no actions",
		`{"actions":[{"x":1}]}`:       "action 1 has no name",
		`{"actions":[{"action":""}]}`: "action 1 has no name",
	} {
		if _, err := llm.ParseComputerCall(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
	}
	if err := (&llm.Computer{Width: 0, Height: 768}).Check(); err == nil || !strings.Contains(err.Error(), "0x768") {
		t.Errorf("a zero width passed: %v", err)
	}
}

func TestSharedPrefixSeesRawAndComputer(t *testing.T) {
	call := llm.ComputerToolCall("c1", llm.ComputerCall{Actions: []llm.ComputerAction{{Action: llm.ActScreenshot}}}, []byte(`{"a":1}`))
	msgs := []llm.Message{llm.User("go"), {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}}
	a := &llm.Request{Messages: msgs, Computer: &llm.Computer{Width: 1024, Height: 768}}
	if shared, total := llm.SharedPrefix(a, a); shared+16 != total {
		t.Fatalf("a request shares %d of %d bytes with itself", shared, total)
	}
	other := call
	other.Raw = []byte(`{"a":2}`)
	b := &llm.Request{Messages: []llm.Message{msgs[0], {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{other}}}, Computer: a.Computer}
	if shared, _ := llm.SharedPrefix(a, b); shared != 2 {
		t.Errorf("a call with another raw form shares %d bytes, want 2 (the first turn)", shared)
	}
	c := &llm.Request{Messages: msgs, Computer: &llm.Computer{Width: 800, Height: 600}}
	if shared, _ := llm.SharedPrefix(a, c); shared != 0 {
		t.Errorf("another display size shares %d bytes, want 0", shared)
	}
}

func TestFallbackSupportsComputerOnlyWhenAllDo(t *testing.T) {
	yes, no := cuModel{cu: true}, cuModel{}
	f := &llm.Fallback{Models: []llm.Named{{Spec: "a", Model: yes}, {Spec: "b", Model: yes}}}
	if !llm.SupportsComputer(f) {
		t.Error("two models with computer use: the fallback has it")
	}
	f.Models = append(f.Models, llm.Named{Spec: "c", Model: no})
	if llm.SupportsComputer(f) {
		t.Error("a fallback to a model without computer use claims it")
	}
}
