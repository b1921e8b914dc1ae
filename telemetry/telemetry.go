// Package telemetry exports a session as OpenTelemetry traces over OTLP,
// when configured (it is off by default: nothing is sent anywhere the user
// did not name). Spans follow the GenAI semantic conventions: a session,
// an invoke_agent span per agent, a chat span per model call (model,
// tokens, finish reason) and an execute_tool span per command.
package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/saucerhq/saucer/agent"
)

// Options say where traces go.
type Options struct {
	// Endpoint is the OTLP/HTTP collector, e.g. http://127.0.0.1:4318.
	Endpoint string
	// Headers are sent with every export (an API key, say).
	Headers map[string]string
	// Model names the session's model in its spans.
	Model string
}

// Tracer turns a session's events into spans. Observe is the session's
// observer; End ends the session span and flushes.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	model    string

	mu      sync.Mutex
	ctx     context.Context // the session span's
	session trace.Span
	agents  map[string]agentSpan
}

type agentSpan struct {
	ctx  context.Context
	span trace.Span
}

// New starts a tracer exporting to o.Endpoint and opens the session span.
func New(ctx context.Context, o Options, task string) (*Tracer, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(o.Endpoint+"/v1/traces"), otlptracehttp.WithHeaders(o.Headers))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w (check telemetry.otlp_endpoint)", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "saucer"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := &Tracer{provider: tp, tracer: tp.Tracer("github.com/saucerhq/saucer"), model: o.Model, agents: map[string]agentSpan{}}
	t.ctx, t.session = t.tracer.Start(context.Background(), "session",
		trace.WithAttributes(attribute.String("saucer.task", task), attribute.String("gen_ai.request.model", o.Model)))
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
		ctx, span := t.tracer.Start(t.ctx, "invoke_agent "+e.Agent, trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", e.Agent),
			attribute.String("saucer.role", string(e.Role)), attribute.String("saucer.app", e.App), attribute.String("saucer.subtask", e.Subtask)))
		t.agents[e.Agent] = agentSpan{ctx, span}
	case agent.EventAgentEnd:
		if a, ok := t.agents[e.Agent]; ok {
			if e.Note != nil {
				a.span.SetAttributes(attribute.String("saucer.status", e.Note.Status))
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
			attrs = append(attrs, attribute.String("error.type", e.Err.Error()))
		}
		_, span := t.tracer.Start(parent, "chat "+model, trace.WithTimestamp(now.Add(-e.Duration)), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(now))
	case agent.EventDispatch:
		for i, c := range e.Commands {
			attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", c.ToolName), attribute.String("saucer.namespace", c.Namespace)}
			if i < len(e.Results) {
				attrs = append(attrs, attribute.String("saucer.result.status", string(e.Results[i].Status)))
			}
			_, span := t.tracer.Start(parent, "execute_tool "+c.ToolName, trace.WithTimestamp(now.Add(-e.Duration)), trace.WithAttributes(attrs...))
			span.End(trace.WithTimestamp(now))
		}
	case agent.EventStep:
		_, span := t.tracer.Start(parent, fmt.Sprintf("step %d", e.Step), trace.WithTimestamp(now.Add(-e.Duration)),
			trace.WithAttributes(attribute.String("saucer.status", string(e.To)), attribute.Int("saucer.step", e.Step)))
		span.End(trace.WithTimestamp(now))
	}
}

// End closes the session span with the outcome and sends what is left.
func (t *Tracer) End(ctx context.Context, out *agent.Outcome) error {
	t.mu.Lock()
	for name, a := range t.agents {
		a.span.End()
		delete(t.agents, name)
	}
	if out != nil {
		t.session.SetAttributes(attribute.String("saucer.status", string(out.Status)),
			attribute.Int("gen_ai.usage.input_tokens", out.Usage.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", out.Usage.CompletionTokens))
	}
	t.session.End()
	t.mu.Unlock()
	return t.provider.Shutdown(ctx)
}
