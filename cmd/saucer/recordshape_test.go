package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// shapeServer answers each request with the next of its replies in one
// provider's wire shape: a reply is either tool calls (name, arguments as
// JSON) or, in json mode, the text of one JSON object.
type shapeServer struct {
	anthropic bool
	replies   []shapeReply
	mu        sync.Mutex
	n         int
}

type shapeReply struct {
	calls [][2]string
	text  string
}

func (s *shapeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	n := s.n
	s.n++
	s.mu.Unlock()
	if n >= len(s.replies) {
		http.Error(w, `{"error":{"message":"no more replies"}}`, 500)
		return
	}
	rep := s.replies[n]
	stream := req["stream"] == true
	if s.anthropic {
		var blocks []string
		if rep.text != "" {
			t, _ := json.Marshal(rep.text)
			blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":%s}`, t))
		}
		for i, c := range rep.calls {
			blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d_%d","name":%q,"input":%s}`, n, i, c[0], c[1]))
		}
		stop := "end_turn"
		if len(rep.calls) > 0 {
			stop = "tool_use"
		}
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			ev := func(data string) {
				var typ struct{ Type string }
				json.Unmarshal([]byte(data), &typ)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, data)
			}
			ev(`{"type":"message_start","message":{"id":"msg","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":50,"output_tokens":1}}}`)
			i := 0
			if rep.text != "" {
				t, _ := json.Marshal(rep.text)
				ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
				ev(fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, t))
				ev(`{"type":"content_block_stop","index":0}`)
				i++
			}
			for j, c := range rep.calls {
				a, _ := json.Marshal(c[1])
				ev(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d_%d","name":%q,"input":{}}}`, i, n, j, c[0]))
				ev(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, a))
				ev(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
				i++
			}
			ev(fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q},"usage":{"output_tokens":7}}`, stop))
			ev(`{"type":"message_stop"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"usage":{"input_tokens":50,"output_tokens":7}}`,
			strings.Join(blocks, ","), stop)
		return
	}
	var calls []string
	for i, c := range rep.calls {
		a, _ := json.Marshal(c[1])
		calls = append(calls, fmt.Sprintf(`{"index":%d,"id":"call_%d_%d","type":"function","function":{"name":%q,"arguments":%s}}`, i, n, i, c[0], a))
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	content, _ := json.Marshal(rep.text)
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
		}
		chunk(fmt.Sprintf(`{"role":"assistant","content":%s}`, content), "null")
		for _, c := range calls {
			chunk(`{"tool_calls":[`+c+`]}`, "null")
		}
		chunk(`{}`, `"`+finish+`"`)
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":7,\"total_tokens\":57}}\n\ndata: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s,"tool_calls":[%s]},"finish_reason":%q}],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57}}`,
		content, strings.Join(calls, ","), finish)
}

// Recordings replay byte for byte whatever the provider's wire shape
// (OpenAI, Anthropic, Ollama's OpenAI-compatible API; plain and streamed)
// and in both modes: a run against a model server on loopback is recorded,
// then replayed offline, and every replayed request is the recorded one.
// The run reads a file big enough to be stored as an artifact.
func TestRecordThenReplayEveryProviderShape(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 400)
	replies := map[string][]shapeReply{
		"tools": {
			{calls: [][2]string{{"assign_subtask", `{"app":"files","subtask":"read big.txt"}`}}},
			{text: "Reading it.", calls: [][2]string{{"read_file", `{"path":"big.txt"}`}}},
			{calls: [][2]string{{"finish_task", `{"result":"read it"}`}}},
			{calls: [][2]string{{"finish_task", `{"result":"big.txt read"}`}}},
		},
		"json": {
			{text: `{"status":"ASSIGN","actions":[{"function":"assign_subtask","arguments":{"subtask":"read big.txt","app":"files"}}]}`},
			{text: `{"thought":"read it","status":"CONTINUE","actions":[{"function":"read_file","arguments":{"path":"big.txt"}}]}`},
			{text: `{"status":"FINISH","result":"read it"}`},
			{text: `{"status":"FINISH","result":"big.txt read"}`},
		},
	}
	for _, sh := range []struct {
		name, model, env string
		anthropic        bool
		stream           bool
	}{
		{"openai", "openai:gpt-4o", "OPENAI_BASE_URL", false, false},
		{"openai streamed", "openai:gpt-4o", "OPENAI_BASE_URL", false, true},
		{"anthropic", "anthropic:claude-sonnet-4-5", "ANTHROPIC_BASE_URL", true, false},
		{"anthropic streamed", "anthropic:claude-sonnet-4-5", "ANTHROPIC_BASE_URL", true, true},
		{"ollama", "ollama:qwen2.5", "OLLAMA_HOST", false, false},
	} {
		for _, mode := range []string{"tools", "json"} {
			t.Run(sh.name+"/"+mode, func(t *testing.T) {
				srv := httptest.NewServer(&shapeServer{anthropic: sh.anthropic, replies: replies[mode]})
				defer srv.Close()
				base := srv.URL
				if sh.env == "OPENAI_BASE_URL" {
					base += "/v1"
				}
				t.Setenv(sh.env, base)
				t.Setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnopqrstuvwxyz")
				t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-abcdefghijklmnopqrstuvwxyz")
				dir, runs := t.TempDir(), t.TempDir()
				os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644)
				stream := "--no-stream"
				if sh.stream {
					stream = "--stream"
				}
				out, code := saucer(t, "run", stream, "--mode", mode, "--model", sh.model, "-C", dir, "--runs", runs, "read big.txt")
				if code != 0 || !strings.Contains(out, "big.txt read") {
					t.Fatalf("run: exit %d\n%s", code, out)
				}
				run := onlyRun(t, runs)
				if arts, _ := os.ReadDir(filepath.Join(run, "artifacts")); len(arts) == 0 {
					t.Fatal("no artifact: the big result was not stored apart")
				}
				srv.Close() // the replay must not need the server
				out, code = saucer(t, "replay", run)
				if code != 0 || !strings.Contains(out, "identical to the recording: 4 model calls") {
					t.Errorf("replay: exit %d\n%s", code, out)
				}
			})
		}
	}
}
