package session_test

import (
	"context"
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

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/langchain"
	"github.com/saucerhq/saucer/llm/openai"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
)

// wire is a model server on loopback that answers each request with the
// next of its bodies, in a provider's real wire shape, and keeps the
// requests.
type wire struct {
	mu       sync.Mutex
	bodies   []string
	sse      bool
	requests []map[string]any
}

func (w *wire) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(b, &req)
	w.mu.Lock()
	n := len(w.requests)
	w.requests = append(w.requests, req)
	w.mu.Unlock()
	if n >= len(w.bodies) {
		http.Error(rw, `{"error":{"message":"no more replies"}}`, 500)
		return
	}
	if w.sse || req["stream"] == true {
		rw.Header().Set("Content-Type", "text/event-stream")
	} else {
		rw.Header().Set("Content-Type", "application/json")
	}
	io.WriteString(rw, w.bodies[n])
}

// lastUserText is the text of a request's last user turn, whatever the
// wire shape.
func lastUserText(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		switch c := m["content"].(type) {
		case string:
			return c
		case []any:
			var parts []string
			for _, p := range c {
				if pm, ok := p.(map[string]any); ok {
					if s, ok := pm["text"].(string); ok {
						parts = append(parts, s)
					}
				}
			}
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

func oaiCall(id, name, args, finish string, prompt int) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf(`{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":%q}],"usage":{"prompt_tokens":%d,"completion_tokens":9,"total_tokens":%d}}`,
		id, name, b, finish, prompt, prompt+9)
}

func anthCall(id, name, input, stop string) string {
	return fmt.Sprintf(`{"id":"m","type":"message","role":"assistant","model":"claude","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"stop_reason":%q,"usage":{"input_tokens":100,"output_tokens":9}}`,
		id, name, input, stop)
}

// TestTruncatedRepliesNeverAct: a reply cut at the token limit, stopped by
// a content filter or cut off in transit is never executed, whatever it
// holds — here a shortened `rm -rf keep` — in each provider's wire shape;
// the model is told what happened and asked again, and the cut reply's
// tokens count.
func TestTruncatedRepliesNeverAct(t *testing.T) {
	assign := `{"app":"shell","subtask":"Remove keep/tmp."}`
	finishApp := `{"result":"keep/tmp removed"}`
	finishHost := `{"result":"done"}`
	cases := []struct {
		name, want string
		open       func(url string) (llm.Model, error)
		bodies     []string
		stream     bool
	}{
		{"openai length", "cut off at the output token limit",
			func(url string) (llm.Model, error) {
				return openai.New(openai.Config{BaseURL: url, Model: "gpt-4o", APIKey: "k"})
			},
			[]string{oaiCall("a", "assign_subtask", assign, "tool_calls", 100), oaiCall("b", "execute_command", `{"command":"rm -rf keep`, "length", 100),
				oaiCall("c", "execute_command", `{"command":"rm -rf keep/tmp"}`, "tool_calls", 100), oaiCall("d", "finish_task", finishApp, "tool_calls", 100),
				oaiCall("e", "finish_task", finishHost, "tool_calls", 100)}, false},
		{"openai content filter", "content filter stopped your last reply",
			func(url string) (llm.Model, error) {
				return openai.New(openai.Config{BaseURL: url, Model: "gpt-4o", APIKey: "k"})
			},
			[]string{oaiCall("a", "assign_subtask", assign, "tool_calls", 100), oaiCall("b", "execute_command", `{"command":"rm -rf keep"}`, "content_filter", 100),
				oaiCall("c", "execute_command", `{"command":"rm -rf keep/tmp"}`, "tool_calls", 100), oaiCall("d", "finish_task", finishApp, "tool_calls", 100),
				oaiCall("e", "finish_task", finishHost, "tool_calls", 100)}, false},
		{"anthropic max_tokens", "cut off at the output token limit",
			func(url string) (llm.Model, error) {
				return langchain.NewAnthropic(langchain.Config{BaseURL: url, Model: "claude", APIKey: "k"})
			},
			[]string{anthCall("a", "assign_subtask", assign, "tool_use"), anthCall("b", "execute_command", `{"command":"rm -rf keep"}`, "max_tokens"),
				anthCall("c", "execute_command", `{"command":"rm -rf keep/tmp"}`, "tool_use"), anthCall("d", "finish_task", finishApp, "tool_use"),
				anthCall("e", "finish_task", finishHost, "tool_use")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &wire{bodies: tc.bodies}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			model, err := tc.open(hs.URL)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "keep", "tmp"), 0o755)
			os.WriteFile(filepath.Join(dir, "keep", "precious.txt"), []byte("keep me\n"), 0o644)
			cfg := config.Default()
			cfg.Agent.RetryBackoff = config.Duration(1)
			dev, err := local.Device(context.Background(), cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			var ran []string
			var usage llm.Usage
			sess, err := session.New(cfg, session.Options{Device: dev, Model: model, Observers: []func(agent.Event){func(e agent.Event) {
				if e.Kind == agent.EventDispatch {
					for _, c := range e.Commands {
						if c.ToolName == "execute_command" {
							ran = append(ran, fmt.Sprint(c.Parameters["command"]))
						}
					}
				}
				if e.Kind == agent.EventStep {
					usage = usage.Add(e.Usage)
				}
			}}})
			if err != nil {
				t.Fatal(err)
			}
			out := sess.Run(context.Background(), "remove keep/tmp")
			if !out.OK() {
				t.Fatalf("outcome %s %q", out.Status, out.Answer)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "keep", "precious.txt")); err != nil || string(b) != "keep me\n" {
				t.Errorf("keep/precious.txt: %q %v: the cut command ran", b, err)
			}
			if len(ran) != 1 || ran[0] != "rm -rf keep/tmp" {
				t.Errorf("commands run: %q, want only the complete one", ran)
			}
			if len(srv.requests) != 5 {
				t.Errorf("%d requests, want 5", len(srv.requests))
			}
			if got := lastUserText(srv.requests[2]); !strings.Contains(got, tc.want) || !strings.Contains(got, "none of it was run") {
				t.Errorf("the model was told: %q", got)
			}
			if usage.CompletionTokens != 9*5 {
				t.Errorf("completion tokens %d, want %d: every reply counts, the cut one too", usage.CompletionTokens, 9*5)
			}
		})
	}
}

// A model that is unavailable is passed over for its fallback: the switch
// is announced, and the reply names the model that answered.
func TestFallbackModel(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"the model is loading","type":"server_error"}}`)
	}))
	defer down.Close()
	up := &wire{bodies: []string{oaiCall("a", "finish_task", `{"result":"answered by the fallback"}`, "tool_calls", 50)}}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	t.Setenv("OLLAMA_HOST", down.URL)
	t.Setenv("VLLM_BASE_URL", upSrv.URL+"/v1")
	cfg, err := config.FromYAML([]byte(`
model: ollama:big
mode: tools
agent: {retry_backoff: 1ms, max_retries: 0}
models:
  "ollama:big": {mode: tools, fallbacks: ["vllm:small"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := local.Device(context.Background(), cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var switched []string
	var answeredBy string
	sess, err := session.New(cfg, session.Options{Device: dev, Observers: []func(agent.Event){func(e agent.Event) {
		if e.Kind == agent.EventFallback {
			switched = append(switched, e.Err.Error())
		}
		if e.Kind == agent.EventModelCall && e.Response != nil {
			answeredBy = e.Response.Model
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(context.Background(), "anything")
	if !out.OK() || out.Answer != "answered by the fallback" {
		t.Fatalf("outcome %s %q", out.Status, out.Answer)
	}
	if len(switched) != 1 || !strings.Contains(switched[0], "ollama:big is unavailable, asking vllm:small instead") || !strings.Contains(switched[0], "the model is loading") {
		t.Errorf("switches: %q", switched)
	}
	if answeredBy != "gpt-4o" && answeredBy != "vllm:small" {
		t.Errorf("the reply names %q", answeredBy)
	}
}
