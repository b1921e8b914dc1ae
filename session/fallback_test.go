package session_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
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

func oaiCall(id, name, args, finish string, prompt int) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf(`{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":%q}],"usage":{"prompt_tokens":%d,"completion_tokens":9,"total_tokens":%d}}`,
		id, name, b, finish, prompt, prompt+9)
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
	var switched []string
	var answeredBy string
	out := runLocal(t, cfg, t.TempDir(), session.Options{Observers: []func(agent.Event){func(e agent.Event) {
		if e.Kind == agent.EventFallback {
			switched = append(switched, e.Err.Error())
		}
		if e.Kind == agent.EventModelCall && e.Response != nil {
			answeredBy = e.Response.Model
		}
	}}}, "anything")
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
