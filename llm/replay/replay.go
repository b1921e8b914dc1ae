// Package replay is an llm.Model that answers from a recorded session: call
// n gets the reply (or the error) recorded for call n, after its request
// has been checked against the recorded request. A request that differs is
// a divergence, reported with a diff: the agent under replay did not ask
// what the recorded agent asked.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/trajectory"
)

// Options configure a replay model. The zero value is strict.
type Options struct {
	// Redactor is the one the recording was made with: a live request is
	// redacted the same way before it is compared.
	Redactor *trajectory.Redactor
	// Lenient answers a diverging request with its recorded reply anyway
	// (the divergence is still reported); strict replay fails the call.
	Lenient bool
	// AtEnd, when set, marks a recording that stops before its agents
	// would have stopped by themselves: a budget or an interrupt stopped
	// the session, or the recording is cut short (a full disk, a crash).
	// A call past the last recorded one is then the end of the replay,
	// not a divergence: AtEnd is called and the call fails with
	// ErrRecordingEnds.
	AtEnd func()
	// MaxRetryAfter is the longest Retry-After the session waited for
	// (agent.max_retry_after; 0 means llm.DefaultMaxRetryAfter). A
	// recorded wait beyond it is replayed, so the retry is refused again;
	// one within it is not, so the replay retries at once, as recorded.
	MaxRetryAfter time.Duration
}

// ErrRecordingEnds is the error of a call made where a recording that
// stops early (Options.AtEnd) stops.
var ErrRecordingEnds = errors.New("replay: the recording ends here")

// Model answers calls from a recording. Safe for concurrent use; calls are
// matched in the order they arrive.
type Model struct {
	opts  Options
	calls []trajectory.Call
	mu    sync.Mutex
	next  int
	divs  []Divergence
}

var _ llm.Model = (*Model)(nil)

// New returns a model that answers calls in order from the recorded ones.
func New(calls []trajectory.Call, opts Options) *Model {
	return &Model{opts: opts, calls: calls}
}

// Divergence is a call whose request was not the recorded one.
type Divergence struct {
	// Call is the call's number, from 1.
	Call int
	// Reason says what differed, in one line; Diff is a line diff of the
	// recorded request ("-") and the one made ("+").
	Reason string
	Diff   string
}

func (d Divergence) String() string {
	return fmt.Sprintf("model call %d: %s\n%s", d.Call, d.Reason, d.Diff)
}

// DivergenceError is how a strict replay fails a diverging call.
type DivergenceError struct{ Divergence }

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("replay diverged at model call %d: %s", e.Call, e.Reason)
}

// Divergences returns the divergences so far.
func (m *Model) Divergences() []Divergence {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Divergence(nil), m.divs...)
}

// Remaining is the number of recorded calls not yet made.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls) - m.next
}

// Complete answers the next call from the recording.
func (m *Model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.next + 1
	if m.opts.AtEnd != nil && m.next >= len(m.calls) {
		m.opts.AtEnd()
		return nil, ErrRecordingEnds
	}
	if m.next >= len(m.calls) {
		d := Divergence{Call: n, Reason: fmt.Sprintf("the recording has %d model calls and this is call %d", len(m.calls), n), Diff: "+ " + lastMessage(req)}
		m.divs = append(m.divs, d)
		return nil, &DivergenceError{d}
	}
	rec := m.calls[m.next]
	m.next++
	if reason := m.differs(&rec.Request, req); reason != "" {
		d := Divergence{Call: n, Reason: reason, Diff: trajectory.TextDiff(trajectory.Pretty(m.canonicalTools(&rec.Request)), trajectory.Pretty(m.canonicalTools(m.redacted(req))))}
		m.divs = append(m.divs, d)
		if !m.opts.Lenient {
			return nil, &DivergenceError{d}
		}
	}
	if rec.Error != nil {
		return nil, m.recorded(rec.Error)
	}
	if rec.Response == nil {
		return nil, fmt.Errorf("replay: recorded call %d has neither a response nor an error", n)
	}
	resp := *rec.Response
	resp.Message.ToolCalls = append([]llm.ToolCall(nil), rec.Response.Message.ToolCalls...)
	return &resp, nil
}

// recorded is a recorded failure as the session met it: the same text,
// kind and (where it made the session give up) Retry-After, so that the
// retry policy decides as it did and the error reads as it did.
func (m *Model) recorded(ce *trajectory.CallError) error {
	e := &RecordedError{Kind: trajectory.Kind(ce.Kind), Text: ce.Message}
	limit := m.opts.MaxRetryAfter
	if limit <= 0 {
		limit = llm.DefaultMaxRetryAfter
	}
	if wait := trajectory.Duration(ce.RetryAfterMS); wait > limit {
		e.RetryAfter = wait
	}
	return e
}

// RecordedError is a model call's failure replayed from a recording: its
// text is the recorded one, and errors.Is and errors.As see an *llm.Error
// of the recorded kind.
type RecordedError struct {
	Kind       llm.ErrorKind
	Text       string
	RetryAfter time.Duration
}

func (e *RecordedError) Error() string { return e.Text }

func (e *RecordedError) llmError() *llm.Error {
	return &llm.Error{Kind: e.Kind, Message: e.Text, RetryAfter: e.RetryAfter}
}

// Is matches the llm sentinels of the recorded kind.
func (e *RecordedError) Is(target error) bool { return e.llmError().Is(target) }

// As gives an *llm.Error of the recorded kind.
func (e *RecordedError) As(target any) bool {
	if p, ok := target.(**llm.Error); ok {
		*p = e.llmError()
		return true
	}
	return false
}

// Stream is Complete; the whole reply arrives as one chunk per part.
func (m *Model) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	resp, err := m.Complete(ctx, req)
	if err != nil || onChunk == nil {
		return resp, err
	}
	if resp.Message.Content != "" {
		onChunk(llm.Chunk{Text: resp.Message.Content})
	}
	for i, tc := range resp.Message.ToolCalls {
		onChunk(llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: &i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}})
	}
	return resp, nil
}

// differs compares field by field (fast: strings compare equal in the
// common case) and says what differs first, or "" when nothing does.
func (m *Model) differs(want, got *llm.Request) string {
	if len(want.Messages) != len(got.Messages) {
		return fmt.Sprintf("the request has %d messages, the recorded one %d", len(got.Messages), len(want.Messages))
	}
	for i := range want.Messages {
		if !m.sameMessage(&want.Messages[i], &got.Messages[i]) {
			return fmt.Sprintf("message %d (%s) differs", i+1, got.Messages[i].Role)
		}
	}
	if len(want.Tools) != len(got.Tools) {
		return fmt.Sprintf("the request offers %d tools, the recorded one %d", len(got.Tools), len(want.Tools))
	}
	for i := range want.Tools {
		w, g := want.Tools[i], got.Tools[i]
		if w.Name != g.Name || w.Description != g.Description || !bytes.Equal(w.Parameters, g.Parameters) && m.canonical(w.Parameters) != m.canonical(g.Parameters) {
			return fmt.Sprintf("tool %d (%s) differs", i+1, g.Name)
		}
	}
	if want.ToolChoice != got.ToolChoice || want.JSON != got.JSON || want.MaxTokens != got.MaxTokens ||
		!sameFloat(want.Temperature, got.Temperature) || !slices.Equal(want.Stop, got.Stop) {
		return "the request options (tool choice, JSON, temperature, max tokens, stop) differ"
	}
	return ""
}

func (m *Model) sameMessage(w, g *llm.Message) bool {
	if w.Role != g.Role || w.ToolCallID != g.ToolCallID || w.Name != g.Name || len(w.ToolCalls) != len(g.ToolCalls) || len(w.Images) != len(g.Images) {
		return false
	}
	if w.Content != g.Content && w.Content != m.opts.Redactor.String(g.Content) {
		return false
	}
	for i := range w.ToolCalls {
		a, b := w.ToolCalls[i], g.ToolCalls[i]
		if a.ID != b.ID || a.Name != b.Name || (a.Arguments != b.Arguments && a.Arguments != m.opts.Redactor.String(b.Arguments)) {
			return false
		}
	}
	for i := range w.Images {
		a, b := w.Images[i], g.Images[i]
		if a.URL != b.URL || a.MIMEType != b.MIMEType || a.Detail != b.Detail || !bytes.Equal(a.Data, b.Data) {
			return false
		}
	}
	return true
}

// canonical is a schema with its keys sorted. The same tools are offered
// on every call of every replay, so the results are cached for the
// process, up to canonCap schemas.
func (m *Model) canonical(raw json.RawMessage) string {
	canonMu.Lock()
	c, ok := canonCache[string(raw)]
	canonMu.Unlock()
	if ok {
		return c
	}
	var v any
	c = string(raw)
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			c = string(b)
		}
	}
	canonMu.Lock()
	if len(canonCache) >= canonCap {
		clear(canonCache)
	}
	canonCache[string(raw)] = c
	canonMu.Unlock()
	return c
}

const canonCap = 4096

var (
	canonMu    sync.Mutex
	canonCache = map[string]string{}
)

func (m *Model) redacted(req *llm.Request) *llm.Request {
	out := *req
	out.Messages = make([]llm.Message, len(req.Messages))
	for i, msg := range req.Messages {
		msg.Content = m.opts.Redactor.String(msg.Content)
		out.Messages[i] = msg
	}
	return &out
}

// canonicalTools returns req with its tool schemas' keys sorted, so that a
// diff shows what changed rather than the order a recording left them in.
func (m *Model) canonicalTools(req *llm.Request) *llm.Request {
	out := *req
	out.Tools = make([]llm.Tool, len(req.Tools))
	for i, t := range req.Tools {
		t.Parameters = json.RawMessage(m.canonical(t.Parameters))
		out.Tools[i] = t
	}
	return &out
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func lastMessage(req *llm.Request) string {
	if req == nil || len(req.Messages) == 0 {
		return "(no messages)"
	}
	m := req.Messages[len(req.Messages)-1]
	return fmt.Sprintf("%s: %.300s", m.Role, m.Content)
}

// SupportsComputer reports whether the recorded session offered a native
// computer-use tool (a request with Computer), so that its agents offer
// it again under replay.
func (m *Model) SupportsComputer() bool {
	for i := range m.calls {
		if m.calls[i].Request.Computer != nil {
			return true
		}
	}
	return false
}
