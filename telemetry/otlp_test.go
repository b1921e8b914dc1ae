package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeExportDecodes: what the hand-written encoder writes is what
// the official OTLP types decode: ids, parent, kind, times, every
// attribute type Saucer's spans carry, the status (OTLP numbers ERROR 2),
// the resource and the scope.
func TestEncodeExportDecodes(t *testing.T) {
	start := time.Unix(1700000000, 5)
	root := child(nil, "session", kindInternal, start)
	tool := child(root, "execute_tool", kindClient, start.Add(time.Millisecond),
		str("s", "text"), integer("i", -7), strs("ss", "a", "b"))
	tool.set(str("s", "replaced"))
	tool.failed, tool.message = true, "the tool failed"
	tool.end = start.Add(2 * time.Millisecond)
	root.end = start.Add(3 * time.Millisecond)
	spans := []*span{tool, root}

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
	if ss.Scope.Name != scope || len(ss.Spans) != 2 {
		t.Fatalf("scope %v with %d spans", ss.Scope, len(ss.Spans))
	}
	c, p := ss.Spans[0], ss.Spans[1]
	if string(c.TraceId) != string(spans[0].traceID[:]) || string(c.SpanId) != string(spans[0].id[:]) || string(p.TraceId) != string(c.TraceId) {
		t.Errorf("ids %x %x; the parent's trace %x", c.TraceId, c.SpanId, p.TraceId)
	}
	if string(c.ParentSpanId) != string(p.SpanId) || len(p.ParentSpanId) != 0 || len(c.TraceId) != 16 || len(c.SpanId) != 8 {
		t.Errorf("parent %x of %x; the root's %x", c.ParentSpanId, p.SpanId, p.ParentSpanId)
	}
	if c.Name != "execute_tool" || c.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("name %q kinds %v %v", c.Name, c.Kind, p.Kind)
	}
	if c.StartTimeUnixNano != uint64(start.Add(time.Millisecond).UnixNano()) || c.EndTimeUnixNano != uint64(start.Add(2*time.Millisecond).UnixNano()) {
		t.Errorf("times %d %d", c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
	attrs := map[string]string{}
	for _, kv := range c.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	if len(c.Attributes) != 3 {
		t.Errorf("%d attributes, want 3 (a key set twice is replaced): %v", len(c.Attributes), c.Attributes)
	}
	for k, v := range map[string]string{"s": `string_value:"replaced"`, "i": "int_value:-7", "ss": `string_value:"b"`} {
		if !strings.Contains(strings.ReplaceAll(attrs[k], " ", ""), v) {
			t.Errorf("attribute %s = %s, want %s in it", k, attrs[k], v)
		}
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
	s := child(nil, "x", kindInternal, time.Now())
	err = x.ExportSpans(context.Background(), []*span{s})
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "over quota") || header != "k1" {
		t.Errorf("export to a refusing collector: %v (header %q)", err, header)
	}
}
