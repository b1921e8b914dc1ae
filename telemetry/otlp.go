package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

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
}

func newOTLPHTTP(endpoint string, headers map[string]string) (*otlpHTTP, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the OTLP endpoint %q is not an http:// or https:// URL (e.g. http://127.0.0.1:4318)", endpoint)
	}
	return &otlpHTTP{url: endpoint + "/v1/traces", headers: headers, client: &http.Client{}}, nil
}

// ExportSpans posts spans, grouped by resource and scope, in one request.
func (x *otlpHTTP) ExportSpans(ctx context.Context, spans []*span) error {
	if len(spans) == 0 {
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

	spanTraceID    = 1
	spanID         = 2
	spanParentID   = 4
	spanName       = 5
	spanKindField  = 6
	spanStart      = 7
	spanEnd        = 8
	spanAttributes = 9
	spanStatus     = 15
	statusMessage  = 2
	statusCode     = 3

	keyValueKey   = 1
	keyValueValue = 2
	anyString     = 1
	anyInt        = 3
	anyArray      = 5
	arrayValues   = 1

	otlpStatusError = 2
)

// scope names the instrumentation in every export: Saucer itself.
const scope = "github.com/saucerhq/saucer"

// encodeExport writes an ExportTraceServiceRequest: one ResourceSpans
// (service.name saucer) holding one ScopeSpans with the spans, in the
// order they came.
func encodeExport(spans []*span) []byte {
	return message(nil, exportResourceSpans, func(b []byte) []byte {
		b = message(b, resourceSpansResource, func(b []byte) []byte {
			return keyValues(b, resourceAttributes, []attr{str("service.name", "saucer")})
		})
		return message(b, resourceSpansScope, func(b []byte) []byte {
			b = message(b, scopeSpansScope, func(b []byte) []byte { return strField(b, scopeName, scope) })
			for _, s := range spans {
				b = message(b, scopeSpansSpans, func(b []byte) []byte { return encodeSpan(b, s) })
			}
			return b
		})
	})
}

func encodeSpan(b []byte, s *span) []byte {
	b = protowire.AppendTag(b, spanTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, s.traceID[:])
	b = protowire.AppendTag(b, spanID, protowire.BytesType)
	b = protowire.AppendBytes(b, s.id[:])
	if s.parent != [8]byte{} {
		b = protowire.AppendTag(b, spanParentID, protowire.BytesType)
		b = protowire.AppendBytes(b, s.parent[:])
	}
	b = strField(b, spanName, s.name)
	b = protowire.AppendTag(b, spanKindField, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(s.kind))
	b = protowire.AppendTag(b, spanStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.start.UnixNano()))
	b = protowire.AppendTag(b, spanEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.end.UnixNano()))
	b = keyValues(b, spanAttributes, s.attrs)
	if s.failed {
		b = message(b, spanStatus, func(b []byte) []byte {
			b = strField(b, statusMessage, s.message)
			b = protowire.AppendTag(b, statusCode, protowire.VarintType)
			return protowire.AppendVarint(b, otlpStatusError)
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

// strField appends a string field, unless it is empty (proto3's default).
func strField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func keyValues(b []byte, num protowire.Number, kvs []attr) []byte {
	for _, kv := range kvs {
		b = message(b, num, func(b []byte) []byte {
			b = strField(b, keyValueKey, kv.key)
			return message(b, keyValueValue, func(b []byte) []byte { return anyValue(b, kv.value) })
		})
	}
	return b
}

// anyValue writes an AnyValue: a string, an integer or an array of
// strings, what Saucer's spans carry.
func anyValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case int64:
		b = protowire.AppendTag(b, anyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v))
	case []string:
		return message(b, anyArray, func(b []byte) []byte {
			for _, x := range v {
				b = message(b, arrayValues, func(b []byte) []byte { return anyValue(b, x) })
			}
			return b
		})
	case string:
		b = protowire.AppendTag(b, anyString, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	panic(fmt.Sprintf("telemetry: attribute value of type %T", v))
}
