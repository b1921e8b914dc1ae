package tokens

import (
	"context"
	"sync"

	"github.com/saucerhq/saucer/llm"
)

// Counted wraps a model so that every reply carries usage: a reply whose
// server reported none (an OpenAI-compatible server that sends no
// `usage`, a stream without it) gets Saucer's count of the request and the
// reply, marked Estimated. Replies with usage pass untouched. model names
// the model for the count (see Count).
func Counted(next llm.Model, model string) llm.Model {
	return &counted{next: next, model: model}
}

type counted struct {
	next  llm.Model
	model string

	mu sync.Mutex
	// seen holds the counts of messages already counted: an agent's
	// requests repeat their history, so each message is encoded once.
	seen map[seenKey]int
}

// seenKey names a counted message (its role, name and text) or tool (role
// empty: its name, and its description and schema as text).
type seenKey struct{ role, name, text string }

// seenLimit bounds the cache (a long run's messages).
const seenLimit = 4096

func (c *counted) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := c.next.Complete(ctx, req)
	return c.fill(req, resp), err
}

func (c *counted) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	resp, err := c.next.Stream(ctx, req, onChunk)
	return c.fill(req, resp), err
}

func (c *counted) fill(req *llm.Request, resp *llm.Response) *llm.Response {
	if resp == nil || resp.Usage.Reported() {
		return resp
	}
	out := *resp // the reply may be shared (a recording's)
	out.Usage = llm.Usage{PromptTokens: c.request(req), CompletionTokens: Message(c.model, resp.Message) - perMessage, Estimated: true}
	out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	return &out
}

func (c *counted) request(req *llm.Request) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen) > seenLimit {
		c.seen = map[seenKey]int{}
	}
	once := func(k seenKey, count func() int) int {
		n, ok := c.seen[k]
		if !ok {
			n = count()
			c.seen[k] = n
		}
		return n
	}
	n := perRequest
	for _, m := range req.Messages {
		if len(m.ToolCalls) > 0 || len(m.Images) > 0 {
			n += Message(c.model, m)
			continue
		}
		n += once(seenKey{string(m.Role), m.Name, m.Content}, func() int { return Message(c.model, m) })
	}
	for _, t := range req.Tools {
		n += once(seenKey{"", t.Name, t.Description + string(t.Parameters)}, func() int {
			return Count(c.model, t.Name) + Count(c.model, t.Description) + Count(c.model, string(t.Parameters))
		})
	}
	return n
}

var _ llm.Model = (*counted)(nil)
