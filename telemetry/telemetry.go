// Package telemetry exports a session as OpenTelemetry traces over OTLP,
// when configured (it is off by default: nothing is sent anywhere the user
// did not name). Spans follow the GenAI semantic conventions: a session,
// an invoke_agent span per agent, a chat span per model call (model,
// tokens, finish reason; a client span, since it calls a model server)
// and an execute_tool span per command (internal on a device in this
// process, client on a remote one). A span whose work failed has an error
// status with the (redacted) reason.
package telemetry

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
)

// Options say where traces go.
type Options struct {
	// Endpoint is the OTLP/HTTP collector, e.g. http://127.0.0.1:4318.
	Endpoint string
	// Headers are sent with every export (an API key, say).
	Headers map[string]string
	// Model names the session's model in its spans.
	Model string
	// Redact, when set, is applied to every text a span carries that came
	// from a person or a tool (task, subtask, errors): the recording's
	// redactor, so that a trace holds no secret a recording would not.
	Redact func(string) string
}

// Exporter sends the spans of many sessions to one collector: a server's
// tasks, an eval's trials. Start opens each session's Tracer.
type Exporter struct {
	otlp  *otlpHTTP
	batch *batcher
	o     Options
}

// NewExporter connects nothing yet: spans are batched and sent as they
// end.
func NewExporter(ctx context.Context, o Options) (*Exporter, error) {
	exp, err := newOTLPHTTP(o.Endpoint, o.Headers)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w (check telemetry.otlp_endpoint)", err)
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	return &Exporter{otlp: exp, batch: newBatcher(exp.ExportSpans), o: o}, nil
}

// Start opens a session span for task on model (empty: the Options'
// model), labelled (a task id, an eval case: saucer.KEY attributes), and
// returns the Tracer that observes the session. A session labelled with a
// "device" (a served task) runs its commands on a remote device, so its
// execute_tool spans are client spans; other sessions' are internal.
func (x *Exporter) Start(task, model string, labels map[string]string) *Tracer {
	if model == "" {
		model = x.o.Model
	}
	t := &Tracer{x: x, model: model, agents: map[string]*span{}, toolKind: kindInternal}
	if labels["device"] != "" {
		t.toolKind = kindClient
	}
	attrs := []attr{str("saucer.task", x.o.Redact(task)), str("gen_ai.request.model", model)}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		attrs = append(attrs, str("saucer."+k, labels[k]))
	}
	t.session = child(nil, "session", kindInternal, time.Now(), attrs...)
	return t
}

// Shutdown sends what is left and stops the exporter.
func (x *Exporter) Shutdown(ctx context.Context) error {
	defer x.otlp.client.CloseIdleConnections()
	return x.batch.shutdown(ctx)
}

// Tracer turns a session's events into spans. Observe is the session's
// observer; End ends the session span.
type Tracer struct {
	x     *Exporter
	own   bool // End shuts the exporter down (a tracer from New)
	model string
	// toolKind is the execute_tool spans' kind: client when the device
	// is remote.
	toolKind spanKind

	mu      sync.Mutex
	session *span
	agents  map[string]*span
}

// New starts an exporter of its own for one session (saucer run) and
// opens the session span; End shuts the exporter down.
func New(ctx context.Context, o Options, task string) (*Tracer, error) {
	x, err := NewExporter(ctx, o)
	if err != nil {
		return nil, err
	}
	t := x.Start(task, "", nil)
	t.own = true
	return t, nil
}

// Observe records one agent event as spans.
func (t *Tracer) Observe(e agent.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	parent := t.session
	if a, ok := t.agents[e.Agent]; ok {
		parent = a
	}
	switch e.Kind {
	case agent.EventAgentStart:
		t.agents[e.Agent] = child(t.session, "invoke_agent "+e.Agent, kindInternal, now,
			str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", e.Agent),
			str("saucer.role", string(e.Role)), str("saucer.app", e.App), str("saucer.subtask", t.x.o.Redact(e.Subtask)))
	case agent.EventAgentEnd:
		if a, ok := t.agents[e.Agent]; ok {
			if e.Note != nil {
				a.set(str("saucer.status", e.Note.Status))
			}
			switch {
			case e.Err != nil:
				t.failed(a, e.Err.Error())
			case e.Note != nil && failedStatus(e.Note.Status):
				t.failed(a, e.Note.Status+": "+e.Note.Result)
			}
			t.end(a, now)
			delete(t.agents, e.Agent)
		}
	case agent.EventModelCall:
		model := t.model
		attrs := []attr{str("gen_ai.operation.name", "chat"), str("gen_ai.request.model", model)}
		if r := e.Response; r != nil {
			attrs = append(attrs, integer("gen_ai.usage.input_tokens", r.Usage.PromptTokens),
				integer("gen_ai.usage.output_tokens", r.Usage.CompletionTokens),
				strs("gen_ai.response.finish_reasons", r.FinishReason))
			if r.Model != "" {
				attrs = append(attrs, str("gen_ai.response.model", r.Model))
			}
		}
		if e.Err != nil {
			attrs = append(attrs, str("error.type", t.x.o.Redact(e.Err.Error())))
		}
		s := child(parent, "chat "+model, kindClient, now.Add(-e.Duration), attrs...)
		if e.Err != nil {
			t.failed(s, e.Err.Error())
		}
		t.end(s, now)
	case agent.EventDispatch:
		for i, c := range e.Commands {
			attrs := []attr{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", c.ToolName), str("saucer.namespace", c.Namespace)}
			if i < len(e.Results) {
				attrs = append(attrs, str("saucer.result.status", string(e.Results[i].Status)))
			}
			s := child(parent, "execute_tool "+c.ToolName, t.toolKind, now.Add(-e.Duration), attrs...)
			if i < len(e.Results) && e.Results[i].Status == command.Failure {
				t.failed(s, e.Results[i].Error)
			}
			t.end(s, now)
		}
	case agent.EventStep:
		s := child(parent, fmt.Sprintf("step %d", e.Step), kindInternal, now.Add(-e.Duration),
			str("saucer.status", string(e.To)), integer("saucer.step", e.Step))
		if e.Err != nil {
			t.failed(s, e.Err.Error())
		}
		t.end(s, now)
	}
}

// End closes the session span with the outcome; a tracer from New also
// sends what is left and shuts its exporter down.
func (t *Tracer) End(ctx context.Context, out *agent.Outcome) error {
	t.mu.Lock()
	now := time.Now()
	for name, a := range t.agents {
		t.end(a, now)
		delete(t.agents, name)
	}
	if out != nil {
		t.session.set(str("saucer.status", string(out.Status)),
			integer("gen_ai.usage.input_tokens", out.Usage.PromptTokens), integer("gen_ai.usage.output_tokens", out.Usage.CompletionTokens))
		switch {
		case out.Err != nil:
			t.session.set(str("error.type", t.x.o.Redact(out.Err.Error())))
			t.failed(t.session, out.Err.Error())
		case failedStatus(string(out.Status)):
			t.failed(t.session, string(out.Status)+": "+out.Answer)
		}
	}
	t.end(t.session, now)
	t.mu.Unlock()
	if t.own {
		return t.x.Shutdown(ctx)
	}
	return nil
}

// failed sets span's status to error, with the reason redacted (and cut:
// an answer can be long).
func (t *Tracer) failed(s *span, reason string) {
	s.failed, s.message = true, cut(t.x.o.Redact(reason), 500)
}

// end ends s at now and hands it to the exporter.
func (t *Tracer) end(s *span, now time.Time) {
	s.end = now
	t.x.batch.end(s)
}

// failedStatus reports whether an agent's or a session's end status is a
// failure: it gave up (FAIL) or could not go on (ERROR).
func failedStatus(s string) bool { return s == string(fsm.Fail) || s == string(fsm.Error) }

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
