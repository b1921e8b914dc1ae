package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

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
// HTTP layer with its timeouts) with go-openai's own client on the same
// recorded reply, in one run. The "ratio" sub-benchmark alternates the two
// calls, so that both meet the same load on a shared machine, and reports
// saucer-ns/op, go-openai-ns/op and their ratio (the target is ≤ 1.2).
func BenchmarkProviderOverhead(b *testing.B) {
	url, ours, theirs := recordedToolCall(b)
	ctx := context.Background()
	m, err := openai.New(openai.Config{BaseURL: url, Model: theirs.Model, APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	cc := goopenai.DefaultConfig("k")
	cc.BaseURL = url
	c := goopenai.NewClientWithConfig(cc)
	saucer := func(b *testing.B) {
		if _, err := m.Complete(ctx, ours); err != nil {
			b.Fatal(err)
		}
	}
	baseline := func(b *testing.B) {
		if _, err := c.CreateChatCompletion(ctx, theirs); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("saucer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			saucer(b)
		}
	})
	b.Run("go-openai", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			baseline(b)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var ts, tb time.Duration
		n := 0
		for b.Loop() {
			start := time.Now()
			saucer(b)
			mid := time.Now()
			baseline(b)
			ts, tb = ts+mid.Sub(start), tb+time.Since(mid)
			n++
		}
		b.ReportMetric(float64(ts.Nanoseconds())/float64(n), "saucer-ns/op")
		b.ReportMetric(float64(tb.Nanoseconds())/float64(n), "go-openai-ns/op")
		b.ReportMetric(float64(ts)/float64(tb), "ratio")
	})
}
