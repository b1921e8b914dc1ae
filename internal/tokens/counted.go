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
	// count remembers the messages it counted: an agent's requests repeat
	// their history, so each message is encoded once.
	count Counter
}

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
	c.count.Model = c.model
	return c.count.Request(req)
}

var _ llm.Model = (*counted)(nil)

// SupportsComputer passes on whether the model has a native computer-use
// tool (llm.ComputerUser).
func (c *counted) SupportsComputer() bool { return llm.SupportsComputer(c.next) }
