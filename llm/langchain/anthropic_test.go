package langchain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/langchain"
)

const (
	testKey   = "sk-ant-test-key-0001"
	testModel = "claude-sonnet-4-5"
)

var readFileSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file to read"},"max_lines":{"type":"integer"}},"required":["path"]}`)

// messagesAPI is a stand-in for Anthropic's Messages API: it checks the
// headers every request must carry, hands the decoded body to check and
// answers with status and reply.
type messagesAPI struct {
	t      *testing.T
	mu     sync.Mutex
	bodies []map[string]any
	status int
	header http.Header
	reply  string
}

func (a *messagesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		a.t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != testKey {
		a.t.Errorf("x-api-key = %q, want the configured key", got)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		a.t.Errorf("no anthropic-version header")
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		a.t.Errorf("request body is not JSON: %v", err)
	}
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	for k, v := range a.header {
		w.Header()[k] = v
	}
	if a.status != 0 && a.status != 200 {
		w.WriteHeader(a.status)
	}
	fmt.Fprint(w, a.reply)
}

func (a *messagesAPI) lastBody() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.bodies) == 0 {
		a.t.Fatal("the server got no request")
	}
	return a.bodies[len(a.bodies)-1]
}

func serveMessages(t *testing.T, api *messagesAPI) *langchain.Model {
	t.Helper()
	api.t = t
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	m, err := langchain.NewAnthropic(langchain.Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	return reflect.DeepEqual(decode(t, a), decode(t, b))
}

const toolUseReply = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "I'll read the file."},
    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "read_file", "input": {"path": "notes.txt", "max_lines": 20}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 412, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1024, "output_tokens": 57}
}`

func firstTurn() *llm.Request {
	temp := 0.2
	return &llm.Request{
		Messages:    []llm.Message{llm.System("You operate a computer."), llm.User("What does notes.txt say?")},
		Tools:       []llm.Tool{{Name: "read_file", Description: "Read a text file", Parameters: readFileSchema}},
		Temperature: &temp,
		MaxTokens:   1024,
		Stop:        []string{"END"},
	}
}

func checkToolUseResponse(t *testing.T, got *llm.Response) {
	t.Helper()
	if got.Message.Role != llm.RoleAssistant || got.Message.Content != "I'll read the file." {
		t.Errorf("message = %+v", got.Message)
	}
	if len(got.Message.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v, want one", got.Message.ToolCalls)
	}
	tc := got.Message.ToolCalls[0]
	if tc.ID != "toolu_01A09q90qw90lq917835lq9" || tc.Name != "read_file" || !sameJSON(t, tc.Arguments, `{"path":"notes.txt","max_lines":20}`) {
		t.Errorf("tool call = %+v", tc)
	}
	wantUsage := llm.Usage{PromptTokens: 412 + 1024, CompletionTokens: 57, CachedTokens: 1024, TotalTokens: 412 + 1024 + 57}
	if got.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", got.Usage, wantUsage)
	}
	if got.FinishReason != "tool_calls" || got.Model != testModel {
		t.Errorf("finish reason %q, model %q", got.FinishReason, got.Model)
	}
}

func TestAnthropicToolUse(t *testing.T) {
	api := &messagesAPI{reply: toolUseReply}
	m := serveMessages(t, api)
	got, err := m.Complete(context.Background(), firstTurn())
	if err != nil {
		t.Fatal(err)
	}
	checkToolUseResponse(t, got)

	body := api.lastBody()
	if body["model"] != testModel || body["system"] != "You operate a computer." {
		t.Errorf("model %v, system %v", body["model"], body["system"])
	}
	if body["max_tokens"] != 1024.0 || body["temperature"] != 0.2 || !reflect.DeepEqual(body["stop_sequences"], decode(t, `["END"]`)) {
		t.Errorf("max_tokens %v, temperature %v, stop_sequences %v", body["max_tokens"], body["temperature"], body["stop_sequences"])
	}
	wantMsgs := decode(t, `[{"role":"user","content":[{"type":"text","text":"What does notes.txt say?"}]}]`)
	if !reflect.DeepEqual(body["messages"], wantMsgs) {
		t.Errorf("messages = %v, want %v", body["messages"], wantMsgs)
	}
	wantTools := decode(t, `[{"name":"read_file","description":"Read a text file","input_schema":`+string(readFileSchema)+`}]`)
	if !reflect.DeepEqual(body["tools"], wantTools) {
		t.Errorf("tools = %v, want %v", body["tools"], wantTools)
	}
}

func TestAnthropicToolResultTurn(t *testing.T) {
	api := &messagesAPI{reply: `{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
	  "content":[{"type":"text","text":"Both files say hello."}],"stop_reason":"end_turn","stop_sequence":null,
	  "usage":{"input_tokens":530,"output_tokens":9}}`}
	m := serveMessages(t, api)
	a := llm.ToolCall{ID: "toolu_A", Name: "read_file", Arguments: `{"path":"a.txt"}`}
	b := llm.ToolCall{ID: "toolu_B", Name: "read_file", Arguments: `{"path":"b.txt"}`}
	req := &llm.Request{
		Messages: []llm.Message{
			llm.System("You operate a computer."),
			llm.User("Read a.txt and b.txt."),
			{Role: llm.RoleAssistant, Content: "Reading both.", ToolCalls: []llm.ToolCall{a, b}},
			llm.ToolResult(a, "hello"),
			llm.ToolResult(b, "hello too"),
		},
		Tools: []llm.Tool{{Name: "read_file", Parameters: readFileSchema}},
	}
	got, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Message:      llm.Assistant("Both files say hello."),
		FinishReason: "stop",
		Model:        testModel,
		Usage:        llm.Usage{PromptTokens: 530, CompletionTokens: 9, TotalTokens: 539},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Each part of the assistant turn goes as its own message (the API joins
	// consecutive turns of one role), so no tool call is lost.
	wantMsgs := decode(t, `[
	  {"role":"user","content":[{"type":"text","text":"Read a.txt and b.txt."}]},
	  {"role":"assistant","content":[{"type":"text","text":"Reading both."}]},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_A","name":"read_file","input":{"path":"a.txt"}}]},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_B","name":"read_file","input":{"path":"b.txt"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_A","content":"hello"}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_B","content":"hello too"}]}]`)
	if got := api.lastBody()["messages"]; !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("messages:\n got %v\nwant %v", got, wantMsgs)
	}
}

func TestAnthropicMalformedArgumentsInHistory(t *testing.T) {
	api := &messagesAPI{reply: `{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`}
	m := serveMessages(t, api)
	bad := llm.ToolCall{ID: "toolu_X", Name: "read_file", Arguments: `{"path": "a.t`}
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{
		llm.User("go"), {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{bad}}, llm.ToolResult(bad, "error: arguments are not valid JSON"),
	}})
	if err != nil {
		t.Fatalf("a malformed call in the history broke the request: %v", err)
	}
	msgs := api.lastBody()["messages"].([]any)
	use := msgs[1].(map[string]any)["content"].([]any)[0]
	if !reflect.DeepEqual(use, decode(t, `{"type":"tool_use","id":"toolu_X","name":"read_file","input":{}}`)) {
		t.Errorf("tool_use sent as %v", use)
	}
}

func TestAnthropicImages(t *testing.T) {
	api := &messagesAPI{reply: `{"type":"message","role":"assistant","content":[{"type":"text","text":"a cat"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`}
	m := serveMessages(t, api)
	png := []byte("\x89PNG\r\n\x1a\nfake")
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{{
		Role: llm.RoleUser, Content: "What is this?",
		Images: []llm.Image{{Data: png, MIMEType: "image/png"}, {URL: "data:image/jpeg;base64,/9j/4A=="}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	want := decode(t, `[{"role":"user","content":[
	  {"type":"text","text":"What is this?"},
	  {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgpmYWtl"}},
	  {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}}]}]`)
	if got := api.lastBody()["messages"]; !reflect.DeepEqual(got, want) {
		t.Errorf("messages:\n got %v\nwant %v", got, want)
	}
}

func TestAnthropicErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		kind       error
		retryAfter time.Duration
		mention    string
	}{
		{"429", 429, http.Header{"Retry-After": {"12"}},
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			llm.ErrRateLimit, 12 * time.Second, "per-minute rate limit"},
		{"401", 401, nil,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			llm.ErrAuth, 0, "invalid x-api-key"},
		{"400 prompt too long", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`,
			llm.ErrContextLength, 0, "prompt is too long"},
		{"400 other", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.input_schema: JSON schema is invalid"}}`,
			llm.ErrBadRequest, 0, "input_schema"},
		{"529 overloaded", 529, http.Header{"Retry-After": {"3"}},
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			llm.ErrServer, 3 * time.Second, "Overloaded"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				m := serveMessages(t, &messagesAPI{status: tt.status, header: tt.header, reply: tt.body})
				var err error
				if stream {
					_, err = m.Stream(context.Background(), firstTurn(), nil)
				} else {
					_, err = m.Complete(context.Background(), firstTurn())
				}
				var le *llm.Error
				if !errors.As(err, &le) {
					t.Fatalf("err = %v (%T), want *llm.Error", err, err)
				}
				if !errors.Is(err, tt.kind) || le.Status != tt.status || le.RetryAfter != tt.retryAfter || le.Provider != "anthropic" {
					t.Errorf("got kind %v status %d retry-after %v provider %q; want %v, %d, %v, anthropic (%v)",
						le.Kind, le.Status, le.RetryAfter, le.Provider, tt.kind, tt.status, tt.retryAfter, err)
				}
				if !strings.Contains(err.Error(), tt.mention) {
					t.Errorf("error %q does not pass on %q", err, tt.mention)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("API key in the error: %v", err)
				}
			})
		}
	}
}

func TestAnthropicTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	m, err := langchain.NewAnthropic(langchain.Config{APIKey: testKey, BaseURL: srv.URL + "/v1", Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := m.Complete(ctx, firstTurn()); !errors.Is(err, llm.ErrTimeout) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
}

func TestNewAnthropicChecksConfig(t *testing.T) {
	if _, err := langchain.NewAnthropic(langchain.Config{Model: testModel}); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Errorf("no key: err = %v", err)
	}
	if _, err := langchain.NewAnthropic(langchain.Config{APIKey: testKey}); err == nil || !strings.Contains(err.Error(), "model") {
		t.Errorf("no model: err = %v", err)
	}
}

// sse writes Anthropic's streaming events for the toolUseReply message.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(e), &typ)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ.Type, e)
	}
	return b.String()
}

var toolUseStream = sse(
	`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":1024,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll read "}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the file."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"read_file","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"no"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"tes.txt\", \"max_lines\": 20}"}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":57}}`,
	`{"type":"message_stop"}`,
)

func TestAnthropicStream(t *testing.T) {
	api := &messagesAPI{header: http.Header{"Content-Type": {"text/event-stream"}}, reply: toolUseStream}
	m := serveMessages(t, api)
	var chunks []llm.Chunk
	got, err := m.Stream(context.Background(), firstTurn(), func(c llm.Chunk) { chunks = append(chunks, c) })
	if err != nil {
		t.Fatal(err)
	}
	checkToolUseResponse(t, got)
	if api.lastBody()["stream"] != true {
		t.Errorf("request did not ask for a stream: %v", api.lastBody()["stream"])
	}
	zero := 0
	want := []llm.Chunk{
		{Text: "I'll read "},
		{Text: "the file."},
		{ToolCall: &llm.ToolCallDelta{Index: &zero, ID: got.Message.ToolCalls[0].ID, Name: "read_file", Arguments: got.Message.ToolCalls[0].Arguments}},
	}
	if !reflect.DeepEqual(chunks, want) {
		t.Errorf("chunks = %+v, want %+v", chunks, want)
	}

	// The streamed reply equals the one Complete gives for the same message.
	complete, err := serveMessages(t, &messagesAPI{reply: toolUseReply}).Complete(context.Background(), firstTurn())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, complete) {
		t.Errorf("stream gave %+v, complete %+v", got, complete)
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	stream := sse(
		`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	)
	m := serveMessages(t, &messagesAPI{header: http.Header{"Content-Type": {"text/event-stream"}}, reply: stream})
	_, err := m.Stream(context.Background(), firstTurn(), nil)
	if !errors.Is(err, llm.ErrServer) {
		t.Errorf("err = %v, want ErrServer", err)
	}
}

func TestAnthropicEmptyReply(t *testing.T) {
	m := serveMessages(t, &messagesAPI{reply: `{"type":"message","role":"assistant","content":[],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":0}}`})
	if _, err := m.Complete(context.Background(), firstTurn()); !errors.Is(err, llm.ErrEmptyReply) {
		t.Errorf("no content blocks: err = %v, want ErrEmptyReply", err)
	}
	// Cut at max_tokens before any text: not an empty reply but a cut
	// one, with its tokens, for the agent to ask again about.
	m = serveMessages(t, &messagesAPI{reply: `{"type":"message","role":"assistant","content":[{"type":"text","text":""}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":7}}`})
	resp, err := m.Complete(context.Background(), firstTurn())
	if err != nil || resp.FinishReason != llm.FinishLength || llm.Unfinished(resp) == "" || resp.Usage.CompletionTokens != 7 {
		t.Errorf("cut at max_tokens: %+v, %v", resp, err)
	}
}

// cutToolUseStream is a streamed reply whose tool_use input stops inside
// a string, ended for stop: Anthropic's max_tokens, or end_turn or
// tool_use as a misbehaving server or proxy reports the cut.
func cutToolUseStream(stop string) string {
	return sse(
		`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":412,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Removing it."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"execute_command","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"rm -rf"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" keep"}}`,
		`{"type":"content_block_stop","index":1}`,
		fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":4096}}`, stop),
		`{"type":"message_stop"}`,
	)
}

// TestAnthropicStreamCutToolInput: a streamed tool call whose input never
// closes is a reply cut off, whatever the stop reason says, not a failure
// of the provider: it comes back as a reply that must not act, and is
// never completed.
func TestAnthropicStreamCutToolInput(t *testing.T) {
	for _, stop := range []string{"max_tokens", "end_turn", "tool_use"} {
		t.Run(stop, func(t *testing.T) {
			m := serveMessages(t, &messagesAPI{header: http.Header{"Content-Type": {"text/event-stream"}}, reply: cutToolUseStream(stop)})
			resp, err := m.Stream(context.Background(), firstTurn(), nil)
			if err != nil {
				t.Fatalf("a cut tool call failed the call: %v", err)
			}
			if resp.FinishReason != llm.FinishToolCallCut || llm.Unfinished(resp) == "" {
				t.Errorf("finish %q (unfinished %q), want %q", resp.FinishReason, llm.Unfinished(resp), llm.FinishToolCallCut)
			}
			if len(resp.Message.ToolCalls) != 0 {
				t.Errorf("the cut call came back as %+v", resp.Message.ToolCalls)
			}
		})
	}
}
