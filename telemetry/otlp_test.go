package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeExportDecodes: what the hand-written encoder writes is what
// the official OTLP types decode: ids, parent, kind, times, every
// attribute type, an event, the status (OTLP numbers ERROR 2), the
// resource and the scope.
func TestEncodeExportDecodes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "saucer"))))
	tr := tp.Tracer("scope-x", trace.WithInstrumentationVersion("v9"))
	ctx, parent := tr.Start(context.Background(), "session")
	_, child := tr.Start(ctx, "execute_tool", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("s", "text"), attribute.Int64("i", -7), attribute.Float64("f", 2.5), attribute.Bool("b", true),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2, 3})))
	child.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	child.SetStatus(codes.Error, "the tool failed")
	child.End()
	parent.End()
	spans := rec.Ended()

	var got coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeExport(spans), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.ResourceSpans) != 1 || len(got.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("grouping: %v", &got)
	}
	rs := got.ResourceSpans[0]
	if a := rs.Resource.Attributes; len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "saucer" {
		t.Errorf("resource %v", a)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "scope-x" || ss.Scope.Version != "v9" || len(ss.Spans) != 2 {
		t.Fatalf("scope %v with %d spans", ss.Scope, len(ss.Spans))
	}
	c, p := ss.Spans[0], ss.Spans[1]
	want := spans[0].SpanContext()
	if tid, sid := want.TraceID(), want.SpanID(); string(c.TraceId) != string(tid[:]) || string(c.SpanId) != string(sid[:]) {
		t.Errorf("ids %x %x", c.TraceId, c.SpanId)
	}
	if string(c.ParentSpanId) != string(p.SpanId) || len(p.ParentSpanId) != 0 {
		t.Errorf("parent %x of %x; the root's %x", c.ParentSpanId, p.SpanId, p.ParentSpanId)
	}
	if c.Name != "execute_tool" || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("name %q kinds %v %v", c.Name, c.Kind, p.Kind)
	}
	if c.StartTimeUnixNano != uint64(spans[0].StartTime().UnixNano()) || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("times %d %d", c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
	attrs := map[string]string{}
	for _, kv := range c.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for k, v := range map[string]string{"s": `string_value:"text"`, "i": "int_value:-7", "f": "double_value:2.5", "b": "bool_value:true",
		"ss": `string_value:"a"`, "is": "int_value:3"} {
		if !strings.Contains(strings.ReplaceAll(attrs[k], " ", ""), v) {
			t.Errorf("attribute %s = %s, want %s in it", k, attrs[k], v)
		}
	}
	if len(c.Events) != 1 || c.Events[0].Name != "retry" || c.Events[0].Attributes[0].Value.GetIntValue() != 2 {
		t.Errorf("events %v", c.Events)
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "the tool failed" || p.Status != nil {
		t.Errorf("status %v; the parent's %v", c.Status, p.Status)
	}
}

// TestExportErrors: an endpoint that is no URL is refused up front, and a
// collector's refusal is an error naming its status.
func TestExportErrors(t *testing.T) {
	if _, err := newOTLPHTTP("127.0.0.1:4318", nil); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("a bare host:port: %v", err)
	}
	var header string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Get("X-Key")
		http.Error(w, "over quota", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	x, err := newOTLPHTTP(srv.URL, map[string]string{"X-Key": "k1"})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	_, s := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t").Start(context.Background(), "x")
	s.End()
	err = x.ExportSpans(context.Background(), rec.Ended())
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "over quota") || header != "k1" {
		t.Errorf("export to a refusing collector: %v (header %q)", err, header)
	}
	x.Shutdown(context.Background())
	if err := x.ExportSpans(context.Background(), rec.Ended()); err != nil {
		t.Errorf("after shutdown: %v", err)
	}
}
