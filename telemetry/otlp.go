package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpHTTP exports spans over OTLP/HTTP in its protobuf encoding, written
// field by field. The OpenTelemetry exporter module links gRPC and its
// gateway even for HTTP (4 MB of the binary); a trace export is one
// message of a few nested types, so Saucer writes it itself.
type otlpHTTP struct {
	url     string
	headers map[string]string
	client  *http.Client
	stopped atomic.Bool
}

func newOTLPHTTP(endpoint string, headers map[string]string) (*otlpHTTP, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the OTLP endpoint %q is not an http:// or https:// URL (e.g. http://127.0.0.1:4318)", endpoint)
	}
	return &otlpHTTP{url: endpoint + "/v1/traces", headers: headers, client: &http.Client{}}, nil
}

// ExportSpans posts spans, grouped by resource and scope, in one request.
func (x *otlpHTTP) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if x.stopped.Load() || len(spans) == 0 {
		return nil
	}
	body := encodeExport(spans)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range x.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := x.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp export to %s: %w", x.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp export to %s: %s: %q", x.url, resp.Status, msg)
	}
	return nil
}

// Shutdown stops exports; the batcher has sent what was left before.
func (x *otlpHTTP) Shutdown(context.Context) error {
	x.stopped.Store(true)
	x.client.CloseIdleConnections()
	return nil
}

// The field numbers of the OTLP trace messages (opentelemetry-proto,
// trace/v1, common/v1, resource/v1, collector/trace/v1).
const (
	exportResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	resourceSpansResource = 1
	resourceSpansScope    = 2
	resourceAttributes    = 1
	scopeSpansScope       = 1
	scopeSpansSpans       = 2
	scopeName             = 1
	scopeVersion          = 2

	spanTraceID    = 1
	spanID         = 2
	spanParentID   = 4
	spanName       = 5
	spanKind       = 6
	spanStart      = 7
	spanEnd        = 8
	spanAttributes = 9
	spanEvents     = 11
	spanStatus     = 15
	eventTime      = 1
	eventName      = 2
	eventAttrs     = 3
	statusMessage  = 2
	statusCode     = 3

	keyValueKey   = 1
	keyValueValue = 2
	anyString     = 1
	anyBool       = 2
	anyInt        = 3
	anyDouble     = 4
	anyArray      = 5
	arrayValues   = 1

	otlpStatusOK    = 1
	otlpStatusError = 2
)

// encodeExport writes an ExportTraceServiceRequest: one ResourceSpans per
// resource, one ScopeSpans per scope in it, in the order spans came.
func encodeExport(spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		res    *resource.Resource
		scopes []instrumentation.Scope
		spans  map[instrumentation.Scope][]sdktrace.ReadOnlySpan
	}
	var groups []*group
	byRes := map[attribute.Distinct]*group{}
	for _, s := range spans {
		key := s.Resource().Equivalent()
		g := byRes[key]
		if g == nil {
			g = &group{res: s.Resource(), spans: map[instrumentation.Scope][]sdktrace.ReadOnlySpan{}}
			byRes[key] = g
			groups = append(groups, g)
		}
		sc := s.InstrumentationScope()
		sc.Attributes = attribute.Set{} // a map key: scope attributes are not exported
		if _, ok := g.spans[sc]; !ok {
			g.scopes = append(g.scopes, sc)
		}
		g.spans[sc] = append(g.spans[sc], s)
	}
	var out []byte
	for _, g := range groups {
		out = message(out, exportResourceSpans, func(b []byte) []byte {
			b = message(b, resourceSpansResource, func(b []byte) []byte {
				return keyValues(b, resourceAttributes, g.res.Attributes())
			})
			for _, sc := range g.scopes {
				b = message(b, resourceSpansScope, func(b []byte) []byte {
					b = message(b, scopeSpansScope, func(b []byte) []byte {
						b = str(b, scopeName, sc.Name)
						return str(b, scopeVersion, sc.Version)
					})
					for _, s := range g.spans[sc] {
						b = message(b, scopeSpansSpans, func(b []byte) []byte { return encodeSpan(b, s) })
					}
					return b
				})
			}
			return b
		})
	}
	return out
}

func encodeSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = protowire.AppendTag(b, spanTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, tid[:])
	b = protowire.AppendTag(b, spanID, protowire.BytesType)
	b = protowire.AppendBytes(b, sid[:])
	if p := s.Parent(); p.SpanID().IsValid() {
		pid := p.SpanID()
		b = protowire.AppendTag(b, spanParentID, protowire.BytesType)
		b = protowire.AppendBytes(b, pid[:])
	}
	b = str(b, spanName, s.Name())
	// OTLP numbers span kinds as OpenTelemetry's API does.
	b = protowire.AppendTag(b, spanKind, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(s.SpanKind()))
	b = protowire.AppendTag(b, spanStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.StartTime().UnixNano()))
	b = protowire.AppendTag(b, spanEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.EndTime().UnixNano()))
	b = keyValues(b, spanAttributes, s.Attributes())
	for _, e := range s.Events() {
		b = message(b, spanEvents, func(b []byte) []byte {
			b = protowire.AppendTag(b, eventTime, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, uint64(e.Time.UnixNano()))
			b = str(b, eventName, e.Name)
			return keyValues(b, eventAttrs, e.Attributes)
		})
	}
	if st := s.Status(); st.Code != codes.Unset {
		// OTLP's codes are not the API's: OK is 1 and ERROR 2.
		code := uint64(otlpStatusOK)
		if st.Code == codes.Error {
			code = otlpStatusError
		}
		b = message(b, spanStatus, func(b []byte) []byte {
			b = str(b, statusMessage, st.Description)
			b = protowire.AppendTag(b, statusCode, protowire.VarintType)
			return protowire.AppendVarint(b, code)
		})
	}
	return b
}

// message appends field num holding the message body writes.
func message(b []byte, num protowire.Number, body func([]byte) []byte) []byte {
	inner := body(nil)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, inner)
}

// str appends a string field, unless it is empty (proto3's default).
func str(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func keyValues(b []byte, num protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = message(b, num, func(b []byte) []byte {
			b = str(b, keyValueKey, string(kv.Key))
			return message(b, keyValueValue, func(b []byte) []byte { return anyValue(b, kv.Value) })
		})
	}
	return b
}

// anyValue writes an AnyValue; a type OTLP's scalars and arrays do not
// cover is sent as its string form.
func anyValue(b []byte, v attribute.Value) []byte {
	scalar := func(b []byte, num protowire.Number, wt protowire.Type, x uint64) []byte {
		b = protowire.AppendTag(b, num, wt)
		if wt == protowire.Fixed64Type {
			return protowire.AppendFixed64(b, x)
		}
		return protowire.AppendVarint(b, x)
	}
	array := func(b []byte, n int, item func(b []byte, i int) []byte) []byte {
		return message(b, anyArray, func(b []byte) []byte {
			for i := range n {
				b = message(b, arrayValues, func(b []byte) []byte { return item(b, i) })
			}
			return b
		})
	}
	switch v.Type() {
	case attribute.BOOL:
		return scalar(b, anyBool, protowire.VarintType, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		return scalar(b, anyInt, protowire.VarintType, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return scalar(b, anyDouble, protowire.Fixed64Type, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, anyString, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BOOLSLICE:
		xs := v.AsBoolSlice()
		return array(b, len(xs), func(b []byte, i int) []byte {
			return scalar(b, anyBool, protowire.VarintType, protowire.EncodeBool(xs[i]))
		})
	case attribute.INT64SLICE:
		xs := v.AsInt64Slice()
		return array(b, len(xs), func(b []byte, i int) []byte { return scalar(b, anyInt, protowire.VarintType, uint64(xs[i])) })
	case attribute.FLOAT64SLICE:
		xs := v.AsFloat64Slice()
		return array(b, len(xs), func(b []byte, i int) []byte {
			return scalar(b, anyDouble, protowire.Fixed64Type, math.Float64bits(xs[i]))
		})
	case attribute.STRINGSLICE:
		xs := v.AsStringSlice()
		return array(b, len(xs), func(b []byte, i int) []byte {
			b = protowire.AppendTag(b, anyString, protowire.BytesType)
			return protowire.AppendString(b, xs[i])
		})
	}
	b = protowire.AppendTag(b, anyString, protowire.BytesType)
	return protowire.AppendString(b, v.Emit())
}
