package llm_test

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
)

// A reply acts only when it ended normally; any other end, known or not,
// is refused with the reason named.
func TestUnfinished(t *testing.T) {
	for _, reason := range []string{"", "stop", "tool_calls", "function_call", "end_turn", "tool_use", "stop_sequence"} {
		if why := llm.Unfinished(&llm.Response{FinishReason: reason}); why != "" {
			t.Errorf("finish %q is a normal end, but the reply was refused: %s", reason, why)
		}
	}
	for _, reason := range []string{"error", "length", "content_filter", "incomplete", "tool_call_cut", "pause_turn", "refusal", "max_tokens", "something_new"} {
		r := &llm.Response{FinishReason: reason, Message: llm.Message{ToolCalls: []llm.ToolCall{{ID: "c", Name: "execute_command", Arguments: `{"command":"rm -rf keep"}`}}}}
		why := llm.Unfinished(r)
		if why == "" || !strings.Contains(why, "none of it was run") {
			t.Errorf("finish %q: a reply that did not end normally was taken as one (%q)", reason, why)
		}
		if reason != llm.FinishIncomplete && reason != llm.FinishToolCallCut && !strings.Contains(why, `"`+reason+`"`) {
			t.Errorf("finish %q: the model is not told which reason: %s", reason, why)
		}
	}
	if llm.Unfinished(nil) != "" {
		t.Error("a nil response is not an unfinished one")
	}
}
