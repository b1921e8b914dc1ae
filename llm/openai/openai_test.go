package openai_test

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
	"github.com/saucerhq/saucer/llm/openai"
)

const textReply = `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06",
 "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// captured is one request a capture server received.
type captured struct {
	Path, Query string
	Header      http.Header
	Body        map[string]any
}

// captureServer answers every request with status and reply and records it.
func captureServer(t *testing.T, status int, reply string) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		c := captured{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
		if err := json.Unmarshal(raw, &c.Body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}

func newModel(t *testing.T, cfg openai.Config) *openai.Model {
	t.Helper()
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sentBody sends req through a model for modelName and returns the JSON
// body the server received.
func sentBody(t *testing.T, modelName string, req *llm.Request) map[string]any {
	t.Helper()
	srv, got := captureServer(t, 200, textReply)
	m := newModel(t, openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: modelName})
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return got()[0].Body
}

func asJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func float(v any) float64 { f, _ := v.(float64); return f }

func TestRequestMessages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	call := llm.ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}
	body := sentBody(t, "gpt-4o", &llm.Request{Messages: []llm.Message{
		llm.System("be brief"),
		{Role: llm.RoleUser, Content: "what is on screen?", Images: []llm.Image{
			{Data: png, MIMEType: "image/png"},
			{URL: "https://example.invalid/shot.jpg", Detail: "low"},
			{Data: png}, // MIME type sniffed
		}},
		{Role: llm.RoleAssistant, Content: "Reading it.", ToolCalls: []llm.ToolCall{call}},
		llm.ToolResult(call, "hello"),
	}})
	want := asJSON(t, `[
	 {"role":"system","content":"be brief"},
	 {"role":"user","content":[
	   {"type":"text","text":"what is on screen?"},
	   {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgpmYWtl"}},
	   {"type":"image_url","image_url":{"url":"https://example.invalid/shot.jpg","detail":"low"}},
	   {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgpmYWtl"}}]},
	 {"role":"assistant","content":"Reading it.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]},
	 {"role":"tool","content":"hello","tool_call_id":"call_1"}]`)
	if !reflect.DeepEqual(body["messages"], want) {
		t.Errorf("messages:\n got %v\nwant %v", body["messages"], want)
	}
}

func TestRequestTools(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"file"}},"required":["path"]}`
	body := sentBody(t, "gpt-4o", &llm.Request{
		Messages: []llm.Message{llm.User("hi")},
		Tools: []llm.Tool{
			{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(schema)},
			{Name: "screenshot"},
		},
	})
	want := asJSON(t, `[
	 {"type":"function","function":{"name":"read_file","description":"Read a file","parameters":`+schema+`}},
	 {"type":"function","function":{"name":"screenshot","parameters":{"type":"object","properties":{}}}}]`)
	if !reflect.DeepEqual(body["tools"], want) {
		t.Errorf("tools:\n got %v\nwant %v", body["tools"], want)
	}
	if _, ok := body["tool_choice"]; ok {
		t.Errorf("tool_choice sent though none was asked for: %v", body["tool_choice"])
	}
}

func TestRequestToolChoice(t *testing.T) {
	tests := []struct{ choice, want string }{
		{"auto", `"auto"`},
		{"none", `"none"`},
		{"required", `"required"`},
		{"read_file", `{"type":"function","function":{"name":"read_file"}}`},
	}
	for _, tt := range tests {
		body := sentBody(t, "gpt-4o", &llm.Request{
			Messages:   []llm.Message{llm.User("hi")},
			Tools:      []llm.Tool{{Name: "read_file"}},
			ToolChoice: tt.choice,
		})
		if want := asJSON(t, tt.want); !reflect.DeepEqual(body["tool_choice"], want) {
			t.Errorf("ToolChoice %q: sent %v, want %v", tt.choice, body["tool_choice"], want)
		}
	}
}

func TestRequestOptions(t *testing.T) {
	temp := func(f float64) *float64 { return &f }
	tests := []struct {
		name     string
		model    string
		req      llm.Request
		check    func(t *testing.T, body map[string]any)
		absences []string
	}{
		{
			name:  "JSON mode, temperature, max tokens, stop",
			model: "gpt-4o",
			req:   llm.Request{JSON: true, Temperature: temp(0.3), MaxTokens: 200, Stop: []string{"END"}},
			check: func(t *testing.T, b map[string]any) {
				if !reflect.DeepEqual(b["response_format"], asJSON(t, `{"type":"json_object"}`)) {
					t.Errorf("response_format = %v", b["response_format"])
				}
				if got := float(b["temperature"]); got < 0.2999 || got > 0.3001 {
					t.Errorf("temperature = %v, want 0.3", b["temperature"])
				}
				if float(b["max_tokens"]) != 200 {
					t.Errorf("max_tokens = %v, want 200", b["max_tokens"])
				}
				if !reflect.DeepEqual(b["stop"], asJSON(t, `["END"]`)) {
					t.Errorf("stop = %v", b["stop"])
				}
			},
			absences: []string{"max_completion_tokens"},
		},
		{
			name:  "temperature zero is sent, not dropped",
			model: "gpt-4o",
			req:   llm.Request{Temperature: temp(0)},
			check: func(t *testing.T, b map[string]any) {
				v, ok := b["temperature"]
				if !ok || float(v) > 1e-30 {
					t.Errorf("temperature = %v (present %v), want (practically) 0", v, ok)
				}
			},
		},
		{
			name:     "no options, nothing sent",
			model:    "gpt-4o",
			check:    func(t *testing.T, b map[string]any) {},
			absences: []string{"temperature", "max_tokens", "max_completion_tokens", "response_format", "stop", "tools"},
		},
		{
			name:  "reasoning model o3-mini",
			model: "o3-mini",
			req:   llm.Request{Temperature: temp(0.2), MaxTokens: 500},
			check: func(t *testing.T, b map[string]any) {
				if float(b["max_completion_tokens"]) != 500 {
					t.Errorf("max_completion_tokens = %v, want 500", b["max_completion_tokens"])
				}
			},
			absences: []string{"temperature", "max_tokens"},
		},
		{
			name:  "reasoning model gpt-5",
			model: "gpt-5-mini",
			req:   llm.Request{Temperature: temp(0), MaxTokens: 64},
			check: func(t *testing.T, b map[string]any) {
				if float(b["max_completion_tokens"]) != 64 {
					t.Errorf("max_completion_tokens = %v, want 64", b["max_completion_tokens"])
				}
			},
			absences: []string{"temperature", "max_tokens"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Messages = []llm.Message{llm.User("hi")}
			b := sentBody(t, tt.model, &tt.req)
			if b["model"] != tt.model {
				t.Errorf("model = %v, want %s", b["model"], tt.model)
			}
			tt.check(t, b)
			for _, k := range tt.absences {
				if v, ok := b[k]; ok {
					t.Errorf("%s sent (%v), want it absent", k, v)
				}
			}
		})
	}
}

func TestRequestRejectedBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		msg  llm.Message
		want string
	}{
		{"tool turn without id", llm.Message{Role: llm.RoleTool, Content: "x"}, "tool_call_id"},
		{"image on assistant turn", llm.Message{Role: llm.RoleAssistant, Images: []llm.Image{{URL: "https://x.invalid/a.png"}}}, "only user messages"},
		{"unknown role", llm.Message{Role: "narrator", Content: "x"}, "unknown role"},
		{"empty image", llm.Message{Role: llm.RoleUser, Images: []llm.Image{{}}}, "neither URL nor Data"},
	}
	srv, got := captureServer(t, 200, textReply)
	m := newModel(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-4o"})
	for _, tt := range tests {
		_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{tt.msg}})
		if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want a bad-request error mentioning %q", tt.name, err, tt.want)
		}
	}
	if n := len(got()); n != 0 {
		t.Errorf("%d requests reached the server, want none", n)
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := openai.New(openai.Config{APIKey: "k"}); err == nil || !strings.Contains(err.Error(), "model") {
		t.Errorf("no model: err = %v, want one naming the model", err)
	}
	if _, err := openai.New(openai.Config{APIKey: "k", Model: "dep", Azure: true}); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("Azure without endpoint: err = %v, want one naming the endpoint", err)
	}
}

func TestHeadersAndAuth(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		srv, got := captureServer(t, 200, textReply)
		m := newModel(t, openai.Config{
			APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-4o",
			Organization: "org-1", Headers: map[string]string{"X-Gateway-Route": "saucer"},
		})
		if _, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		c := got()[0]
		if c.Path != "/v1/chat/completions" {
			t.Errorf("path = %s", c.Path)
		}
		for k, want := range map[string]string{"Authorization": "Bearer sk-test", "Openai-Organization": "org-1", "X-Gateway-Route": "saucer"} {
			if v := c.Header.Get(k); v != want {
				t.Errorf("header %s = %q, want %q", k, v, want)
			}
		}
	})
	t.Run("no key", func(t *testing.T) {
		srv, got := captureServer(t, 200, textReply)
		m := newModel(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "qwen2.5", ProviderName: "ollama"})
		if _, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		if v := got()[0].Header.Get("Authorization"); v != "" {
			t.Errorf("Authorization = %q, want none without a key", v)
		}
	})
	t.Run("azure", func(t *testing.T) {
		for _, tt := range []struct{ version, want string }{{"", openai.DefaultAzureAPIVersion}, {"2025-01-01-preview", "2025-01-01-preview"}} {
			srv, got := captureServer(t, 200, textReply)
			m := newModel(t, openai.Config{APIKey: "az-key", BaseURL: srv.URL, Model: "gpt-4o.prod:v2", Azure: true, APIVersion: tt.version})
			if _, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
				t.Fatal(err)
			}
			c := got()[0]
			if c.Path != "/openai/deployments/gpt-4o.prod:v2/chat/completions" {
				t.Errorf("path = %s, want the deployment name untouched", c.Path)
			}
			if c.Query != "api-version="+tt.want {
				t.Errorf("query = %s, want api-version=%s", c.Query, tt.want)
			}
			if c.Header.Get("Api-Key") != "az-key" || c.Header.Get("Authorization") != "" {
				t.Errorf("auth headers: api-key %q, Authorization %q; want the key in api-key only", c.Header.Get("Api-Key"), c.Header.Get("Authorization"))
			}
		}
	})
}

// TestConcurrentRequestsKeepTheirTools runs requests with different tools at
// once on one Model: each reply must answer its own request.
func TestConcurrentRequestsKeepTheirTools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
			Tools  []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Tools) != 1 {
			http.Error(w, "want one tool", 400)
			return
		}
		name := req.Tools[0].Function.Name
		if req.Stream {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"id-%s\",\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n", name, name)
			return
		}
		fmt.Fprintf(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"id-%s","type":"function","function":{"name":%q,"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, name, name)
	}))
	defer srv.Close()
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("tool_%d", i)
			req := &llm.Request{Messages: []llm.Message{llm.User("go")}, Tools: []llm.Tool{{Name: name}}}
			var resp *llm.Response
			var err error
			if i%2 == 0 {
				resp, err = m.Complete(context.Background(), req)
			} else {
				resp, err = m.Stream(context.Background(), req, nil)
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != name {
				t.Errorf("%s: got calls %+v", name, resp.Message.ToolCalls)
			}
		}()
	}
	wg.Wait()
}

func TestErrors(t *testing.T) {
	const key = "sk-secret-test-key-123"
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		kind       error
		retryAfter time.Duration
		mention    string
	}{
		{
			name:    "401 bad key",
			status:  401,
			body:    `{"error":{"message":"Incorrect API key provided: ` + key + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			kind:    llm.ErrAuth,
			mention: "Incorrect API key",
		},
		{
			name:       "429 with Retry-After",
			status:     429,
			header:     http.Header{"Retry-After": {"7"}},
			body:       `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			kind:       llm.ErrRateLimit,
			retryAfter: 7 * time.Second,
			mention:    "Rate limit reached",
		},
		{
			name:    "500",
			status:  500,
			body:    `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			kind:    llm.ErrServer,
			mention: "server had an error",
		},
		{
			name:    "502 from a proxy, not JSON",
			status:  502,
			body:    `<html><body>Bad gateway</body></html>`,
			kind:    llm.ErrServer,
			mention: "Bad gateway",
		},
		{
			name:    "400 context length",
			status:  400,
			body:    `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			kind:    llm.ErrContextLength,
			mention: "maximum context length",
		},
		{
			name:    "400 context length from vLLM, no code",
			status:  400,
			body:    `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`,
			kind:    llm.ErrContextLength,
			mention: "4096",
		},
		{
			name:    "400 other",
			status:  400,
			body:    `{"error":{"message":"Invalid schema for function 'x'.","type":"invalid_request_error","param":"tools[0]","code":"invalid_function_parameters"}}`,
			kind:    llm.ErrBadRequest,
			mention: "Invalid schema",
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tt.header {
						w.Header()[k] = v
					}
					w.WriteHeader(tt.status)
					fmt.Fprint(w, tt.body)
				}))
				defer srv.Close()
				m := newModel(t, openai.Config{APIKey: key, BaseURL: srv.URL + "/v1", Model: "gpt-4o"})
				req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
				var err error
				if stream {
					_, err = m.Stream(context.Background(), req, nil)
				} else {
					_, err = m.Complete(context.Background(), req)
				}
				var le *llm.Error
				if !errors.As(err, &le) {
					t.Fatalf("err = %v (%T), want *llm.Error", err, err)
				}
				if !errors.Is(err, tt.kind) {
					t.Errorf("kind = %v, want %v (%v)", le.Kind, tt.kind, err)
				}
				if le.Status != tt.status || le.Provider != "openai" || le.RetryAfter != tt.retryAfter {
					t.Errorf("status %d provider %q retry-after %v; want %d, openai, %v", le.Status, le.Provider, le.RetryAfter, tt.status, tt.retryAfter)
				}
				if !strings.Contains(err.Error(), tt.mention) {
					t.Errorf("error %q does not pass on the server's message (%q)", err, tt.mention)
				}
				if strings.Contains(err.Error(), key) || (le.Err != nil && strings.Contains(le.Err.Error(), key)) {
					t.Errorf("the API key leaked into the error: %v", err)
				}
			})
		}
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server notice a client
		// that hangs up, and end r.Context().
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			// Streaming callers get a first chunk, then nothing.
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"He"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "gpt-4o"})
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}

	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		var err error
		var chunks []string
		if stream {
			_, err = m.Stream(ctx, req, func(c llm.Chunk) { chunks = append(chunks, c.Text) })
		} else {
			_, err = m.Complete(ctx, req)
		}
		cancel()
		if !errors.Is(err, llm.ErrTimeout) {
			t.Errorf("stream=%v: err = %v, want ErrTimeout", stream, err)
		}
		if !llm.Retryable(err) {
			t.Errorf("stream=%v: a timeout should be retryable", stream)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("stream=%v: took %v to notice the deadline", stream, d)
		}
		if stream && !reflect.DeepEqual(chunks, []string{"He"}) {
			t.Errorf("chunks before the timeout = %q, want [He]", chunks)
		}
	}
}

func TestCanceledIsNotAProviderError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "gpt-4o"})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := m.Complete(ctx, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if !errors.Is(err, context.Canceled) || llm.Retryable(err) {
		t.Errorf("err = %v, want a non-retryable error matching context.Canceled", err)
	}
}

func TestEmptyReply(t *testing.T) {
	bodies := map[string]string{
		"empty content": `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
		"null content":  `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`,
		"no choices":    `{"model":"m","choices":[]}`,
	}
	for name, body := range bodies {
		srv, _ := captureServer(t, 200, body)
		m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m"})
		_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		if !errors.Is(err, llm.ErrEmptyReply) {
			t.Errorf("%s: err = %v, want ErrEmptyReply", name, err)
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	if _, err := m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}, nil); !errors.Is(err, llm.ErrEmptyReply) {
		t.Errorf("stream: err = %v, want ErrEmptyReply", err)
	}
}

func TestRefusalIsText(t *testing.T) {
	srv, _ := captureServer(t, 200, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`)
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if err != nil || resp.Message.Content != "I can't help with that." {
		t.Errorf("got %+v, %v; want the refusal as the reply text", resp, err)
	}
}

// TestStreamErrorFrame: an error sent inside a stream, after a 200, has no
// HTTP status; its type decides the kind.
func TestStreamErrorFrame(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","code":null}}`+"\n\n")
	}))
	defer srv.Close()
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "gpt-4o"})
	_, err := m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}, nil)
	if !errors.Is(err, llm.ErrServer) || !strings.Contains(err.Error(), "server had an error") {
		t.Errorf("err = %v, want ErrServer with the server's message", err)
	}
}
