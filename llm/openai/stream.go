package openai

import (
	"encoding/json"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/saucerhq/saucer/llm"
)

// accumulator builds the complete reply from streamed chunks.
//
// Tool-call fragments are matched to calls by index, as OpenAI sends them,
// but servers differ: Ollama has sent no index at all, and some servers send
// index 0 for every one of several parallel calls. So a fragment without an
// index extends the most recent call, and a fragment that carries an id
// different from the call it would extend starts a new call (without ids, a
// name does the same; see startsNewCall). Only the first fragment of a call
// is relied on for its id and name.
//
// Everything grows in builders, each fragment appended once: a reply of
// megabytes in fragments of a few bytes costs time in proportion to its
// length, not to its length times the number of fragments.
type accumulator struct {
	text         strings.Builder
	refusal      strings.Builder
	calls        []*streamCall
	byIndex      map[int]int // stream index → position in calls
	finishReason string
	model        string
	usage        llm.Usage
}

func (a *accumulator) add(chunk goopenai.ChatCompletionStreamResponse, onChunk func(llm.Chunk)) {
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if chunk.Usage != nil {
		a.usage = usage(chunk.Usage)
	}
	// Only the first choice is ever asked for (n is left at 1).
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if d.Content != "" {
			a.text.WriteString(d.Content)
			if onChunk != nil {
				onChunk(llm.Chunk{Text: d.Content})
			}
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			a.addToolCall(tc)
			if onChunk != nil {
				onChunk(llm.Chunk{ToolCall: &llm.ToolCallDelta{
					Index:     tc.Index,
					ID:        tc.ID,
					Name:      tc.Function.Name,
					Arguments: tc.Function.Arguments,
				}})
			}
		}
		if choice.FinishReason != "" && choice.FinishReason != goopenai.FinishReasonNull {
			a.finishReason = string(choice.FinishReason)
		}
	}
}

func (a *accumulator) addToolCall(tc goopenai.ToolCall) {
	pos := -1
	if tc.Index != nil {
		if p, ok := a.byIndex[*tc.Index]; ok {
			pos = p
		}
	} else if len(a.calls) > 0 {
		pos = len(a.calls) - 1
	}
	if pos >= 0 && startsNewCall(a.calls[pos], tc) {
		pos = -1
	}
	if pos < 0 {
		a.calls = append(a.calls, &streamCall{})
		pos = len(a.calls) - 1
		if tc.Index != nil {
			if a.byIndex == nil {
				a.byIndex = map[int]int{}
			}
			a.byIndex[*tc.Index] = pos
		}
	}
	call := a.calls[pos]
	if call.ID == "" {
		call.ID = tc.ID
	}
	// The name comes whole in the first fragment; a server that repeats it
	// in later ones must not double it.
	switch name := tc.Function.Name; {
	case call.Name == "":
		call.Name = name
	case name != "" && name != call.Name && call.args.Len() == 0 && tc.ID == "":
		// A name split across fragments ("execute_", "command"), before
		// any argument came: it continues.
		call.Name += name
	}
	call.add(tc.Function.Arguments)
}

// streamCall is a tool call being streamed: its arguments so far, and
// whether they have come back to the depth they started at (outside any
// string), the only moment they can be a whole JSON value.
type streamCall struct {
	ID, Name string
	args     strings.Builder
	depth    int
	inString bool
	escaped  bool
	balanced bool
}

func (c *streamCall) add(frag string) {
	c.args.WriteString(frag)
	for i := 0; i < len(frag); i++ {
		b := frag[i]
		switch {
		case c.inString && c.escaped:
			c.escaped = false
		case c.inString && b == '\\':
			c.escaped = true
		case b == '"':
			c.inString = !c.inString
		case c.inString:
		case b == '{' || b == '[':
			c.depth++
		case b == '}' || b == ']':
			c.depth--
		}
		if b > ' ' {
			c.balanced = c.depth == 0 && !c.inString
		}
	}
}

// whole reports whether the arguments so far are a complete JSON value.
func (c *streamCall) whole() bool { return c.balanced && json.Valid([]byte(c.args.String())) }

// startsNewCall reports whether fragment tc begins a call other than cur,
// the call its index (or, without one, its position) points at.
func startsNewCall(cur *streamCall, tc goopenai.ToolCall) bool {
	if tc.ID != "" && cur.ID != "" {
		return tc.ID != cur.ID
	}
	// Without ids to compare, a name marks a first fragment: another tool's
	// name, or the same name once cur's arguments are a complete JSON value.
	name := tc.Function.Name
	if tc.ID == "" && cur.args.Len() == 0 && name != cur.Name {
		return false // the rest of a name split across fragments
	}
	return name != "" && cur.Name != "" && (name != cur.Name || cur.whole())
}

func (a *accumulator) response() *llm.Response {
	var calls []llm.ToolCall
	for _, c := range a.calls {
		calls = append(calls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.args.String()})
	}
	out := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: a.text.String(), ToolCalls: calls},
		FinishReason: a.finishReason,
		Model:        a.model,
		Usage:        a.usage,
	}
	if out.Message.Content == "" {
		out.Message.Content = a.refusal.String() // as in Complete
	}
	return out
}
