package openai_test

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
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/openai"
)

// bigStream is a streamed reply with one tool call whose arguments (a
// file's content, n bytes) arrive in fragments of frag bytes, as a server
// sends them token by token.
func bigStream(n, frag int) string {
	line := `    if (x) { return "it's {done}"; } // check [1, 2]` + "\n"
	content := strings.Repeat(line, n/len(line)+1)[:n]
	args, _ := json.Marshal(map[string]string{"path": "main.c", "content": content})
	var b strings.Builder
	chunk := func(delta string, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
	}
	chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":""}}]}`, "")
	for s := string(args); len(s) > 0; {
		k := min(frag, len(s))
		p, _ := json.Marshal(s[:k])
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%s}}]}`, p), "")
		s = s[k:]
	}
	chunk(`{}`, "tool_calls")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// BenchmarkBigStreamedReply streams a reply of 1 and 5 MB of tool-call
// arguments in 16-byte fragments over loopback and accumulates it. It
// reports the process's CPU time per MB (cpu-ms/MB): the same at both
// sizes when accumulation is linear.
//
//	go test ./llm/openai -run '^$' -bench BigStreamedReply -benchtime 3x
func BenchmarkBigStreamedReply(b *testing.B) {
	for _, mb := range []int{1, 5} {
		body := bigStream(mb<<20, 16)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(body))
		}))
		m, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", Model: "gpt-4o"})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			b.SetBytes(int64(mb << 20))
			start := cputime.Process()
			for b.Loop() {
				resp, err := m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("write it")}}, nil)
				if err != nil || len(resp.Message.ToolCalls) != 1 || len(resp.Message.ToolCalls[0].Arguments) < mb<<20 {
					b.Fatalf("%v", err)
				}
			}
			b.ReportMetric(float64(cputime.Process()-start)/float64(time.Millisecond)/float64(b.N)/float64(mb), "cpu-ms/MB")
		})
		srv.Close()
	}
}
