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
	"google.golang.org/protobuf/proto"
)

// Span is one span as it arrived: its name and attributes, as text.
type Span struct {
	Name  string
	Attrs map[string]string
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
				r.spans = append(r.spans, Span{Name: s.Name, Attrs: attrs})
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(out)
}
