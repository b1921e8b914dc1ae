package tokens

import (
	"slices"
	"strings"

	"github.com/saucerhq/saucer/llm"
)

// Counter counts requests as Request does, remembering what it has
// counted: an agent's requests repeat their history, so each message and
// tool is encoded once. Repeated says how much of a request repeats an
// earlier one, what a provider's prompt cache could hold. Not safe for
// concurrent use.
type Counter struct {
	// Model names the model for the counts (see Count).
	Model string
	seen  map[seenKey]int
}

// seenKey names a counted message (its role, name and text, with its tool
// calls) or tool (role empty: its name, and its description and schema as
// text).
type seenKey struct{ role, name, text string }

// seenLimit bounds the memory of a Counter (a long run's messages).
const seenLimit = 4096

func (c *Counter) once(k seenKey, count func() int) int {
	if n, ok := c.seen[k]; ok {
		return n
	}
	if c.seen == nil || len(c.seen) >= seenLimit {
		c.seen = map[seenKey]int{}
	}
	n := count()
	c.seen[k] = n
	return n
}

func (c *Counter) message(m *llm.Message) int {
	if len(m.Images) > 0 {
		return Message(c.Model, *m)
	}
	text := m.Content
	if len(m.ToolCalls) > 0 {
		var b strings.Builder
		b.WriteString(m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString("\x00" + tc.Name + "\x00" + tc.Arguments)
		}
		text = b.String()
	}
	return c.once(seenKey{string(m.Role), m.Name, text}, func() int { return Message(c.Model, *m) })
}

func (c *Counter) tool(t *llm.Tool) int {
	return c.once(seenKey{"", t.Name, t.Description + string(t.Parameters)}, func() int {
		return Count(c.Model, t.Name) + Count(c.Model, t.Description) + Count(c.Model, string(t.Parameters))
	})
}

// Request is how many prompt tokens req takes (see the function Request).
func (c *Counter) Request(req *llm.Request) int {
	n := perRequest
	for i := range req.Messages {
		n += c.message(&req.Messages[i])
	}
	for i := range req.Tools {
		n += c.tool(&req.Tools[i])
	}
	return n
}

// Repeated is how many of req's prompt tokens repeat prev from the start,
// token for token: the part of req that a provider's prompt cache could
// hold after prev. Providers lay out the tools first, then the messages;
// the first message that differs counts up to its first differing token.
// A nil prev repeats nothing.
func (c *Counter) Repeated(prev, req *llm.Request) int {
	if prev == nil {
		return 0
	}
	n := 0
	for i := range req.Tools {
		if i >= len(prev.Tools) || !sameTool(&prev.Tools[i], &req.Tools[i]) {
			return n
		}
		n += c.tool(&req.Tools[i])
	}
	if len(prev.Tools) != len(req.Tools) {
		return n
	}
	for i := range req.Messages {
		if i >= len(prev.Messages) {
			return n
		}
		p, m := &prev.Messages[i], &req.Messages[i]
		if p.Role != m.Role || p.Name != m.Name || p.ToolCallID != m.ToolCallID {
			return n
		}
		if len(p.Images) == 0 && len(m.Images) == 0 && p.Content == m.Content && slices.EqualFunc(p.ToolCalls, m.ToolCalls, llm.ToolCall.Equal) {
			n += c.message(m)
			continue
		}
		// The role's tokens, then the text up to where it differs.
		n += perMessage - 1
		if p.Content != m.Content {
			return n + commonTokens(p.Content, m.Content)
		}
		return n + Count(c.Model, m.Content)
	}
	return n
}

func sameTool(a, b *llm.Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && string(a.Parameters) == string(b.Parameters)
}

// commonTokens is how many tokens a and b's encodings share from the start.
func commonTokens(a, b string) int {
	ta, tb := enc().EncodeOrdinary(a), enc().EncodeOrdinary(b)
	k := 0
	for k < len(ta) && k < len(tb) && ta[k] == tb[k] {
		k++
	}
	return k
}
