package tokens

import (
	"testing"

	"github.com/saucerhq/saucer/llm"
)

func TestCounterCountsAsRequest(t *testing.T) {
	req := &llm.Request{
		Messages: []llm.Message{llm.System("You run shell commands."), llm.User("List /etc."),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "execute_command", Arguments: `{"command":"ls /etc"}`}}}},
		Tools: []llm.Tool{{Name: "execute_command", Description: "Runs a command.", Parameters: []byte(`{"type":"object"}`)}},
	}
	var c Counter
	want := Request("", req)
	for i := range 2 { // the second time from what it remembers
		if got := c.Request(req); got != want {
			t.Fatalf("count %d: %d tokens, want %d as Request counts", i+1, got, want)
		}
	}
	// A message with the same text and other tool calls is another message.
	other := *req
	other.Messages = append([]llm.Message(nil), req.Messages...)
	other.Messages[2].ToolCalls = []llm.ToolCall{{ID: "c1", Name: "execute_command", Arguments: `{"command":"ls -la /usr/share/doc"}`}}
	if got, want := c.Request(&other), Request("", &other); got != want {
		t.Errorf("other tool calls: %d tokens, want %d", got, want)
	}
}

func TestCounterRepeated(t *testing.T) {
	sys, task := llm.System("You run shell commands for the user."), llm.User("List the folders of /etc one at a time.")
	prev := &llm.Request{Messages: []llm.Message{sys, task, llm.User("Step 1 of 20.")}}
	next := &llm.Request{Messages: []llm.Message{sys, task, llm.Assistant("Listing /etc."), llm.User("Step 2 of 20.")}}
	var c Counter
	if got := c.Repeated(nil, next); got != 0 {
		t.Errorf("after no request: %d tokens repeated, want 0", got)
	}
	// The system and task turns repeat whole; the assistant turn differs
	// from the user turn "Step 1 of 20." from its role on.
	want := perMessage*2 + Count("", sys.Content) + Count("", task.Content)
	if got := c.Repeated(prev, next); got != want {
		t.Errorf("%d tokens repeated, want %d", got, want)
	}
	// A turn that differs within its text repeats up to there.
	same := &llm.Request{Messages: []llm.Message{sys, task, llm.User("Step 1 of 21.")}}
	want = perMessage*2 + Count("", sys.Content) + Count("", task.Content) + perMessage - 1 + len(enc().EncodeOrdinary("Step 1 of "))
	if got := c.Repeated(prev, same); got != want {
		t.Errorf("a turn differing within: %d tokens repeated, want %d", got, want)
	}
	// Other tools change the start of the request: nothing repeats.
	withTools := &llm.Request{Messages: next.Messages, Tools: []llm.Tool{{Name: "read_artifact"}}}
	if got := c.Repeated(prev, withTools); got != 0 {
		t.Errorf("with other tools: %d tokens repeated, want 0", got)
	}
	// A request repeated whole repeats its every token but the request's own.
	if got, want := c.Repeated(next, next), c.Request(next)-perRequest; got != want {
		t.Errorf("the same request: %d repeated, want %d", got, want)
	}
}
