package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/openai"
)

// indexMode is how a synthetic stream numbers its tool-call fragments.
type indexMode int

const (
	indexed    indexMode = iota // index 0, 1, ... as OpenAI sends them
	noIndex                     // no index at all, as Ollama has sent
	indexZero                   // index 0 for every parallel call
	indexedAll                  // indexed, and every fragment repeats id and name
)

func (m indexMode) String() string {
	return [...]string{"indexed", "no index", "index 0 for all", "indexed, id and name repeated"}[m]
}

// sseFromResponse turns a recorded chat-completions response into the
// server-sent events a streaming request would have received: the text in
// a few pieces, each tool call's arguments in several fragments (id and name
// only in the first), the finish reason, then a usage-only chunk.
func sseFromResponse(t *testing.T, body []byte, mode indexMode) string {
	t.Helper()
	var rec recordedResponse
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	c := rec.Choices[0]
	var b strings.Builder
	event := func(delta map[string]any, finish any) {
		chunk := map[string]any{
			"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 1, "model": rec.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
			"usage":   nil,
		}
		data, err := json.Marshal(chunk)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "data: %s\n\n", data)
	}
	event(map[string]any{"role": "assistant", "content": ""}, nil)
	if c.Message.Content != nil {
		for _, piece := range split(*c.Message.Content, 3) {
			event(map[string]any{"content": piece}, nil)
		}
	}
	for i, tc := range c.Message.ToolCalls {
		for j, frag := range split(tc.Function.Arguments, 4) {
			call := map[string]any{"function": map[string]any{"arguments": frag}}
			if j == 0 || mode == indexedAll {
				call["id"] = tc.ID
				call["type"] = "function"
				call["function"].(map[string]any)["name"] = tc.Function.Name
			}
			switch mode {
			case indexed, indexedAll:
				call["index"] = i
			case indexZero:
				call["index"] = 0
			}
			event(map[string]any{"tool_calls": []any{call}}, nil)
		}
	}
	event(map[string]any{}, c.FinishReason)
	usage, err := json.Marshal(map[string]any{
		"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 1, "model": rec.Model,
		"choices": []any{}, "usage": raw.Usage,
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "data: %s\n\ndata: [DONE]\n\n", usage)
	return b.String()
}

// split cuts s into at most n pieces of about equal size, on rune bounds.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return []string{""}
	}
	size := (len(r) + n - 1) / n
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// replyServer answers every request with body: as SSE when the request
// asks for a stream, as plain JSON otherwise.
func replyServer(t *testing.T, body []byte, mode indexMode) *httptest.Server {
	t.Helper()
	stream := sseFromResponse(t, body, mode)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		if req.Stream {
			if !req.StreamOptions.IncludeUsage {
				t.Errorf("stream request without stream_options.include_usage")
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// recordedReplies collects every recorded chat-completions response body.
func recordedReplies(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, path := range cassettes(t) {
		for i, ex := range chatExchanges(t, path) {
			out[fmt.Sprintf("%s#%d", filepath.Base(path), i+1)] = ex.ResponseBody
		}
	}
	return out
}

// syntheticReply builds a response body from recorded parts: optional text
// and the given recorded tool calls, with the usage of the first base.
func syntheticReply(t *testing.T, text string, calls ...json.RawMessage) []byte {
	t.Helper()
	msg := map[string]any{"role": "assistant", "content": nil}
	if text != "" {
		msg["content"] = text
	}
	finish := "stop"
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	body, err := json.Marshal(map[string]any{
		"id": "chatcmpl-synthetic", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": 261, "completion_tokens": 44, "total_tokens": 305,
			"prompt_tokens_details": map[string]any{"cached_tokens": 128},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// recordedToolCalls returns the raw tool-call objects of the recordings.
func recordedToolCalls(t *testing.T) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, body := range recordedReplies(t) {
		var r struct {
			Choices []struct {
				Message struct {
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Choices[0].Message.ToolCalls...)
	}
	if len(out) < 2 {
		t.Fatalf("recordings hold %d tool calls, want at least 2", len(out))
	}
	return out
}

// TestStreamEqualsComplete streams every recorded reply, and synthetic ones
// built from recorded tool calls, in every way servers number tool-call
// fragments. The accumulated response must equal what Complete returns for
// the same body, and the chunks handed to onChunk must add up to it.
func TestStreamEqualsComplete(t *testing.T) {
	calls := recordedToolCalls(t)
	replies := recordedReplies(t)
	replies["two parallel calls"] = syntheticReply(t, "", calls[0], calls[1])
	replies["text before a tool call"] = syntheticReply(t, "Let me look that up first.", calls[0])
	replies["text before two calls"] = syntheticReply(t, "I'll use two tools.", calls[1], calls[0])

	for name, body := range replies {
		for _, mode := range []indexMode{indexed, noIndex, indexZero, indexedAll} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				srv := replyServer(t, body, mode)
				m, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: "gpt-4o"})
				if err != nil {
					t.Fatal(err)
				}
				req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
				want, err := m.Complete(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if wantExp := expectedResponse(t, body); !reflect.DeepEqual(want, wantExp) {
					t.Fatalf("Complete:\n got %+v\nwant %+v", want, wantExp)
				}

				var text strings.Builder
				var deltas []llm.ToolCallDelta
				got, err := m.Stream(context.Background(), req, func(c llm.Chunk) {
					text.WriteString(c.Text)
					if c.ToolCall != nil {
						deltas = append(deltas, *c.ToolCall)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Stream:\n got %+v\nwant %+v", got, want)
				}
				if text.String() != want.Message.Content {
					t.Errorf("text chunks add up to %q, want %q", text.String(), want.Message.Content)
				}
				var args strings.Builder
				for _, d := range deltas {
					args.WriteString(d.Arguments)
				}
				var wantArgs strings.Builder
				for _, c := range want.Message.ToolCalls {
					wantArgs.WriteString(c.Arguments)
				}
				if args.String() != wantArgs.String() {
					t.Errorf("tool-call chunks carry arguments %q, want %q", args.String(), wantArgs.String())
				}
				if len(want.Message.ToolCalls) > 0 && len(deltas) <= len(want.Message.ToolCalls) {
					t.Errorf("%d tool-call chunks for %d calls: the arguments were not streamed in fragments", len(deltas), len(want.Message.ToolCalls))
				}
			})
		}
	}
}

// TestStreamNoUsageChunk: a server that ignores include_usage still gives a
// usable reply, with zero usage rather than an error.
func TestStreamNoUsageChunk(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"model":"qwen2.5","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"model":"qwen2.5","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "qwen2.5", ProviderName: "ollama"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{Message: llm.Assistant("Hello"), FinishReason: "stop", Model: "qwen2.5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// A stream that ends before the provider says the reply is done (the
// connection closed mid-arguments, no finish_reason) is marked incomplete:
// not a reply to act on.
func TestStreamCutOff(t *testing.T) {
	body := "data: " + `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"execute_command","arguments":"{\"command\":\"rm -rf ke"}}]}}]}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body) // and the connection closes
	}))
	defer srv.Close()
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	resp, err := m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != llm.FinishIncomplete || llm.Unfinished(resp) == "" {
		t.Errorf("finish %q: a cut-off stream was taken as a complete reply", resp.FinishReason)
	}
}

// A tool name split across stream fragments is one call with the whole
// name, not two calls.
func TestStreamSplitName(t *testing.T) {
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return "data: " + `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
	}
	body := chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"execute_","arguments":""}}]}`, "") +
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"command"}}]}`, "") +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"ls\"}"}}]}`, "") +
		chunk(`{}`, "tool_calls") + "data: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m"})
	resp, err := m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Message.ToolCalls; len(c) != 1 || c[0].Name != "execute_command" || c[0].Arguments != `{"command":"ls"}` {
		t.Errorf("calls %+v", c)
	}
}

// TestCutArgumentsPassThrough: a recorded reply's tool call, cut inside
// its arguments and ended for each finish reason servers use (a cut at the
// token limit comes as length, stop, tool_calls, error or nothing), comes
// back from Complete and from Stream with the arguments exactly as sent,
// never completed, on OpenAI's and Azure's URL layouts: deciding what a
// cut call means is the agent's (it refuses it), not the provider's.
func TestCutArgumentsPassThrough(t *testing.T) {
	var call map[string]any
	if err := json.Unmarshal(recordedToolCalls(t)[0], &call); err != nil {
		t.Fatal(err)
	}
	fn := call["function"].(map[string]any)
	whole := fn["arguments"].(string)
	cut := whole[:len(whole)/2]
	if json.Valid([]byte(cut)) {
		t.Fatalf("%q is not cut", cut)
	}
	fn["arguments"] = cut
	raw, _ := json.Marshal(call)
	for _, finish := range []string{"tool_calls", "stop", "length", "error", ""} {
		var reply map[string]any
		json.Unmarshal(syntheticReply(t, "", raw), &reply)
		reply["choices"].([]any)[0].(map[string]any)["finish_reason"] = finish
		body, _ := json.Marshal(reply)
		for _, azure := range []bool{false, true} {
			srv := replyServer(t, body, indexed)
			cfg := openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: "gpt-4o"}
			if azure {
				cfg = openai.Config{APIKey: "k", BaseURL: srv.URL, Model: "gpt-4o", Azure: true}
			}
			m := newModel(t, cfg)
			for _, stream := range []bool{false, true} {
				var resp *llm.Response
				var err error
				if stream {
					resp, err = m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("go")}}, nil)
				} else {
					resp, err = m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("go")}})
				}
				name := fmt.Sprintf("finish %q, azure %v, stream %v", finish, azure, stream)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != cut {
					t.Errorf("%s: calls %+v, want the arguments %q as sent", name, resp.Message.ToolCalls, cut)
				}
				want := finish
				if finish == "" && stream {
					want = llm.FinishIncomplete // a stream that never said it was done
				}
				if resp.FinishReason != want {
					t.Errorf("%s: finish %q, want %q", name, resp.FinishReason, want)
				}
			}
		}
	}
}

// A complete tool call whose reply ends with finish reason "error" comes
// back with that reason, streamed or not, and is not a reply to act on.
func TestErrorFinishIsUnfinished(t *testing.T) {
	call := json.RawMessage(`{"id":"call_1","type":"function","function":{"name":"execute_command","arguments":"{\"command\":\"rm -rf keep\"}"}}`)
	var reply map[string]any
	json.Unmarshal(syntheticReply(t, "", call), &reply)
	reply["choices"].([]any)[0].(map[string]any)["finish_reason"] = "error"
	body, _ := json.Marshal(reply)
	m := newModel(t, openai.Config{APIKey: "k", BaseURL: replyServer(t, body, indexed).URL + "/v1", Model: "gpt-4o"})
	for _, stream := range []bool{false, true} {
		var resp *llm.Response
		var err error
		req := &llm.Request{Messages: []llm.Message{llm.User("go")}}
		if stream {
			resp, err = m.Stream(context.Background(), req, nil)
		} else {
			resp, err = m.Complete(context.Background(), req)
		}
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != `{"command":"rm -rf keep"}` {
			t.Errorf("stream %v: calls %+v", stream, resp.Message.ToolCalls)
		}
		if why := llm.Unfinished(resp); resp.FinishReason != "error" || !strings.Contains(why, `"error"`) {
			t.Errorf("stream %v: finish %q, unfinished %q: a reply that ended in error would run", stream, resp.FinishReason, why)
		}
	}
}
