package aip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Defaults of ConnOptions, from UFO's client settings.
const (
	// DefaultReadLimit is the largest frame read: UFO allows 100 MiB
	// (screenshots travel as base64).
	DefaultReadLimit = 100 << 20
	// DefaultPingInterval is how often a WebSocket ping goes out.
	DefaultPingInterval = 20 * time.Second
	// DefaultDeadAfter is how long a peer may stay silent (no frame, no
	// pong) before the connection is closed as dead.
	DefaultDeadAfter = 180 * time.Second
	// DefaultWriteTimeout bounds one frame's write; a write that takes
	// longer means the peer stopped reading, and the connection is closed.
	DefaultWriteTimeout = 30 * time.Second
)

// ConnOptions configure a Conn. Zero values mean the defaults.
type ConnOptions struct {
	// ReadLimit is the largest frame accepted, in bytes; a larger one
	// closes the connection with status 1009 (message too big).
	ReadLimit int64
	// PingInterval is how often a ping goes out; negative disables pings.
	PingInterval time.Duration
	// DeadAfter closes the connection when nothing (a frame or a pong) has
	// come for this long. It is checked at each ping.
	DeadAfter time.Duration
	// WriteTimeout bounds each frame's write.
	WriteTimeout time.Duration
}

func (o ConnOptions) withDefaults() ConnOptions {
	if o.ReadLimit == 0 {
		o.ReadLimit = DefaultReadLimit
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = DefaultDeadAfter
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return o
}

// pingWait is the least time a ping waits for its pong: coder/websocket's
// own bound on writing a control frame.
const pingWait = 5 * time.Second

// ErrClosed is the cause of a Conn's context after Close.
var ErrClosed = errors.New("aip: connection closed")

// Conn is one AIP WebSocket connection. Frames go out one at a time (Send
// is safe for concurrent use); one goroutine reads (Read). A ping timer
// keeps the connection alive and closes it when the peer has been silent
// for DeadAfter; pings need the concurrent reader to see their pongs. An
// idle Conn has no goroutine of its own: a server holds thousands.
type Conn struct {
	ws   *websocket.Conn
	opts ConnOptions
	ctx  context.Context
	// end cancels ctx; cancel does that and lets go of the connection's
	// timer and its binding (see cancel).
	end      context.CancelCauseFunc
	lastSeen atomic.Int64 // unix nanoseconds of the last frame or pong
	// writing is a one-slot semaphore rather than a mutex so that a sender
	// can give up waiting when its context ends.
	writing chan struct{}
	// writeStart is when the write in progress began (unix ns; 0: none).
	// keepAlive closes the connection when a write outlasts WriteTimeout,
	// so that writes need no per-call timer.
	writeStart atomic.Int64
	// readMu guards bound, the context Read has tied the connection to,
	// unbinds, which undo Bind's ties, and ended.
	readMu  sync.Mutex
	bound   context.Context
	unbinds []func() bool
	ended   bool
	// pinger fires every PingInterval (see ping); a timer rather than a
	// goroutine of its own, since most connections are idle.
	pinger atomic.Pointer[time.Timer]
	// lean is an accepted connection's socket, nil for a dialled one or
	// one over TLS (see leanConn).
	lean *leanConn
}

// newConn allocates the Conn before the handshake so that the pong
// callback can refer to it.
func newConn(opts ConnOptions) *Conn {
	c := &Conn{opts: opts.withDefaults(), writing: make(chan struct{}, 1)}
	c.ctx, c.end = context.WithCancelCause(context.Background())
	c.seen()
	return c
}

// cancel ends the connection's context with err (the first cause stays)
// and stops what would otherwise outlive it: the ping timer and Bind's
// tie to its context. It does so itself rather than from
// context.AfterFunc on c.ctx, which costs each connection a context and
// a map of children (a server holds thousands of idle connections).
func (c *Conn) cancel(err error) {
	c.end(err)
	if t := c.pinger.Load(); t != nil {
		t.Stop()
	}
	c.readMu.Lock()
	c.ended = true
	unbinds := c.unbinds
	c.unbinds = nil
	c.readMu.Unlock()
	for _, unbind := range unbinds {
		unbind()
	}
}

func (c *Conn) seen() { c.lastSeen.Store(time.Now().UnixNano()) }

func (c *Conn) start(ws *websocket.Conn) *Conn {
	c.ws = ws
	ws.SetReadLimit(c.opts.ReadLimit)
	if c.opts.PingInterval > 0 {
		c.pinger.Store(time.AfterFunc(c.opts.PingInterval, c.ping))
		if c.ctx.Err() != nil { // cancelled before the timer was there to stop
			c.pinger.Load().Stop()
		}
	}
	return c
}

// Accept upgrades an HTTP request to an AIP connection. Refuse
// unauthenticated requests before calling it: after the upgrade the only
// way to say no is to close. An idle accepted connection holds no read
// or write buffer (see leanConn).
func Accept(w http.ResponseWriter, r *http.Request, opts ConnOptions) (*Conn, error) {
	c := newConn(opts)
	lean := &leanHijacker{ResponseWriter: w}
	ws, err := websocket.Accept(lean, r, &websocket.AcceptOptions{
		OnPongReceived: func(context.Context, []byte) { c.seen() },
	})
	if err != nil {
		c.cancel(err)
		return nil, fmt.Errorf("aip: websocket upgrade: %w", err)
	}
	c.lean = lean.conn
	return c.start(ws), nil
}

// DialOptions configure Dial.
type DialOptions struct {
	ConnOptions
	// Header is sent with the handshake (X-API-Key, for instance).
	Header http.Header
	// HTTPClient makes the handshake request; its transport carries TLS
	// settings. Nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Dial opens an AIP connection to a server's WebSocket URL (ws:// or
// wss://). On a refused handshake the HTTP response is returned with the
// error, so that the caller can tell a 401 from a network failure. The
// error never carries the URL's token (see RedactURL), wherever in it the
// URL appears.
func Dial(ctx context.Context, url string, opts DialOptions) (*Conn, *http.Response, error) {
	c := newConn(opts.ConnOptions)
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient:     opts.HTTPClient,
		HTTPHeader:     opts.Header,
		OnPongReceived: func(context.Context, []byte) { c.seen() },
	})
	if err != nil {
		c.cancel(err)
		return nil, resp, redactError(fmt.Errorf("aip: dial %s: %w", url, err), url)
	}
	return c.start(ws), resp, nil
}

// Read reads the next frame and says whether it was text (AIP frames are
// text; binary frames belong to file transfers). One goroutine reads.
//
// As with coder/websocket, a ctx that ends during the read closes the
// connection. A read loop should Bind its context first: reads under the
// bound context need no per-read timer.
func (c *Conn) Read(ctx context.Context) (text bool, frame []byte, err error) {
	err = c.ReadFunc(ctx, func(t bool, b []byte) {
		text, frame = t, bytes.Clone(b)
	})
	return text, frame, err
}

// ReadFunc reads the next frame, as Read does, and hands it to use, which
// must not keep it: the bytes are a pooled buffer, reused once use
// returns. A read loop that decodes each frame (the decoders copy what
// they keep) saves the copy that Read makes of every frame.
func (c *Conn) ReadFunc(ctx context.Context, use func(text bool, frame []byte)) error {
	// ReadFunc's own stack frame is kept small, the work before and
	// after the wait in functions of their own: an idle connection's
	// reader waits in here, and coder/websocket answers a ping from
	// below it, which must fit in the 4 KiB stack an idle reader keeps.
	typ, r, err := c.ws.Reader(c.readContext(ctx))
	if err != nil {
		return c.readFailed(err)
	}
	return c.readFrame(typ, r, use)
}

// readContext is the context a read waits under: not the bound one,
// since Bind closes the connection when it ends.
func (c *Conn) readContext(ctx context.Context) context.Context {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if ctx == c.bound {
		return context.Background()
	}
	return ctx
}

// readFailed ends the connection after a failed read and returns err.
func (c *Conn) readFailed(err error) error {
	c.cancel(fmt.Errorf("aip: read: %w", err))
	return err
}

// readFrame reads the frame r has begun into a pooled buffer, one that
// fits the frame (where websocket.Conn.Read grows a fresh buffer from
// 512 bytes), and hands it to use. The buffer is taken once the frame
// has begun, so that an idle connection, blocked in ReadFunc, holds
// none.
func (c *Conn) readFrame(typ websocket.MessageType, r io.Reader, use func(text bool, frame []byte)) error {
	buf := getBuffer()
	defer putBuffer(buf)
	var err error
	*buf, err = readAll(r, (*buf)[:0])
	if err != nil {
		return c.readFailed(err)
	}
	c.seen()
	use(typ == websocket.MessageText, *buf)
	return nil
}

// buffers are the frame buffers of all connections: a frame's encoding
// or its bytes as read take one while the frame is in flight, so that a
// connection that waits holds none.
var buffers sync.Pool

func getBuffer() *[]byte {
	if b, ok := buffers.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// putBuffer gives b back, unless it grew past 1 MiB (a screenshot's
// frame): that is let go rather than kept for small frames.
func putBuffer(b *[]byte) {
	if cap(*b) <= 1<<20 {
		buffers.Put(b)
	}
}

// readAll reads r to its end, appending to b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Bind ties the connection's life to ctx: when ctx ends, the connection
// is closed. Bind the context of the read loop (once; a later Bind
// replaces the binding for reads, not the closing).
func (c *Conn) Bind(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.bound == ctx || c.ended {
		return
	}
	c.bound = ctx
	c.unbinds = append(c.unbinds, context.AfterFunc(ctx, func() {
		c.cancel(fmt.Errorf("aip: read: %w", context.Cause(ctx)))
		c.ws.CloseNow()
	}))
}

// Frame is a message that can encode itself: *ClientMessage,
// *ServerMessage.
type Frame interface {
	Append(dst []byte) ([]byte, error)
}

// Send encodes f and writes it as one text frame. ctx bounds the wait for
// the writer slot; once writing starts, the write is bounded by
// WriteTimeout instead (a write cut short would close the connection, so a
// caller's cancellation must not reach it).
func (c *Conn) Send(ctx context.Context, f Frame) error {
	select {
	case c.writing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("aip: send: %w", context.Cause(ctx))
	case <-c.ctx.Done():
		return fmt.Errorf("aip: send: %w", context.Cause(c.ctx))
	}
	defer func() { <-c.writing }()
	return c.write(f)
}

// write encodes f and writes it; the caller holds the writer slot.
func (c *Conn) write(f Frame) error {
	buf := getBuffer()
	defer putBuffer(buf)
	b, err := f.Append((*buf)[:0])
	*buf = b
	if err != nil {
		return err
	}
	wctx := context.Background() // keepAlive enforces WriteTimeout
	if c.opts.PingInterval <= 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(c.ctx, c.opts.WriteTimeout)
		defer cancel()
	}
	c.writeStart.Store(time.Now().UnixNano())
	err = c.ws.Write(wctx, websocket.MessageText, b)
	c.writeStart.Store(0)
	if err != nil {
		c.cancel(fmt.Errorf("aip: write: %w", err))
		return fmt.Errorf("aip: send: %w", err)
	}
	return nil
}

// Hold takes the connection's writer for the frame the returned function
// sends: every other Send waits until it has been written (or has
// failed), so it is the first frame on the wire after Hold. A server
// holds a new connection before it makes it known, and sends its
// registration acknowledgement through first. Call Hold before anything
// else can send on the connection; call first exactly once. Its write is
// bounded by WriteTimeout, like any other.
func (c *Conn) Hold() (first func(f Frame) error) {
	c.writing <- struct{}{} // free: nothing else sends yet
	var once sync.Once
	return func(f Frame) error {
		err := errors.New("aip: a held frame was sent twice")
		once.Do(func() {
			defer func() { <-c.writing }()
			err = c.write(f)
		})
		return err
	}
}

// SendRaw writes b, which must be one encoded frame, as a text frame. It
// serves replay tools and tests that need exact bytes on the wire.
func (c *Conn) SendRaw(ctx context.Context, b []byte) error {
	return c.Send(ctx, rawFrame(b))
}

type rawFrame []byte

func (r rawFrame) Append(dst []byte) ([]byte, error) { return append(dst, r...), nil }

// ping runs every PingInterval, from the pinger timer: it closes the
// connection when the peer has been silent for DeadAfter or a write has
// been stuck for longer than WriteTimeout (so a stuck write is noticed
// within WriteTimeout+PingInterval), and otherwise pings and sets the
// timer for PingInterval after the ping began.
func (c *Conn) ping() {
	if c.ctx.Err() != nil {
		return
	}
	if ws := c.writeStart.Load(); ws != 0 && time.Since(time.Unix(0, ws)) > c.opts.WriteTimeout {
		c.cancel(fmt.Errorf("%w: a write took longer than %s", ErrClosed, c.opts.WriteTimeout))
		c.ws.CloseNow()
		return
	}
	if silent := time.Since(time.Unix(0, c.lastSeen.Load())); silent > c.opts.DeadAfter {
		// A dead peer will not complete a close handshake: drop it.
		c.cancel(fmt.Errorf("%w: no frame or pong for %s", ErrClosed, silent.Round(time.Millisecond)))
		c.ws.CloseNow()
		return
	}
	// A late pong is not an error: silence is judged by DeadAfter. The
	// ping's context must not end before its frame is written, even on a
	// loaded machine: coder/websocket closes the connection when a
	// write's context ends mid-write. It bounds a control frame's write
	// by 5 s itself, so the ping waits at least that long.
	start := time.Now()
	pctx, cancel := context.WithTimeout(c.ctx, max(c.opts.PingInterval, pingWait))
	_ = c.ws.Ping(pctx)
	cancel()
	if c.ctx.Err() == nil {
		// Every PingInterval from the last ping's start, as a ticker would.
		c.pinger.Load().Reset(max(c.opts.PingInterval-time.Since(start), time.Millisecond))
	}
}

// Close sends a close frame with the code and reason and closes the
// connection. It waits (at most a few seconds) for the peer's close frame,
// which the reading goroutine receives.
func (c *Conn) Close(code websocket.StatusCode, reason string) error {
	err := c.ws.Close(code, reason)
	c.cancel(fmt.Errorf("%w: %s", ErrClosed, reason))
	return err
}

// CloseNow closes the connection without a close handshake.
func (c *Conn) CloseNow() error {
	c.cancel(ErrClosed)
	return c.ws.CloseNow()
}

// Context is cancelled when the connection is closed, for whatever reason;
// context.Cause says why.
func (c *Conn) Context() context.Context { return c.ctx }

// LastSeen is when the peer last sent a frame or a pong.
func (c *Conn) LastSeen() time.Time { return time.Unix(0, c.lastSeen.Load()) }
