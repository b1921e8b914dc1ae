package langchain_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/langchain"
)

// recordingModel is a langchaingo model that records what it was asked and
// answers with a fixed response or error; it streams the reply's text in
// two halves when asked to stream.
type recordingModel struct {
	reply *llms.ContentResponse
	err   error

	messages []llms.MessageContent
	opts     llms.CallOptions
}

func (r *recordingModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	r.messages = msgs
	r.opts = llms.CallOptions{}
	for _, o := range options {
		o(&r.opts)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.opts.StreamingFunc != nil {
		for _, c := range r.reply.Choices {
			half := len(c.Content) / 2
			for _, piece := range []string{c.Content[:half], c.Content[half:]} {
				if err := r.opts.StreamingFunc(ctx, []byte(piece)); err != nil {
					return nil, err
				}
			}
		}
	}
	return r.reply, nil
}

func (r *recordingModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, r, prompt, options...)
}

func textReply(text string, info map[string]any) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text, StopReason: "stop", GenerationInfo: info}}}
}

// TestGenericMessages: for providers other than Anthropic an assistant turn
// stays one message with all its parts.
func TestGenericMessages(t *testing.T) {
	rec := &recordingModel{reply: textReply("ok", nil)}
	m := langchain.New(rec, "openai")
	png := []byte("\x89PNG\r\n\x1a\nfake")
	a := llm.ToolCall{ID: "call_a", Name: "read_file", Arguments: `{"path":"a"}`}
	b := llm.ToolCall{ID: "call_b", Name: "list_dir", Arguments: `{}`}
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{
		llm.System("sys"),
		{Role: llm.RoleUser, Content: "look", Images: []llm.Image{
			{Data: png, MIMEType: "image/png"},
			{URL: "https://example.invalid/a.jpg", Detail: "high"},
			{URL: "data:image/png;base64,iVBORw0KGgpmYWtl"},
		}},
		{Role: llm.RoleAssistant, Content: "doing both", ToolCalls: []llm.ToolCall{a, b}},
		llm.ToolResult(a, "A"),
		llm.ToolResult(b, "B"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []llms.MessageContent{
		{Role: llms.ChatMessageTypeSystem, Parts: []llms.ContentPart{llms.TextContent{Text: "sys"}}},
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.TextContent{Text: "look"},
			llms.BinaryContent{MIMEType: "image/png", Data: png},
			llms.ImageURLContent{URL: "https://example.invalid/a.jpg", Detail: "high"},
			llms.BinaryContent{MIMEType: "image/png", Data: png},
		}},
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.TextContent{Text: "doing both"},
			llms.ToolCall{ID: "call_a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`}},
			llms.ToolCall{ID: "call_b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "list_dir", Arguments: `{}`}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_a", Name: "read_file", Content: "A"}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_b", Name: "list_dir", Content: "B"}}},
	}
	if !reflect.DeepEqual(rec.messages, want) {
		t.Errorf("messages:\n got %#v\nwant %#v", rec.messages, want)
	}
}

func TestGenericOptions(t *testing.T) {
	temp := 0.7
	tests := []struct {
		name string
		req  llm.Request
		want llms.CallOptions
	}{
		{
			name: "everything",
			req: llm.Request{
				Tools: []llm.Tool{
					{Name: "read_file", Description: "read", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
					{Name: "noop"},
				},
				ToolChoice: "read_file", JSON: true, Temperature: &temp, MaxTokens: 99, Stop: []string{"X"},
			},
			want: llms.CallOptions{
				Tools: []llms.Tool{
					{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file", Description: "read", Parameters: map[string]any{
						"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"},
					}}},
					{Type: "function", Function: &llms.FunctionDefinition{Name: "noop", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}},
				},
				ToolChoice:  llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: "read_file"}},
				JSONMode:    true,
				Temperature: 0.7,
				MaxTokens:   99,
				StopWords:   []string{"X"},
			},
		},
		{name: "required", req: llm.Request{ToolChoice: "required"}, want: llms.CallOptions{ToolChoice: "required"}},
		{name: "nothing", req: llm.Request{}, want: llms.CallOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingModel{reply: textReply("ok", nil)}
			tt.req.Messages = []llm.Message{llm.User("hi")}
			if _, err := langchain.New(rec, "x").Complete(context.Background(), &tt.req); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.opts, tt.want) {
				t.Errorf("options:\n got %#v\nwant %#v", rec.opts, tt.want)
			}
		})
	}
}

func TestGenericBadRequests(t *testing.T) {
	tests := map[string]llm.Request{
		"schema not an object": {Messages: []llm.Message{llm.User("hi")}, Tools: []llm.Tool{{Name: "t", Parameters: []byte(`[1]`)}}},
		"tool turn without id": {Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}},
		"unknown role":         {Messages: []llm.Message{{Role: "narrator"}}},
		"ftp image":            {Messages: []llm.Message{{Role: llm.RoleUser, Images: []llm.Image{{URL: "ftp://x/a.png"}}}}},
		"bad data URL":         {Messages: []llm.Message{{Role: llm.RoleUser, Images: []llm.Image{{URL: "data:image/png,notbase64"}}}}},
		"image on a tool turn": {Messages: []llm.Message{{Role: llm.RoleTool, ToolCallID: "c", Images: []llm.Image{{URL: "https://x/a.png"}}}}},
	}
	for name, req := range tests {
		rec := &recordingModel{reply: textReply("ok", nil)}
		_, err := langchain.New(rec, "x").Complete(context.Background(), &req)
		if !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("%s: err = %v, want ErrBadRequest", name, err)
		}
		if rec.messages != nil {
			t.Errorf("%s: the model was called", name)
		}
	}
}

func TestGenericUsage(t *testing.T) {
	tests := []struct {
		name string
		info map[string]any
		want llm.Usage
	}{
		{"anthropic", map[string]any{"InputTokens": 100, "OutputTokens": 20, "CacheReadInputTokens": 300, "CacheCreationInputTokens": 50},
			llm.Usage{PromptTokens: 450, CompletionTokens: 20, CachedTokens: 300, TotalTokens: 470}},
		{"openai", map[string]any{"PromptTokens": 90, "CompletionTokens": 10, "TotalTokens": 100, "PromptCachedTokens": 64},
			llm.Usage{PromptTokens: 90, CompletionTokens: 10, CachedTokens: 64, TotalTokens: 100}},
		{"ollama (int32 without total)", map[string]any{"PromptTokens": int32(7), "CompletionTokens": int32(3)},
			llm.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}},
		{"bedrock", map[string]any{"input_tokens": 11, "output_tokens": 4}, llm.Usage{PromptTokens: 11, CompletionTokens: 4, TotalTokens: 15}},
		{"none", nil, llm.Usage{}},
	}
	for _, tt := range tests {
		rec := &recordingModel{reply: textReply("ok", tt.info)}
		resp, err := langchain.New(rec, "x").Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != tt.want {
			t.Errorf("%s: usage = %+v, want %+v", tt.name, resp.Usage, tt.want)
		}
	}
}

func TestGenericResponse(t *testing.T) {
	rec := &recordingModel{reply: &llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "Let me check. ", StopReason: "tool_use"},
		{ToolCalls: []llms.ToolCall{{ID: "c1", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: `{"x":1}`}}}, StopReason: "tool_use"},
		{ToolCalls: []llms.ToolCall{{ID: "c2", FunctionCall: &llms.FunctionCall{Name: "b", Arguments: `{}`}}}, StopReason: "tool_use"},
	}}}
	var chunks []llm.Chunk
	got, err := langchain.New(rec, "x").Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}, func(c llm.Chunk) { chunks = append(chunks, c) })
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: "Let me check. ", ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "a", Arguments: `{"x":1}`}, {ID: "c2", Name: "b", Arguments: `{}`},
		}},
		FinishReason: "tool_calls",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	zero, one := 0, 1
	wantChunks := []llm.Chunk{
		{Text: "Let me "}, {Text: "check. "},
		{ToolCall: &llm.ToolCallDelta{Index: &zero, ID: "c1", Name: "a", Arguments: `{"x":1}`}},
		{ToolCall: &llm.ToolCallDelta{Index: &one, ID: "c2", Name: "b", Arguments: `{}`}},
	}
	if !reflect.DeepEqual(chunks, wantChunks) {
		t.Errorf("chunks = %+v, want %+v", chunks, wantChunks)
	}
}

func TestFinishReasons(t *testing.T) {
	for in, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls", "STOP": "stop", "MAX_TOKENS": "length", "stop": "stop", "length": "length", "refusal": "content_filter", "SAFETY": "content_filter"} {
		rec := &recordingModel{reply: &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "x", StopReason: in}}}}
		resp, err := langchain.New(rec, "x").Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason != want {
			t.Errorf("stop reason %q became %q, want %q", in, resp.FinishReason, want)
		}
	}
}

func TestGenericErrors(t *testing.T) {
	tests := []struct {
		err  error
		kind error
	}{
		{errors.New("googleai: rpc error: code = ResourceExhausted desc = Resource has been exhausted (e.g. check quota)."), llm.ErrRateLimit},
		{errors.New("API returned unexpected status code: 401: invalid x-api-key"), llm.ErrAuth},
		{errors.New("openai: error, status code: 429, status: 429 Too Many Requests, message: slow down"), llm.ErrRateLimit},
		{errors.New("received error event: map[error:map[message:Overloaded type:overloaded_error] type:error]"), llm.ErrServer},
		{errors.New("the input is too long for the model's context window"), llm.ErrContextLength},
		{errors.New("status code: 400: prompt is too long: 300000 tokens > 200000 maximum"), llm.ErrContextLength},
		{llms.NewError(llms.ErrCodeTokenLimit, "mistral", "too long"), llm.ErrContextLength},
		{llms.NewError(llms.ErrCodeProviderUnavailable, "mistral", "down"), llm.ErrServer},
		{llms.NewError(llms.ErrCodeAuthentication, "mistral", "bad key"), llm.ErrAuth},
		{fmt.Errorf("send request: %w", context.DeadlineExceeded), llm.ErrTimeout},
	}
	for _, tt := range tests {
		_, err := langchain.New(&recordingModel{err: tt.err}, "x").Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		if !errors.Is(err, tt.kind) {
			t.Errorf("%q: got %v, want kind %v", tt.err, err, tt.kind)
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("%q: the original error is not wrapped", tt.err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := langchain.New(&recordingModel{err: context.Canceled}, "x").Complete(ctx, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if !errors.Is(err, context.Canceled) || llm.Retryable(err) {
		t.Errorf("canceled: got %v, want a non-retryable error matching context.Canceled", err)
	}
}
