// Package telemetrytest is an OTLP/HTTP trace receiver for tests: a real
// collector endpoint on loopback that decodes the protobuf exports that
// arrive and keeps their spans.
package telemetrytest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span as it arrived: its name, kind (client, internal, ...)
// and attributes, as text, and its status when one was set (code error or
// ok, with the message).
type Span struct {
	Name          string
	Kind          string
	Attrs         map[string]string
	Status        string
	StatusMessage string
}

// Receiver collects spans. URL is its endpoint (give it as
// telemetry.otlp_endpoint); Close stops it.
type Receiver struct {
	URL string
	srv *httptest.Server

	mu    sync.Mutex
	spans []Span
}

// New starts a receiver on a loopback port.
func New() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// Spans returns the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Named returns the received spans called name.
func (r *Receiver) Named(name string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

var kinds = map[tracepb.Span_SpanKind]string{
	tracepb.Span_SPAN_KIND_UNSPECIFIED: "unspecified", tracepb.Span_SPAN_KIND_INTERNAL: "internal",
	tracepb.Span_SPAN_KIND_SERVER: "server", tracepb.Span_SPAN_KIND_CLIENT: "client",
	tracepb.Span_SPAN_KIND_PRODUCER: "producer", tracepb.Span_SPAN_KIND_CONSUMER: "consumer",
}

var statuses = map[tracepb.Status_StatusCode]string{
	tracepb.Status_STATUS_CODE_UNSET: "", tracepb.Status_STATUS_CODE_OK: "ok", tracepb.Status_STATUS_CODE_ERROR: "error",
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var export coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &export); err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				attrs := map[string]string{}
				for _, kv := range s.Attributes {
					attrs[kv.Key] = kv.Value.GetStringValue()
					if attrs[kv.Key] == "" {
						attrs[kv.Key] = kv.Value.String()
					}
				}
				span := Span{Name: s.Name, Kind: kinds[s.Kind], Attrs: attrs}
				if st := s.Status; st != nil {
					span.Status, span.StatusMessage = statuses[st.Code], st.Message
				}
				r.spans = append(r.spans, span)
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(out)
}
