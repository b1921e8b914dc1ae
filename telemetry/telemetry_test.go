package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/telemetry"
)

// receiver is an OTLP/HTTP collector on loopback that decodes what
// arrives.
type receiver struct {
	mu    sync.Mutex
	spans map[string]map[string]string // name → attributes, as text
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var export coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &export); err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", 400)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range export.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				attrs := map[string]string{}
				for _, kv := range s.Attributes {
					attrs[kv.Key] = kv.Value.String()
				}
				r.spans[s.Name] = attrs
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(out)
}

// TestTracesReachACollector: a demo session's spans arrive at a real OTLP
// receiver, with the GenAI conventions' names.
func TestTracesReachACollector(t *testing.T) {
	rcv := &receiver{spans: map[string]map[string]string{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ctx := context.Background()
	model, err := scripted.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := telemetry.New(ctx, telemetry.Options{Endpoint: srv.URL, Model: "scripted:demo"}, "the demo")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	dev, err := local.Device(ctx, cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	sess, err := session.New(cfg, session.Options{Device: dev, Model: model, Observers: []func(agent.Event){tr.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if err := tr.End(ctx, out); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for name, want := range map[string][]string{
		"session":                    {"saucer.status", "FINISH"},
		"invoke_agent host":          {"gen_ai.agent.name", "host"},
		"chat scripted:demo":         {"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "tool_calls"},
		"execute_tool write_file":    {"gen_ai.tool.name", "write_file"},
		"execute_tool get_mcp_tools": {"gen_ai.operation.name", "execute_tool"},
	} {
		attrs, ok := rcv.spans[name]
		if !ok {
			t.Errorf("no span %q arrived (got %d spans)", name, len(rcv.spans))
			continue
		}
		text := ""
		for k, v := range attrs {
			text += k + "=" + v + "\n"
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("span %q lacks %q:\n%s", name, w, text)
			}
		}
	}
}
