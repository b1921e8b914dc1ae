package llm

import "fmt"

// Finish reasons, as providers are normalised to report them.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"         // the output token limit cut the reply (OpenAI length, Anthropic max_tokens)
	FinishContentFilter = "content_filter" // the provider's filter stopped the reply
	// FinishIncomplete marks a streamed reply whose stream ended before
	// the provider said it was done: cut off in transit.
	FinishIncomplete = "incomplete"
	// FinishToolCallCut marks a reply whose provider SDK refused a tool
	// call because its arguments were not complete JSON (langchaingo's
	// Anthropic stream does, losing the rest of the reply): cut off,
	// whatever the provider said about the end.
	FinishToolCallCut = "tool_call_cut"
)

// Normal reports whether a finish reason is a normal end of a reply, one
// that may be acted on: OpenAI's "stop", "tool_calls" and the legacy
// "function_call", Anthropic's "end_turn", "tool_use" and "stop_sequence"
// (for a provider that passes them on unchanged), and "" from a provider
// that sends no reason at all (some OpenAI-compatible servers answering
// without streaming). Everything else is not: "error", "length",
// "content_filter", "pause_turn", "refusal", a reason no one has seen yet.
func Normal(reason string) bool {
	switch reason {
	case "", FinishStop, FinishToolCalls, "function_call", "end_turn", "tool_use", "stop_sequence":
		return true
	}
	return false
}

// Unfinished says why a reply must not be acted on, or "" when it ended
// normally (see Normal): a reply cut at the token limit, stopped by a
// content filter, cut off in transit or ended for any other reason (a
// provider's "error" after a tool call that looks complete) may hold half a
// command (`rm -rf keep` for `rm -rf keep/tmp`), so nothing of it runs. The
// text is what the model is told when it is asked again.
func Unfinished(r *Response) string {
	if r == nil {
		return ""
	}
	switch r.FinishReason {
	case FinishLength:
		return fmt.Sprintf("Your last reply was cut off at the output token limit (finish reason %q) before it was complete, so none of it was run.", r.FinishReason) +
			" Reply again, shorter: fewer or smaller tool calls, less text."
	case FinishContentFilter:
		return fmt.Sprintf("The provider's content filter stopped your last reply (finish reason %q), so none of it was run.", r.FinishReason) +
			" Reply again without that content, or fail the task if it cannot be done without it."
	case FinishIncomplete:
		return "The connection ended before your last reply was complete, so none of it was run. Reply again."
	case FinishToolCallCut:
		return "Your last reply was cut off inside a tool call's arguments (they end before their strings and brackets close), so none of it was run." +
			" Reply again, with shorter arguments if they were long."
	}
	if Normal(r.FinishReason) {
		return ""
	}
	return fmt.Sprintf("Your last reply did not end normally (finish reason %q), so none of it was run, not even the tool calls that looked complete.", r.FinishReason) +
		" Reply again."
}

// FixCallIDs gives every tool call an id, and each its own, in place: some
// servers send none, or the same for two calls, and a tool's result must
// find its call. Assigned ids are stable: call_1, call_2, ... by position.
func FixCallIDs(calls []ToolCall) {
	seen := map[string]bool{}
	for i := range calls {
		id := calls[i].ID
		if id == "" || seen[id] {
			id = fmt.Sprintf("call_%d", i+1)
			for seen[id] {
				id += "_"
			}
			calls[i].ID = id
		}
		seen[id] = true
	}
}
