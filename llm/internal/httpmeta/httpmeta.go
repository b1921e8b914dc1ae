// Package httpmeta is the HTTP layer shared by the providers: it adds
// configured headers to every request and notes what a failed response said
// (status, Retry-After) that provider SDKs fold into error text or drop, so
// the provider can build a precise *llm.Error.
package httpmeta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/saucerhq/saucer/llm"
)

// Doer is the HTTP client handed to a provider SDK.
type Doer struct {
	Client  *http.Client
	Headers http.Header
	// Fix, when set, may rewrite a successful JSON body before the SDK
	// reads it (servers that speak a dialect of the provider's format), or
	// turn it into a failure status with a message.
	Fix func(body []byte) (fixed []byte, status int, err error)
	// StreamEnd, when set, is what a complete event stream holds at its
	// end (Anthropic's "message_stop"): a stream that closes without it
	// was cut in transit, which Meta.Cut reports, because some SDKs hand
	// back such a stream as an empty reply.
	StreamEnd []byte
	// Stream, when set, wraps a successful event stream's body before the
	// SDK reads it (Anthropic's tool input is merged there: see
	// langchain.coalesceToolInput).
	Stream func(io.ReadCloser) io.ReadCloser
}

// Do sends the request with the configured headers and, on a failed
// response, fills in the Meta on the request's context (see With).
func (d *Doer) Do(req *http.Request) (*http.Response, error) {
	for k, vs := range d.Headers {
		req.Header[k] = append([]string(nil), vs...) // a copy per request
	}
	resp, err := d.Client.Do(req)
	if err == nil && d.Fix != nil && resp.StatusCode == http.StatusOK && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		body, rerr := readBody(resp.Body, resp.ContentLength)
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		fixed, status, ferr := d.Fix(body)
		if ferr != nil {
			return nil, ferr
		}
		if status != 0 {
			resp.StatusCode, resp.Status = status, fmt.Sprintf("%d %s", status, http.StatusText(status))
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(fixed)), int64(len(fixed))
	}
	if err == nil && resp.StatusCode == http.StatusOK && strings.Contains(resp.Header.Get("Content-Type"), "event-stream") {
		if meta, ok := req.Context().Value(metaKey{}).(*Meta); ok && d.StreamEnd != nil {
			meta.Cut = true // until the end is seen
			resp.Body = &endWatch{ReadCloser: resp.Body, end: d.StreamEnd, meta: meta}
		}
		if d.Stream != nil {
			resp.Body = d.Stream(resp.Body)
		}
	}
	if err == nil && resp.StatusCode >= 400 {
		if meta, ok := req.Context().Value(metaKey{}).(*Meta); ok {
			meta.Status = resp.StatusCode
			meta.RetryAfter = RetryAfter(resp.Header, time.Now())
		}
	}
	return resp, err
}

// Send sends req as Do does and reads the whole reply: its status and
// body, or the error of the exchange, for the provider's own mapping.
// The native computer-use clients (llm/langchain's Messages API,
// llm/openai's Responses API) send this way.
func (d *Doer) Send(req *http.Request) (status int, body []byte, err error) {
	resp, err := d.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err = readBody(resp.Body, resp.ContentLength)
	return resp.StatusCode, body, err
}

// StatusError is the error of a failed status whose message the
// provider's body gave: its kind from the status (KindContextLength when
// contextLength says the message means it), the wait the server asked
// for on a retryable kind, and the API key scrubbed from the message.
func StatusError(provider string, status int, msg string, contextLength bool, meta *Meta, key string) *llm.Error {
	out := &llm.Error{Provider: provider, Status: status, Kind: llm.KindForStatus(status), Message: msg}
	if contextLength {
		out.Kind = llm.KindContextLength
	}
	if meta != nil && (out.Kind == llm.KindRateLimit || out.Kind == llm.KindServer) {
		out.RetryAfter = meta.RetryAfter
	}
	ScrubKey(out, key)
	return out
}

// readBody reads a body of n bytes (-1: unknown) in one allocation when
// its length is known: a reply is read whole before the SDK sees it.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 || n > 64<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// Meta is what the HTTP layer saw of one failed call. Each call has its own,
// on its context, so a model stays safe for concurrent use.
type Meta struct {
	Status     int
	RetryAfter time.Duration
	// Cut is set when an event stream ended without its end (see
	// Doer.StreamEnd).
	Cut bool
}

// endWatch reads an event stream and clears Meta.Cut once its end marker
// has gone by (across read boundaries too).
type endWatch struct {
	io.ReadCloser
	end  []byte
	meta *Meta
	tail []byte
}

func (w *endWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if n > 0 && w.meta.Cut {
		w.tail = append(w.tail, p[:n]...)
		if bytes.Contains(w.tail, w.end) {
			w.meta.Cut = false
		}
		if keep := len(w.end) - 1; len(w.tail) > keep {
			w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
		}
	}
	return n, err
}

type metaKey struct{}

// With returns a context that carries a fresh Meta for one call.
func With(ctx context.Context) (context.Context, *Meta) {
	meta := &Meta{}
	return context.WithValue(ctx, metaKey{}, meta), meta
}

// RetryAfter reads the wait a server asks for: OpenAI's and Azure's
// retry-after-ms, else the standard Retry-After in seconds or as a date.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// ScrubKey keeps an API key out of an error's text, even when a server
// echoes it back.
func ScrubKey(e *llm.Error, key string) {
	if len(key) < 4 {
		return
	}
	e.Message = strings.ReplaceAll(e.Message, key, "[redacted]")
	if e.Err != nil && strings.Contains(e.Err.Error(), key) {
		e.Err = errors.New(strings.ReplaceAll(e.Err.Error(), key, "[redacted]"))
	}
}

// contextLengthPhrases are how providers without a structured error code
// say the prompt was too long: OpenAI, vLLM ("maximum context length"),
// llama.cpp ("exceeds the available context size"), Anthropic ("prompt is
// too long"), and others.
var contextLengthPhrases = []string{
	"context_length_exceeded", "maximum context", "context length", "context size", "context window",
	"prompt is too long", "too many tokens", "input is too long",
}

// MentionsContextLength reports whether an error message says the prompt
// did not fit the model's context.
func MentionsContextLength(msg string) bool {
	msg = strings.ToLower(msg)
	for _, p := range contextLengthPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
