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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

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
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	o        Options
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
	res := resource.NewSchemaless(attribute.String("service.name", "saucer"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Exporter{provider: tp, tracer: tp.Tracer("github.com/saucerhq/saucer"), o: o}, nil
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
	t := &Tracer{x: x, model: model, agents: map[string]agentSpan{}, toolKind: trace.SpanKindInternal}
	if labels["device"] != "" {
		t.toolKind = trace.SpanKindClient
	}
	attrs := []attribute.KeyValue{attribute.String("saucer.task", x.o.Redact(task)), attribute.String("gen_ai.request.model", model)}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		attrs = append(attrs, attribute.String("saucer."+k, labels[k]))
	}
	t.ctx, t.session = x.tracer.Start(context.Background(), "session", trace.WithAttributes(attrs...))
	return t
}

// Shutdown sends what is left and stops the exporter.
func (x *Exporter) Shutdown(ctx context.Context) error { return x.provider.Shutdown(ctx) }

// Tracer turns a session's events into spans. Observe is the session's
// observer; End ends the session span.
type Tracer struct {
	x     *Exporter
	own   bool // End shuts the exporter down (a tracer from New)
	model string
	// toolKind is the execute_tool spans' kind: client when the device
	// is remote.
	toolKind trace.SpanKind

	mu      sync.Mutex
	ctx     context.Context // the session span's
	session trace.Span
	agents  map[string]agentSpan
}

type agentSpan struct {
	ctx  context.Context
	span trace.Span
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
	parent := t.ctx
	if a, ok := t.agents[e.Agent]; ok {
		parent = a.ctx
	}
	switch e.Kind {
	case agent.EventAgentStart:
		ctx, span := t.x.tracer.Start(t.ctx, "invoke_agent "+e.Agent, trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", e.Agent),
			attribute.String("saucer.role", string(e.Role)), attribute.String("saucer.app", e.App), attribute.String("saucer.subtask", t.x.o.Redact(e.Subtask))))
		t.agents[e.Agent] = agentSpan{ctx, span}
	case agent.EventAgentEnd:
		if a, ok := t.agents[e.Agent]; ok {
			if e.Note != nil {
				a.span.SetAttributes(attribute.String("saucer.status", e.Note.Status))
			}
			switch {
			case e.Err != nil:
				t.failed(a.span, e.Err.Error())
			case e.Note != nil && failedStatus(e.Note.Status):
				t.failed(a.span, e.Note.Status+": "+e.Note.Result)
			}
			a.span.End()
			delete(t.agents, e.Agent)
		}
	case agent.EventModelCall:
		model := t.model
		attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", model)}
		if r := e.Response; r != nil {
			attrs = append(attrs, attribute.Int("gen_ai.usage.input_tokens", r.Usage.PromptTokens),
				attribute.Int("gen_ai.usage.output_tokens", r.Usage.CompletionTokens),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{r.FinishReason}))
			if r.Model != "" {
				attrs = append(attrs, attribute.String("gen_ai.response.model", r.Model))
			}
		}
		if e.Err != nil {
			attrs = append(attrs, attribute.String("error.type", t.x.o.Redact(e.Err.Error())))
		}
		_, span := t.x.tracer.Start(parent, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(now.Add(-e.Duration)), trace.WithAttributes(attrs...))
		if e.Err != nil {
			t.failed(span, e.Err.Error())
		}
		span.End(trace.WithTimestamp(now))
	case agent.EventDispatch:
		for i, c := range e.Commands {
			attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", c.ToolName), attribute.String("saucer.namespace", c.Namespace)}
			if i < len(e.Results) {
				attrs = append(attrs, attribute.String("saucer.result.status", string(e.Results[i].Status)))
			}
			_, span := t.x.tracer.Start(parent, "execute_tool "+c.ToolName, trace.WithSpanKind(t.toolKind),
				trace.WithTimestamp(now.Add(-e.Duration)), trace.WithAttributes(attrs...))
			if i < len(e.Results) && e.Results[i].Status == command.Failure {
				t.failed(span, e.Results[i].Error)
			}
			span.End(trace.WithTimestamp(now))
		}
	case agent.EventStep:
		_, span := t.x.tracer.Start(parent, fmt.Sprintf("step %d", e.Step), trace.WithTimestamp(now.Add(-e.Duration)),
			trace.WithAttributes(attribute.String("saucer.status", string(e.To)), attribute.Int("saucer.step", e.Step)))
		if e.Err != nil {
			t.failed(span, e.Err.Error())
		}
		span.End(trace.WithTimestamp(now))
	}
}

// End closes the session span with the outcome; a tracer from New also
// sends what is left and shuts its exporter down.
func (t *Tracer) End(ctx context.Context, out *agent.Outcome) error {
	t.mu.Lock()
	for name, a := range t.agents {
		a.span.End()
		delete(t.agents, name)
	}
	if out != nil {
		t.session.SetAttributes(attribute.String("saucer.status", string(out.Status)),
			attribute.Int("gen_ai.usage.input_tokens", out.Usage.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", out.Usage.CompletionTokens))
		switch {
		case out.Err != nil:
			t.session.SetAttributes(attribute.String("error.type", t.x.o.Redact(out.Err.Error())))
			t.failed(t.session, out.Err.Error())
		case failedStatus(string(out.Status)):
			t.failed(t.session, string(out.Status)+": "+out.Answer)
		}
	}
	t.session.End()
	t.mu.Unlock()
	if t.own {
		return t.x.Shutdown(ctx)
	}
	return nil
}

// failed sets span's status to error, with the reason redacted (and cut:
// an answer can be long).
func (t *Tracer) failed(span trace.Span, reason string) {
	span.SetStatus(codes.Error, cut(t.x.o.Redact(reason), 500))
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
