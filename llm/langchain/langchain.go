// Package langchain adapts any langchaingo llms.Model (Anthropic, Google,
// Bedrock, Mistral, Ollama, ...) to Saucer's llm.Model, and builds the
// Anthropic one ready to use (NewAnthropic).
//
// What a reply can carry is what langchaingo passes on. In particular its
// Anthropic provider ignores tool choice and JSON mode, always sends a
// temperature (0 when the request sets none), streams only text (tool calls
// arrive with the final reply and are handed to onChunk then), and re-encodes
// tool-call arguments from the decoded JSON, so they are equal as JSON but
// not byte for byte to what the model wrote.
package langchain

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

// Model is an llm.Model over a langchaingo model. It is safe for concurrent
// use when the wrapped model is (langchaingo's providers are).
type Model struct {
	inner    llms.Model
	provider string
	// modelName answers Response.Model, which langchaingo does not report.
	modelName string
	// onePartPerAssistantTurn sends each text and tool call of an assistant
	// turn as its own message: langchaingo's Anthropic provider reads only
	// the first part of an assistant message, and the Messages API joins
	// consecutive turns of one role back together.
	onePartPerAssistantTurn bool
	// apiKey, when known, is scrubbed from error text.
	apiKey string
	// timeouts, when the HTTP client is ours, name the bounds in errors.
	timeouts llm.Timeouts
	// native, for an Anthropic model, sends computer-use requests
	// (Request.Computer) straight to the Messages API: see computer.go.
	native *native
}

var _ llm.Model = (*Model)(nil)

// New wraps m; provider names it in errors ("anthropic", "googleai", ...).
func New(m llms.Model, provider string) *Model {
	return &Model{inner: m, provider: provider}
}

// Complete sends req and returns the whole reply.
func (m *Model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return m.generate(ctx, req, nil)
}

// Stream sends req, hands each text delta to onChunk as it arrives and
// returns the whole reply. Tool calls are handed to onChunk whole, once the
// reply is complete, because langchaingo streams text only.
func (m *Model) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	if onChunk == nil {
		onChunk = func(llm.Chunk) {}
	}
	resp, err := m.generate(ctx, req, func(_ context.Context, chunk []byte) error {
		if len(chunk) > 0 {
			onChunk(llm.Chunk{Text: string(chunk)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, tc := range resp.Message.ToolCalls {
		onChunk(llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: &i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}})
	}
	return resp, nil
}

func (m *Model) generate(ctx context.Context, req *llm.Request, stream func(context.Context, []byte) error) (*llm.Response, error) {
	if req == nil {
		return nil, m.badRequest("nil request")
	}
	if req.Computer != nil {
		if m.native == nil {
			return nil, m.badRequest(m.provider + " has no native computer-use tool: offer the desktop's tools instead (agent.computer_use: off)")
		}
		return m.completeComputer(ctx, req, stream)
	}
	msgs, err := m.messages(req.Messages)
	if err != nil {
		return nil, err
	}
	opts, err := m.callOptions(req)
	if err != nil {
		return nil, err
	}
	if stream != nil {
		opts = append(opts, llms.WithStreamingFunc(stream))
	}
	ctx, meta := httpmeta.With(ctx)
	cr, err := m.inner.GenerateContent(ctx, msgs, opts...)
	if stream != nil && meta.Cut && (err == nil || errors.Is(err, anthropic.ErrEmptyResponse)) {
		// The stream closed before the provider said the reply was done
		// (langchaingo reports that as an empty reply): it was cut off in
		// transit, and nothing of it may act.
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, Model: m.modelName, FinishReason: llm.FinishIncomplete}, nil
	}
	if err != nil && stream != nil && cutToolInput(err) {
		// langchaingo decodes a streamed tool call's input when its block
		// ends and fails the whole reply when it is not complete JSON
		// (cut at max_tokens, or by a server that says end_turn). It is a
		// reply that cannot be used, not a failure of the provider: the
		// model is told and asked again.
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, Model: m.modelName, FinishReason: llm.FinishToolCallCut}, nil
	}
	if err != nil {
		return nil, m.mapError(ctx, err, meta)
	}
	resp := m.response(cr)
	if resp.Message.Content == "" && len(resp.Message.ToolCalls) == 0 && llm.Unfinished(resp) == "" {
		return nil, &llm.Error{Kind: llm.KindEmptyReply, Provider: m.provider,
			Message: fmt.Sprintf("no text and no tool calls (stop reason %q)", resp.FinishReason)}
	}
	return resp, nil
}

func (m *Model) badRequest(msg string) error {
	return &llm.Error{Kind: llm.KindBadRequest, Provider: m.provider, Message: msg}
}

// messages maps Saucer messages onto langchaingo's.
func (m *Model) messages(in []llm.Message) ([]llms.MessageContent, error) {
	var out []llms.MessageContent
	for i, msg := range in {
		if len(msg.Images) > 0 && msg.Role != llm.RoleUser {
			return nil, m.badRequest(fmt.Sprintf("message %d: a %s message carries images: only user messages may", i, msg.Role))
		}
		switch msg.Role {
		case llm.RoleSystem:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, msg.Content))
		case llm.RoleUser:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeHuman}
			if msg.Content != "" || len(msg.Images) == 0 {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: msg.Content})
			}
			for j, img := range msg.Images {
				part, err := imagePart(img)
				if err != nil {
					return nil, m.badRequest(fmt.Sprintf("message %d, image %d: %v", i, j, err))
				}
				mc.Parts = append(mc.Parts, part)
			}
			out = append(out, mc)
		case llm.RoleAssistant:
			var parts []llms.ContentPart
			if msg.Content != "" {
				parts = append(parts, llms.TextContent{Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				args := tc.Arguments
				if m.onePartPerAssistantTurn && !isJSONObject(args) {
					// Anthropic's tool_use input must be an object and
					// langchaingo fails the whole request on anything
					// else; the model already got an error result for
					// such a call, so an empty input loses nothing.
					args = "{}"
				}
				parts = append(parts, llms.ToolCall{ID: tc.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: args}})
			}
			if len(parts) == 0 {
				parts = append(parts, llms.TextContent{})
			}
			if m.onePartPerAssistantTurn {
				for _, p := range parts {
					out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{p}})
				}
			} else {
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
			}
		case llm.RoleTool:
			if msg.ToolCallID == "" {
				return nil, m.badRequest(fmt.Sprintf("message %d: a tool message has no tool_call_id: build it with llm.ToolResult", i))
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: msg.ToolCallID, Name: msg.Name, Content: msg.Content},
			}})
		default:
			return nil, m.badRequest(fmt.Sprintf("message %d: unknown role %q: use system, user, assistant or tool", i, msg.Role))
		}
	}
	return out, nil
}

// cutToolInput reports whether err is langchaingo failing to decode a
// streamed tool call's input (its only JSON decode of model text).
func cutToolInput(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && strings.Contains(err.Error(), "unmarshal input data")
}

func isJSONObject(s string) bool {
	var v map[string]any
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}

// imagePart gives a langchaingo part for an image. Bytes, and data: URLs
// decoded to bytes, travel as BinaryContent, which every langchaingo
// provider with vision takes; only http(s) URLs stay URLs.
func imagePart(img llm.Image) (llms.ContentPart, error) {
	if img.URL == "" {
		if len(img.Data) == 0 {
			return nil, fmt.Errorf("neither URL nor Data is set")
		}
		mime := img.MIMEType
		if mime == "" {
			mime = sniffImage(img.Data)
		}
		return llms.BinaryContent{MIMEType: mime, Data: img.Data}, nil
	}
	if strings.HasPrefix(img.URL, "data:") {
		mime, data, err := decodeDataURL(img.URL)
		if err != nil {
			return nil, err
		}
		return llms.BinaryContent{MIMEType: mime, Data: data}, nil
	}
	if u, err := url.Parse(img.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("image URL %q: want http(s) or data:", img.URL)
	}
	return llms.ImageURLContent{URL: img.URL, Detail: img.Detail}, nil
}

// decodeDataURL reads a base64 data: URL ("data:image/png;base64,...").
func decodeDataURL(s string) (mime string, data []byte, err error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return "", nil, fmt.Errorf("data: URL is not base64-encoded (want data:MIME;base64,...)")
	}
	data, err = base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, fmt.Errorf("data: URL: %w", err)
	}
	mime = strings.TrimSuffix(meta, ";base64")
	if mime == "" {
		mime = sniffImage(data)
	}
	return mime, data, nil
}

func (m *Model) callOptions(req *llm.Request) ([]llms.CallOption, error) {
	var opts []llms.CallOption
	if len(req.Tools) > 0 {
		tools := make([]llms.Tool, 0, len(req.Tools))
		for _, t := range req.Tools {
			params := map[string]any{"type": "object", "properties": map[string]any{}}
			if len(t.Parameters) > 0 {
				params = nil
				if err := json.Unmarshal(t.Parameters, &params); err != nil || params == nil {
					return nil, m.badRequest(fmt.Sprintf("tool %q: parameters are not a JSON object schema: %v", t.Name, err))
				}
			}
			tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: t.Name, Description: t.Description, Parameters: params,
			}})
		}
		opts = append(opts, llms.WithTools(tools))
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		opts = append(opts, llms.WithToolChoice(req.ToolChoice))
	default:
		opts = append(opts, llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: req.ToolChoice}}))
	}
	if req.JSON {
		opts = append(opts, llms.WithJSONMode())
	}
	if req.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*req.Temperature))
	}
	if req.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(req.MaxTokens))
	}
	if len(req.Stop) > 0 {
		opts = append(opts, llms.WithStopWords(req.Stop))
	}
	return opts, nil
}

// response joins the choices into one reply. langchaingo's Anthropic
// provider returns one choice per content block (text, tool_use, ...), so
// they are parts of one answer, not alternatives; Saucer never asks for
// alternatives from other providers, so they return a single choice.
func (m *Model) response(cr *llms.ContentResponse) *llm.Response {
	out := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, Model: m.modelName}
	var text strings.Builder
	for _, c := range cr.Choices {
		if c == nil {
			continue
		}
		text.WriteString(c.Content)
		for _, tc := range c.ToolCalls {
			if tc.FunctionCall == nil {
				continue
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments})
		}
		if len(c.ToolCalls) == 0 && c.FuncCall != nil {
			out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{Name: c.FuncCall.Name, Arguments: c.FuncCall.Arguments})
		}
		if c.StopReason != "" {
			out.FinishReason = finishReason(c.StopReason)
		}
		if out.Usage == (llm.Usage{}) {
			out.Usage = usage(c.GenerationInfo)
		}
	}
	out.Message.Content = text.String()
	return out
}

// finishReason speaks OpenAI's words for Anthropic's and Google's reasons,
// so callers can test for "length" or "tool_calls" whatever the provider.
func finishReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence", "STOP":
		return "stop"
	case "max_tokens", "MAX_TOKENS":
		return llm.FinishLength
	case "refusal", "SAFETY":
		return llm.FinishContentFilter
	case "tool_use":
		return "tool_calls"
	}
	return r
}

// usage reads token counts from GenerationInfo, whose keys differ by
// provider: Anthropic reports input tokens without the cached ones, OpenAI
// and Ollama report prompt tokens including them, Bedrock uses snake case.
func usage(info map[string]any) llm.Usage {
	var u llm.Usage
	if _, ok := info["InputTokens"]; ok {
		cacheRead := intValue(info["CacheReadInputTokens"])
		prompt := intValue(info["InputTokens"]) + cacheRead + intValue(info["CacheCreationInputTokens"])
		u = llm.Usage{PromptTokens: prompt, CompletionTokens: intValue(info["OutputTokens"]), CachedTokens: cacheRead}
	} else if _, ok := info["PromptTokens"]; ok {
		u = llm.Usage{
			PromptTokens:     intValue(info["PromptTokens"]),
			CompletionTokens: intValue(info["CompletionTokens"]),
			TotalTokens:      intValue(info["TotalTokens"]),
			CachedTokens:     intValue(info["PromptCachedTokens"]),
		}
	} else {
		u = llm.Usage{PromptTokens: intValue(info["input_tokens"]), CompletionTokens: intValue(info["output_tokens"])}
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

func intValue(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int32:
		return int(n)
	case int64:
		return int(n)
	case float64:
		return int(n)
	case float32:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}
