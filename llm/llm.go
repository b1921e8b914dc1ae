// Package llm is Saucer's narrow view of a language model: a request in, a
// complete response (or a stream of deltas and then the complete response)
// out. Providers live below it (llm/openai, llm/langchain, llm/scripted) so a
// provider SDK can be swapped by changing one package.
//
// A Model is safe for concurrent use; everything per request (messages,
// tools, options) travels in the Request.
package llm

import (
	"context"
	"encoding/json"
)

// Model is a language model.
type Model interface {
	// Complete sends the request and returns the whole reply.
	Complete(ctx context.Context, req *Request) (*Response, error)
	// Stream sends the request, calls onChunk for each delta as it arrives
	// (onChunk may be nil) and returns the whole reply, accumulated. Callers
	// decide what the reply means from the returned Response, never from the
	// first chunk.
	Stream(ctx context.Context, req *Request, onChunk func(Chunk)) (*Response, error)
}

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation: text, optional images (user turns,
// and the tool turn that answers a native computer-use call with its
// screenshot), tool calls (assistant turns) or a tool result (tool turns).
type Message struct {
	Role    Role    `json:"role"`
	Content string  `json:"content,omitempty"`
	Images  []Image `json:"images,omitempty"`
	// ToolCalls are the calls an assistant turn asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool turn to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool turn.
	Name string `json:"name,omitempty"`
	// Acknowledged are the safety checks of a computer call (see
	// ComputerCall) that a person acknowledged, on the tool turn that
	// answers it.
	Acknowledged []SafetyCheck `json:"acknowledged,omitempty"`
}

// Image is a picture attached to a message: a URL (http(s) or data:) or raw
// bytes with their MIME type.
type Image struct {
	URL      string `json:"url,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data,omitempty"`
	// Detail is a provider hint ("low", "high", "auto"); empty means default.
	Detail string `json:"detail,omitempty"`
}

// Tool is a function the model may call; Parameters is a JSON Schema object.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is one call the model asked for. Arguments is the JSON text the
// model wrote, exactly as it wrote it (it may be malformed).
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Raw is the provider's own form of a native call (a computer-use
	// call, whose Arguments are normalized: see ComputerCall), kept for
	// the recording and sent back to that provider as it came.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Request is one call to a model.
type Request struct {
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// ToolChoice is "", "auto", "none", "required" or a tool's name.
	ToolChoice string `json:"tool_choice,omitempty"`
	// JSON asks for a reply that is one JSON object, where the provider can.
	JSON        bool     `json:"json,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	// Computer, when set, offers the model its provider's native
	// computer-use tool beside Tools (see ComputerCall).
	Computer *Computer `json:"computer,omitempty"`
}

// Response is a model's complete reply.
type Response struct {
	// Message is the assistant turn: text and/or tool calls.
	Message      Message `json:"message"`
	Usage        Usage   `json:"usage"`
	FinishReason string  `json:"finish_reason,omitempty"`
	// Model is the model that answered, as the provider names it.
	Model string `json:"model,omitempty"`
	// Spec is the spec (PROVIDER:MODEL) of the model that answered when a
	// Fallback chose it among several, so that its own price applies;
	// empty means the model that was asked.
	Spec string `json:"spec,omitempty"`
}

// Usage counts tokens. CachedTokens is the part of PromptTokens served from
// the provider's prompt cache.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	TotalTokens      int `json:"total_tokens"`
	// Estimated is set when the provider reported no usage and the counts
	// are Saucer's own (llm/tokens): close, not exact. A sum is estimated
	// when any of its parts is.
	Estimated bool `json:"estimated,omitempty"`
}

// Reported reports whether the provider said anything about the tokens: a
// reply to a real request always has prompt tokens, so all zeros means
// the server sent no usage.
func (u Usage) Reported() bool {
	return u.PromptTokens != 0 || u.CompletionTokens != 0 || u.TotalTokens != 0
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		CachedTokens:     u.CachedTokens + o.CachedTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		Estimated:        u.Estimated || o.Estimated,
	}
}

// Chunk is one streamed delta. Text is new reply text; ToolCall, when set, is
// a fragment of a tool call (Index says which, when the provider tells).
type Chunk struct {
	Text     string         `json:"text,omitempty"`
	ToolCall *ToolCallDelta `json:"tool_call,omitempty"`
}

// ToolCallDelta is a fragment of a streamed tool call.
type ToolCallDelta struct {
	Index     *int   `json:"index,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// System, User and Assistant build plain text messages.
func System(text string) Message    { return Message{Role: RoleSystem, Content: text} }
func User(text string) Message      { return Message{Role: RoleUser, Content: text} }
func Assistant(text string) Message { return Message{Role: RoleAssistant, Content: text} }

// ToolResult builds the tool turn that answers call.
func ToolResult(call ToolCall, content string) Message {
	return Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: content}
}
