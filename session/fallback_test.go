package session_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/session"
)

// A model that is unavailable is passed over for its fallback: the switch
// is announced, and the reply names the model that answered.
func TestFallbackModel(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"the model is loading","type":"server_error"}}`)
	}))
	defer down.Close()
	up := &faultServer{sh: oaiJSON, acts: []act{reply("tool_calls", finishCall("answered by the fallback"))}}
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
