package langchain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/llm/langchain"
)

// bigToolUseStream is Anthropic's event stream for one tool call whose
// input (a file's content, n bytes) arrives in partial_json fragments of
// frag bytes.
func bigToolUseStream(n, frag int) string {
	line := `    if (x) { return "it's {done}"; } // check [1, 2]` + "\n"
	content := strings.Repeat(line, n/len(line)+1)[:n]
	input, _ := json.Marshal(map[string]string{"path": "main.c", "content": content})
	events := []string{
		`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"write_file","input":{}}}`,
	}
	for s := string(input); len(s) > 0; {
		k := min(frag, len(s))
		p, _ := json.Marshal(s[:k])
		events = append(events, fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`, p))
		s = s[k:]
	}
	events = append(events, `{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`, `{"type":"message_stop"}`)
	return sse(events...)
}

// BenchmarkBigStreamedToolUse streams a tool call of 256 KB and 1 MB of
// input through langchaingo's Anthropic client, reporting the process's
// CPU time per MB (cpu-ms/MB). langchaingo concatenates each fragment to
// the input so far, so the figure grows with the size: see
// docs/rough_edges.md.
//
//	go test ./llm/langchain -run '^$' -bench BigStreamedToolUse -benchtime 1x
func BenchmarkBigStreamedToolUse(b *testing.B) {
	for _, kb := range []int{256, 1024} {
		body := bigToolUseStream(kb<<10, 16)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(body))
		}))
		m, err := langchain.NewAnthropic(langchain.Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			start := cputime.Process()
			for b.Loop() {
				resp, err := m.Stream(context.Background(), firstTurn(), nil)
				if err != nil || len(resp.Message.ToolCalls) != 1 {
					b.Fatalf("%v", err)
				}
			}
			b.ReportMetric(float64(cputime.Process()-start)/float64(time.Millisecond)/float64(b.N)/(float64(kb)/1024), "cpu-ms/MB")
		})
		srv.Close()
	}
}
