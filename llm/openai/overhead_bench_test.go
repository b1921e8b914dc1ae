package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/openai"
	"github.com/saucerhq/saucer/llm/openai/internal/cassette"
)

// recordedToolCall is a recorded real reply with a tool call, served from
// loopback, and the request that got it, in both clients' forms.
func recordedToolCall(b *testing.B) (url string, ours *llm.Request, theirs goopenai.ChatCompletionRequest) {
	b.Helper()
	paths, _ := filepath.Glob(filepath.Join(cassetteDir, "*.httprr"))
	for _, p := range paths {
		exs, err := cassette.Load(p)
		if err != nil {
			b.Fatal(err)
		}
		for _, ex := range exs {
			var req goopenai.ChatCompletionRequest
			if json.Unmarshal(ex.RequestBody, &req) != nil || len(req.Tools) == 0 {
				continue
			}
			body := ex.ResponseBody
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			}))
			b.Cleanup(srv.Close)
			ours = &llm.Request{}
			for _, m := range req.Messages {
				ours.Messages = append(ours.Messages, llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name})
			}
			for _, t := range req.Tools {
				params, _ := json.Marshal(t.Function.Parameters)
				ours.Tools = append(ours.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
			}
			return srv.URL, ours, req
		}
	}
	b.Fatal("no recorded request with tools")
	return
}

// BenchmarkProviderOverhead compares one call through Saucer's provider
// layer (request build, dialect fixes, response parse, over the shared
// HTTP layer) with go-openai's own client on the same recorded reply, in
// one run: the ratio of the two ns/op is the layer's overhead.
func BenchmarkProviderOverhead(b *testing.B) {
	url, ours, theirs := recordedToolCall(b)
	ctx := context.Background()
	b.Run("saucer", func(b *testing.B) {
		m, err := openai.New(openai.Config{BaseURL: url, Model: theirs.Model, APIKey: "k"})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Complete(ctx, ours); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-openai", func(b *testing.B) {
		cc := goopenai.DefaultConfig("k")
		cc.BaseURL = url
		c := goopenai.NewClientWithConfig(cc)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.CreateChatCompletion(ctx, theirs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
