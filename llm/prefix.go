package llm

import "slices"

// SharedPrefix measures how much of req repeats the start of prev, the way
// a provider's prompt cache sees a request: the tools, then the messages,
// in order, up to the first difference (within a message's text, to the
// byte). It returns the bytes of req that prev already had and req's size,
// both counted over the text that reaches the model (names, descriptions,
// schemas, contents, tool calls). It allocates nothing.
func SharedPrefix(prev, req *Request) (shared, total int) {
	total = requestBytes(req)
	if prev == nil {
		return 0, total
	}
	for i, t := range req.Tools {
		if i >= len(prev.Tools) || !sameTool(prev.Tools[i], t) {
			return shared, total
		}
		shared += toolBytes(t)
	}
	if len(prev.Tools) != len(req.Tools) || !sameComputer(prev.Computer, req.Computer) {
		return shared, total
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		if i >= len(prev.Messages) {
			return shared, total
		}
		p := &prev.Messages[i]
		if p.Role != m.Role || p.Name != m.Name || p.ToolCallID != m.ToolCallID || len(p.Images) != len(m.Images) {
			return shared, total
		}
		if p.Content != m.Content || !slices.EqualFunc(p.ToolCalls, m.ToolCalls, sameCall) || !slices.EqualFunc(p.Images, m.Images, sameImage) {
			return shared + commonPrefix(p.Content, m.Content), total
		}
		shared += messageBytes(m)
	}
	return shared, total
}

func sameImage(a, b Image) bool {
	return a.URL == b.URL && a.MIMEType == b.MIMEType && a.Detail == b.Detail && string(a.Data) == string(b.Data)
}

func sameComputer(a, b *Computer) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func sameCall(a, b ToolCall) bool { return a.Equal(b) }

// Equal reports whether two tool calls are the same, their provider's
// own form (Raw) included.
func (c ToolCall) Equal(o ToolCall) bool {
	return c.ID == o.ID && c.Name == o.Name && c.Arguments == o.Arguments && string(c.Raw) == string(o.Raw)
}

func sameTool(a, b Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && string(a.Parameters) == string(b.Parameters)
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func toolBytes(t Tool) int { return len(t.Name) + len(t.Description) + len(t.Parameters) }

func messageBytes(m *Message) int {
	n := len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments) + len(c.Raw)
	}
	for _, im := range m.Images {
		n += len(im.URL) + len(im.Data)
	}
	return n
}

func requestBytes(r *Request) int {
	n := 0
	for _, t := range r.Tools {
		n += toolBytes(t)
	}
	for i := range r.Messages {
		n += messageBytes(&r.Messages[i])
	}
	if r.Computer != nil {
		n += 16 // the native tool's declaration: a type and a size
	}
	return n
}

// Equal reports whether two messages are the same turn, field by field.
func (m Message) Equal(o Message) bool {
	return m.Role == o.Role && m.Content == o.Content && m.Name == o.Name && m.ToolCallID == o.ToolCallID &&
		slices.EqualFunc(m.ToolCalls, o.ToolCalls, sameCall) && slices.EqualFunc(m.Images, o.Images, sameImage) &&
		slices.Equal(m.Acknowledged, o.Acknowledged)
}

// Equal reports whether two tools are the same.
func (t Tool) Equal(o Tool) bool { return sameTool(t, o) }
