package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/openai"
)

// Servers that speak a dialect of OpenAI's format: arguments as an
// object, tool calls with no id or the same id, an error with status 200.
func TestDialects(t *testing.T) {
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
	body := `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
		{"type":"function","function":{"name":"read_file","arguments":{"path":"a.txt"}}},
		{"id":"x","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}},
		{"id":"x","type":"function","function":{"name":"list_dir","arguments":{}}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
	srv, _ := captureServer(t, 200, body)
	m := newModel(t, openai.Config{BaseURL: srv.URL, Model: "m", ProviderName: "vllm"})
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 3 || calls[0].Arguments != `{"path":"a.txt"}` || calls[2].Arguments != `{}` {
		t.Fatalf("calls %+v", calls)
	}
	if calls[0].ID == "" || calls[1].ID != "x" || calls[2].ID == "x" || calls[2].ID == calls[0].ID {
		t.Errorf("ids %q %q %q: every call needs its own", calls[0].ID, calls[1].ID, calls[2].ID)
	}

	// Only a later call's arguments are an object, after white space.
	body = `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"a","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}},
		{"id":"b","type":"function","function":{"name":"read_file","arguments" :
		  {"path":"b.txt"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
	srv, _ = captureServer(t, 200, body)
	m = newModel(t, openai.Config{BaseURL: srv.URL, Model: "m", ProviderName: "vllm"})
	resp, err = m.Complete(context.Background(), req)
	if err != nil || len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Arguments != `{"path":"b.txt"}` {
		t.Fatalf("a later call's object arguments: %+v %v", resp, err)
	}

	srv, _ = captureServer(t, 200, `{"error":{"message":"model qwen9 is not loaded","type":"server_error"}}`)
	m = newModel(t, openai.Config{BaseURL: srv.URL, Model: "qwen9", ProviderName: "ollama"})
	_, err = m.Complete(context.Background(), req)
	if err == nil || errors.Is(err, llm.ErrEmptyReply) || !strings.Contains(err.Error(), "model qwen9 is not loaded") {
		t.Errorf("an error sent with status 200: %v", err)
	}
}
