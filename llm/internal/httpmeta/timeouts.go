package httpmeta

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/saucerhq/saucer/llm"
)

// Timeouts are llm.Timeouts.
type Timeouts = llm.Timeouts

// Client is an HTTP client that enforces t: a connection that does not
// open, headers that do not come, a body that stalls or a request that
// runs too long fail with a timeout (a net.Error whose Timeout is true),
// which providers report as llm.KindTimeout, and the policy retries.
func Client(t Timeouts) *http.Client {
	t = t.WithDefaults()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = t.Connect
	tr.ResponseHeaderTimeout = t.FirstByte
	return &http.Client{Timeout: t.Total, Transport: idleTransport{tr, t.Idle}}
}

// NewDoer is the Doer of a provider's config: its HTTP client, or when it
// has none one that enforces t, sending headers with every request. The
// provider sets its own Fix, StreamEnd or Stream.
func NewDoer(hc *http.Client, t Timeouts, headers map[string]string) *Doer {
	if hc == nil {
		hc = Client(t)
	}
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	return &Doer{Client: hc, Headers: h}
}

// TimeoutError describes a timeout for the user: which bound was hit and
// which setting raises it.
func TimeoutError(provider string, t Timeouts, err error) *llm.Error {
	t = t.WithDefaults()
	return &llm.Error{Kind: llm.KindTimeout, Provider: provider, Err: err,
		Message: fmt.Sprintf("the model server did not answer in time (%v); the bounds are %s: raise providers.%s.timeouts if the model is slow", err, t, provider)}
}

// idleTransport closes a response body that stays silent for longer than
// idle, so that a server that stalls mid-stream cannot hold a run.
type idleTransport struct {
	rt   http.RoundTripper
	idle time.Duration
}

func (t idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	b := &idleBody{rc: resp.Body, idle: t.idle}
	b.timer = time.AfterFunc(t.idle, b.expire)
	resp.Body = b
	return resp, nil
}

type idleBody struct {
	rc    io.ReadCloser
	idle  time.Duration
	timer *time.Timer
	mu    sync.Mutex
	gone  bool
}

func (b *idleBody) expire() {
	b.mu.Lock()
	b.gone = true
	b.mu.Unlock()
	b.rc.Close()
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	gone := b.gone
	b.mu.Unlock()
	if gone {
		return n, idleError{b.idle}
	}
	b.timer.Reset(b.idle)
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}

// idleError is a body that went silent: a timeout.
type idleError struct{ idle time.Duration }

func (e idleError) Error() string {
	return fmt.Sprintf("no data from the model server for %s (idle timeout)", e.idle)
}
func (e idleError) Timeout() bool   { return true }
func (e idleError) Temporary() bool { return true }
