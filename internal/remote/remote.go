// Package remote is the device side of remote mode: it connects a device
// client to an agent server over AIP, registers with the device's info,
// sends heartbeats, runs each command frame in order and returns the
// results, and reconnects with exponential backoff and jitter when the
// connection drops.
//
// Delivery survives reconnections: results produced while disconnected
// are queued and sent after the next registration, and a command frame
// that arrives again (a server re-sends what it has no results for) is
// answered from a cache of recent rounds instead of being run twice.
//
// It speaks plain AIP, so it also works for a UFO server; Saucer's
// extensions (command expiry, progress reports) are extra JSON fields that
// UFO ignores.
package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/backoff"
	"github.com/saucerhq/saucer/internal/uuid"
)

// Device runs commands and describes the device; *client.Client is one.
type Device interface {
	Execute(ctx context.Context, cmd command.Command) command.Result
	Device() command.DeviceInfo
}

// namespacer is what *client.Client adds: its apps, for the server's host
// agent.
type namespacer interface {
	Namespaces() []client.Namespace
}

// toolsWatcher is what *client.Client adds too: its tool list's version
// and a context cancelled when it changes, so that the server is told at
// once and asks for the tools again.
type toolsWatcher interface {
	ToolsVersion() (uint64, context.Context)
}

// Defaults of Options.
const (
	DefaultHeartbeat  = 30 * time.Second
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	// DefaultRegisterTimeout bounds the wait for the server's answer to
	// register.
	DefaultRegisterTimeout = 15 * time.Second
)

// SkippedAfterFailure is the error of a command skipped because an earlier
// one failed: UFO's client's exact words.
const SkippedAfterFailure = "Skipped due to previous failure (early_exit=True)."

// Options configure a Client. URL and ClientID are required.
type Options struct {
	// URL is the server's WebSocket endpoint, ws://HOST:PORT/ws or wss://;
	// several, separated by commas, are tried in turn (a server and its
	// standby): a connection that fails or drops moves to the next. A
	// URL may carry the key itself (?token=KEY, as UFO's clients are
	// given it); it is never shown with it.
	URL string
	// Token is the server's API key. It goes in the X-API-Key header; a
	// server that refuses the handshake without it in the URL (UFO's
	// reads it from ?token= only) is asked again at once with it there
	// too, and from then on always so. Neither form is ever logged.
	Token string
	// ClientID names this device on the server; it must be unique there.
	ClientID string
	// TLS configures wss:// (a custom CA in RootCAs, for instance).
	TLS *tls.Config
	// HTTPClient, when set, makes the handshakes (its transport wins over
	// TLS).
	HTTPClient *http.Client
	// Conn sets the read limit, pings and write timeout.
	Conn aip.ConnOptions
	// HeartbeatInterval is how often a heartbeat goes out; while a command
	// runs, each heartbeat reports it (Saucer's progress extension).
	HeartbeatInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts; each failed attempt doubles it, with jitter.
	MinBackoff, MaxBackoff time.Duration
	// RegisterTimeout bounds the wait for the registration answer.
	RegisterTimeout time.Duration
	// Logf, when set, is told about connections, tasks and errors.
	Logf func(format string, args ...any)
	// Journal is the path of a file where the client notes each command
	// before and after it runs (see the package's journal). With it, a
	// client restarted after a crash reports a command it was running as
	// interrupted, outcome unknown, instead of running it again when the
	// server re-sends it. Empty: no journal (a restarted client runs a
	// re-sent frame again).
	Journal string
}

// ErrRefused is wrapped by Run's error when the server refuses the token:
// retrying will not help.
var ErrRefused = errors.New("the server refused the connection")

// TaskEnd is how a task this device asked for (StartTask) ended.
type TaskEnd struct {
	SessionID string
	// Status is completed or failed.
	Status aip.Status
	Result json.RawMessage
	Error  string
}

// Client keeps one device connected to a server.
type Client struct {
	dev  Device
	opts Options
	// urls are the servers, tried in turn: a connection that fails moves
	// on to the next (failover to a standby server).
	urls []string
	cur  atomic.Int32
	// inQuery marks the servers (by index in urls) that take the token
	// only in the URL: they refused it in the header.
	inQuery []atomic.Bool

	mu     sync.Mutex
	conn   *aip.Conn // nil while disconnected
	up     chan struct{}
	outbox []*aip.ClientMessage
	// rounds are the recent command frames, by response_id, with their
	// results once they have run (nil until then).
	rounds map[string]*aip.ClientMessage
	order  []string
	queue  []*aip.ServerMessage // command frames waiting to run, in arrival order
	// draining is set while a goroutine runs the queue; drainers counts
	// them, so that Run can wait for the last.
	draining bool
	drainers sync.WaitGroup
	// readers counts the goroutines reading a connection (see read), so
	// that Run returns only once none is left to start a round.
	readers sync.WaitGroup
	// running stops the round in progress, by session id.
	running map[string]roundStop
	// given up are the sessions whose task the server gave up on while
	// this device was away (aip.ResultStopCommands), oldest first in
	// givenUpOrder: none of their frames still queued runs.
	givenUp      map[string]error
	givenUpOrder []string
	// current is the command in progress (nil: none).
	current atomic.Pointer[running]
	// task requests waiting for their acceptance, oldest first, and task
	// ends waited for or arrived early, by session id.
	accepts []chan string
	ends    map[string]chan TaskEnd
	journal *journal // nil: none
	// instance names this run of the client in its registrations: a
	// server re-sends to the same run the frames it may have got, which it
	// answers from its memory (with a journal, any later run does too).
	instance string
	// progress sends the tools' progress reports.
	progress *progressOut
	// background are the commands left running in the background, by
	// call id, with their session: its end cancels them.
	background map[string]string
	// watchArms and watchFires count how often a read watch's timer was
	// set and went off (see readWatch), for tests.
	watchArms, watchFires atomic.Uint64
}

// recentRounds bounds the cache of answered rounds, and the sessions
// remembered as given up.
const recentRounds = 1024

// roundStop stops a round in progress: skip stops it between commands
// (the rest are skipped; the one running finishes), kill stops the
// command running too.
type roundStop struct {
	skip, kill context.CancelCauseFunc
}

// ReconnectWithin is the longest the client takes to register again once
// the server can be reached: an attempt begun just before (one that
// hangs, say, on a host that was not up yet) fails within
// RegisterTimeout, then a wait of its backoff (at most MaxBackoff, jitter
// included), then an attempt that succeeds (a handshake: milliseconds on
// a server that is up). It goes in the registration
// (aip.MetaReconnectWithin), so that the server waits that long beyond its
// away timeout before it gives up on the device: an outage shorter than
// the away timeout (less a handshake) is then always outlived.
func (c *Client) ReconnectWithin() time.Duration {
	return c.opts.MaxBackoff + c.opts.RegisterTimeout
}

// New checks the options; Run connects.
func New(dev Device, opts Options) (*Client, error) {
	if dev == nil {
		return nil, errors.New("remote: no device")
	}
	if opts.ClientID == "" {
		return nil, errors.New("remote: no client id: name this device with --id")
	}
	var urls []string
	for _, one := range strings.Split(opts.URL, ",") {
		one = strings.TrimSpace(one)
		u, err := url.Parse(one)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("remote: server URL %q must look like ws://HOST:PORT/ws or wss://HOST:PORT/ws (several: separated by commas)", aip.RedactURL(one))
		}
		urls = append(urls, u.String())
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeat
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.RegisterTimeout <= 0 {
		opts.RegisterTimeout = DefaultRegisterTimeout
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.HTTPClient == nil && opts.TLS != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: opts.TLS}}
	}
	// The maps other than rounds are made when first written: an idle
	// device (a server holds thousands) never writes them.
	c := &Client{dev: dev, opts: opts, urls: urls, inQuery: make([]atomic.Bool, len(urls)), up: make(chan struct{}), rounds: map[string]*aip.ClientMessage{},
		instance: uuid.New(), progress: newProgressOut()}
	if opts.Journal != "" {
		j, known, interrupted, err := openJournal(opts.Journal, opts.ClientID)
		if err != nil {
			return nil, fmt.Errorf("remote: %w (remove the file to start without it; commands it lists may then run again)", err)
		}
		c.journal = j
		for _, m := range known {
			c.rounds[m.PrevResponseID] = m
			c.order = append(c.order, m.PrevResponseID)
		}
		// Rounds cut short by the crash are reported at once.
		c.outbox = append(c.outbox, interrupted...)
		if len(interrupted) > 0 {
			opts.Logf("journal %s: %d round(s) were cut short by a stop of this client; they are reported as interrupted, not run again", opts.Journal, len(interrupted))
		}
	}
	return c, nil
}

// recentResults are the results of the rounds in the cache, oldest first.
func (c *Client) recentResults() []*aip.ClientMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*aip.ClientMessage, 0, len(c.order))
	for _, id := range c.order {
		if res := c.rounds[id]; res != nil {
			out = append(out, res)
		}
	}
	return out
}

// Run keeps the device connected until ctx ends (then it returns nil) or
// the server refuses the token (an error wrapping ErrRefused). Lost
// connections and refused registrations (a duplicate id whose old
// connection the server has not yet dropped) are retried with backoff.
func (c *Client) Run(ctx context.Context) error {
	defer c.drainers.Wait()
	defer c.readers.Wait() // before drainers: a reader may yet start a round
	pctx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	c.progress.mu.Lock()
	c.progress.sender, c.progress.sending = func() { go c.sendProgress(pctx) }, false
	c.progress.mu.Unlock()
	for attempt := 0; ; attempt++ {
		conn, err := c.connectApart(ctx)
		if ctx.Err() != nil {
			if conn != nil {
				conn.Close(1000, "device client stopping")
			}
			return nil
		}
		if errors.Is(err, ErrRefused) {
			return err
		}
		if untrusted(err) {
			// Retrying cannot fix a certificate: say so at once.
			return fmt.Errorf("remote: the server's certificate is not trusted (%w): give --ca-cert with the CA that signed it, or connect by the name the certificate is for", err)
		}
		if err != nil {
			wait := c.backoff(attempt)
			c.opts.Logf("connect to %s failed (%v); %s", c.shown(), err, backoff.Say(wait))
			c.cur.Store((c.cur.Load() + 1) % int32(len(c.urls)))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			continue
		}
		attempt = -1
		c.serve(ctx, conn)
		if len(c.urls) > 1 {
			c.cur.Store((c.cur.Load() + 1) % int32(len(c.urls))) // the next server first: this one may be gone
		}
		if ctx.Err() != nil {
			conn.Close(1000, "device client stopping")
			return nil
		}
		c.opts.Logf("connection lost (%v); reconnecting", context.Cause(conn.Context()))
	}
}

// connectApart connects from a goroutine of its own, which ends with the
// handshake: the handshake's deep calls (net/http's transport) grow that
// goroutine's stack, not the stack of Run's goroutine, which goes on to
// read the connection for as long as it lasts. (Go gives back a grown
// stack only at a collection: a device would hold the handshake's 8 KiB
// while idle.)
func (c *Client) connectApart(ctx context.Context) (*aip.Conn, error) {
	type dialed struct {
		conn *aip.Conn
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		conn, err := c.connect(ctx)
		done <- dialed{conn, err}
	}()
	d := <-done
	return d.conn, d.err
}

// Close releases what the client holds open: its journal file. Call it
// once Run has returned; a second Close does nothing. (The device is the
// caller's to close.)
func (c *Client) Close() error {
	if c.journal == nil {
		return nil
	}
	return c.journal.close()
}

// url is the server the client connects to now.
func (c *Client) url() string { return c.urls[c.cur.Load()] }

// shown is url as logs and errors may show it: without a token.
func (c *Client) shown() string { return aip.RedactURL(c.url()) }

// backoff is the wait before attempt n+1: Saucer's one retry policy
// (package backoff, as for model calls), from MinBackoff doubling up to
// MaxBackoff, with jitter so that devices cut off together do not come
// back together.
func (c *Client) backoff(n int) time.Duration {
	return backoff.Policy{Base: c.opts.MinBackoff, Cap: c.opts.MaxBackoff}.Delay(n)
}

// connect dials and registers.
func (c *Client) connect(ctx context.Context) (*aip.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.opts.RegisterTimeout)
	defer cancel()
	conn, err := c.dial(dctx)
	if err != nil {
		return nil, err
	}
	info := c.dev.Device()
	info.DeviceID = c.opts.ClientID
	meta := map[string]any{"system_info": info, "registration_time": aip.Timestamp(time.Now()), "platform": info.Platform}
	if ns, ok := c.dev.(namespacer); ok {
		meta["namespaces"] = ns.Namespaces()
	}
	meta[aip.MetaResends] = aip.Resends{Instance: c.instance, Journal: c.journal != nil}
	meta[aip.MetaReconnectWithin] = c.ReconnectWithin().Milliseconds()
	if tw, ok := c.dev.(toolsWatcher); ok {
		meta[aip.MetaToolsVersion], _ = tw.ToolsVersion()
	}
	reg := &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientDevice,
		ClientID: c.opts.ClientID, Timestamp: aip.Timestamp(time.Now()), Metadata: meta}
	if err := conn.Send(ctx, reg); err != nil {
		conn.CloseNow()
		return nil, err
	}
	// The read's context closes the connection if it expires: that is the
	// registration timeout.
	_, b, err := conn.Read(dctx)
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("no answer to register: %w", err)
	}
	m, err := aip.DecodeServer(b)
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("answer to register: %w", err)
	}
	if m.Status != aip.StatusOK {
		conn.CloseNow()
		return nil, fmt.Errorf("registration refused: %s", m.Error)
	}
	c.opts.Logf("registered as %s with %s", c.opts.ClientID, c.shown())
	return conn, nil
}

// dial opens the WebSocket to the current server, with the token in the
// X-API-Key header, and also in ?token= for a server that takes it only
// there: one that refuses the header alone is asked again at once that
// way, and remembered.
func (c *Client) dial(ctx context.Context) (*aip.Conn, error) {
	h := http.Header{}
	if c.opts.Token != "" {
		h.Set("X-API-Key", c.opts.Token)
	}
	i := c.cur.Load()
	target := c.url()
	opts := aip.DialOptions{ConnOptions: c.opts.Conn, Header: h, HTTPClient: c.opts.HTTPClient}
	if c.inQuery[i].Load() {
		target = aip.WithToken(target, c.opts.Token)
	}
	conn, resp, err := aip.Dial(ctx, target, opts)
	if refused(resp) && c.opts.Token != "" && !c.inQuery[i].Load() && !hasToken(target) {
		if conn, resp, err = aip.Dial(ctx, aip.WithToken(target, c.opts.Token), opts); err == nil {
			c.opts.Logf("%s takes the token only in the URL (as UFO's server does): sending it there too", c.shown())
			c.inQuery[i].Store(true)
		}
	}
	switch {
	case !refused(resp):
		return conn, err
	case c.opts.Token == "" && !hasToken(target):
		return nil, fmt.Errorf("%w (HTTP %d): it wants an API key: give --token (or set SAUCER_TOKEN)", ErrRefused, resp.StatusCode)
	default:
		return nil, fmt.Errorf("%w (HTTP %d): check the token (--token, SAUCER_TOKEN, or ?token= in the server's URL)", ErrRefused, resp.StatusCode)
	}
}

// refused reports a handshake refused for its key.
func refused(resp *http.Response) bool {
	return resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden)
}

// hasToken reports a URL that carries a token of its own.
func hasToken(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Query().Has(aip.TokenParam)
}

// serve runs one registered connection until it ends.
func (c *Client) serve(ctx context.Context, conn *aip.Conn) {
	c.mu.Lock()
	c.conn = conn
	close(c.up)
	queued := c.outbox
	c.outbox = nil
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.conn = nil
		c.up = make(chan struct{})
		c.mu.Unlock()
	}()
	for _, m := range queued {
		c.deliver(ctx, m)
	}

	beats := c.heartbeats(ctx, conn)
	defer beats.stop()
	conn.Bind(ctx)
	// A goroutine of the connection's own reads; a command frame can hand
	// reading over to a successor (see read). Not this one: the reader
	// runs a round it reads, and a round can outlast the connection (a
	// long command while the server restarts). This goroutine must then
	// be free at once to connect again, not after the command: a server
	// gives up on a device that stays away too long, and may have the
	// task's work done elsewhere.
	w := &readWatch{c: c, ctx: ctx, conn: conn}
	defer w.stop()
	c.readers.Add(1)
	go func() {
		defer c.readers.Done()
		c.read(w)
	}()
	// The connection ends when a read or write fails or ctx ends (its
	// reader's context); aip.Conn then cancels its own context.
	<-conn.Context().Done()
}

// read reads frames until the connection fails. A command frame that
// finds no round running is run by this goroutine: the round then starts
// without waking another goroutine, which is a good part of a round trip
// on loopback. A round that outlasts successorAfter gets a successor to go
// on reading meanwhile (pings, cancellations, command_status; see
// readWatch); a shorter one is over before anything needs reading, and
// this goroutine reads on, so that a quick round wakes no other thread at
// all (starting the successor at once cost a futex wake and sleep per
// round: a fifth of an AIP round trip's CPU on loopback).
func (c *Client) read(w *readWatch) {
	// The loop's own stack frame is small and a frame is handled in a
	// function of its own: this goroutine waits here while the device is
	// idle, and coder/websocket writes pongs from below the wait, which
	// must fit in the 4 KiB stack an idle reader keeps (Go keeps a stack
	// that grew to 8 KiB while the reader waits).
	for {
		var text bool
		var m *aip.ServerMessage
		var err error
		// Decoded from the connection's buffer: the message keeps copies.
		if w.conn.ReadFunc(w.ctx, func(t bool, b []byte) {
			if text = t; t {
				m, err = aip.DecodeServer(b)
			}
		}) != nil {
			return
		}
		if c.readFrame(w, text, m, err) {
			return // the successor reads
		}
	}
}

// readFrame handles one frame from the server, decoded into m (or not, as
// err says). It reports whether a successor goroutine has taken reading
// over (see read).
func (c *Client) readFrame(w *readWatch, text bool, m *aip.ServerMessage, err error) (handedOver bool) {
	ctx := w.ctx
	if !text {
		c.opts.Logf("ignoring a binary frame (file transfer is not supported)")
		return false
	}
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		c.opts.Logf("bad frame from the server: %v", err)
		c.send(ctx, &aip.ClientMessage{Type: aip.TypeError, Status: aip.StatusError, ClientID: c.opts.ClientID,
			Error: err.Error(), Timestamp: aip.Timestamp(time.Now())})
		return false
	}
	if m.Type == aip.TypeCommand && controlOnly(m) {
		// How a background command is doing, or stopping it, is
		// answered at once, not after the round running now.
		if c.see(m) {
			go c.answerNow(ctx, m)
		}
		return false
	}
	if m.Type == aip.TypeCommand && c.enqueue(ctx, m) {
		run := w.begin()
		c.drain(ctx)
		return w.end(run)
	}
	c.handle(ctx, m)
	return false
}

// successorAfter is how long a round runs before another goroutine takes
// over reading the connection: short enough that a cancellation or a
// ping is read without a delay anyone notices, long enough that a quick
// command is answered before it.
const successorAfter = 2 * time.Millisecond

// readWatch gives reading to a successor goroutine when the reader has
// been running a round for successorAfter. Its timer is set when a round
// begins and finds it unset, and goes off successorAfter later: a round
// still running then since successorAfter or longer is handed over, a
// younger one is looked at again when it will be that old, and with no
// round running the timer stays unset until the next. Setting a timer
// that goes off before every other one wakes a thread of Go's (a write to
// the poller's eventfd or a futex wake) and one set and stopped for every
// round cost that each round trip; this way the timer is set at most once
// per successorAfter however many quick rounds run.
type readWatch struct {
	c    *Client
	ctx  context.Context
	conn *aip.Conn

	mu    sync.Mutex
	timer *time.Timer // made at the first round: an idle connection has none
	armed bool        // the timer is set
	// run counts the rounds begun by readers; running says whether run
	// is in progress, since when; handed is the run handed over.
	run     uint64
	running bool
	since   time.Time
	handed  uint64
	stopped bool
}

// begin notes that the reader runs a round now, and returns its number
// for end.
func (w *readWatch) begin() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.run++
	w.running, w.since = true, time.Now()
	if !w.armed && !w.stopped {
		w.armed = true
		w.c.watchArms.Add(1)
		if w.timer == nil {
			w.timer = time.AfterFunc(successorAfter, w.fire)
		} else {
			w.timer.Reset(successorAfter)
		}
	}
	return w.run
}

// end notes the end of round run and reports whether a successor took
// reading over meanwhile (the caller then stops reading).
func (w *readWatch) end(run uint64) (handedOver bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.run == run {
		w.running = false
	}
	return w.handed == run
}

// fire runs when the timer goes off: it hands a round that has lasted to
// a successor, which reads in this goroutine.
func (w *readWatch) fire() {
	w.c.watchFires.Add(1)
	w.mu.Lock()
	if w.stopped || !w.running {
		w.armed = false
		w.mu.Unlock()
		return
	}
	if left := successorAfter - time.Since(w.since); left > 0 {
		w.timer.Reset(left)
		w.mu.Unlock()
		return
	}
	w.handed, w.running, w.armed = w.run, false, false
	// Counted while the reader it succeeds is still counted (it runs a
	// round).
	w.c.readers.Add(1)
	w.mu.Unlock()
	defer w.c.readers.Done()
	w.c.read(w)
}

// stop lets go of the timer once the connection has ended.
func (w *readWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// heartbeats sends a heartbeat every HeartbeatInterval, and one at once
// when the device's tool list changes: each carries the list's version
// (aip.MetaToolsVersion), so that the server asks for the tools again.
// They run from a timer and from context.AfterFunc, not from a goroutine
// of their own: an idle device then has two goroutines, its reader and
// Run's, which waits for the connection to end. The
// caller stops them when the connection has ended.
func (c *Client) heartbeats(ctx context.Context, conn *aip.Conn) *heartbeater {
	h := &heartbeater{c: c, ctx: ctx, conn: conn}
	h.tw, _ = c.dev.(toolsWatcher)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timer = time.AfterFunc(c.opts.HeartbeatInterval, h.beat)
	if h.tw != nil {
		_, changed := h.tw.ToolsVersion()
		h.unwatch = context.AfterFunc(changed, h.beat)
	}
	return h
}

// heartbeater is one connection's heartbeats.
type heartbeater struct {
	c    *Client
	ctx  context.Context
	conn *aip.Conn
	tw   toolsWatcher // nil: the device has no tool list to watch
	// mu makes beats one at a time (the timer and a change of tools can
	// fire together) and guards the rest.
	mu      sync.Mutex
	timer   *time.Timer
	unwatch func() bool
	stopped bool
}

// beat sends a heartbeat and sets the next: HeartbeatInterval from now,
// and at the tool list's next change.
func (h *heartbeater) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.conn.Context().Err() != nil || h.ctx.Err() != nil {
		return
	}
	h.timer.Stop()
	if h.unwatch != nil {
		h.unwatch()
	}
	hb := &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: h.c.opts.ClientID,
		Timestamp: aip.Timestamp(time.Now())}
	if h.tw != nil {
		v, changed := h.tw.ToolsVersion()
		hb.Metadata = map[string]any{aip.MetaToolsVersion: v}
		h.unwatch = context.AfterFunc(changed, h.beat)
	}
	if r := h.c.current.Load(); r != nil {
		hb.Progress = &aip.Progress{ResponseID: r.responseID, CallID: r.callID, State: string(command.StateRunning),
			Index: r.index, ElapsedMS: time.Since(r.start).Milliseconds()}
	}
	h.conn.Send(h.ctx, hb)
	h.timer.Reset(h.c.opts.HeartbeatInterval)
}

// stop ends the heartbeats once the connection has ended (a beat
// before that finds the connection closed and sends nothing).
func (h *heartbeater) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.timer.Stop()
	if h.unwatch != nil {
		h.unwatch()
	}
}

func (c *Client) handle(ctx context.Context, m *aip.ServerMessage) {
	switch m.Type {
	case aip.TypeHeartbeat:
		if m.SessionID != "" {
			c.mu.Lock()
			if len(c.accepts) > 0 {
				// Ready for the task's end before the waiter wakes up.
				if c.ends == nil {
					c.ends = map[string]chan TaskEnd{}
				}
				c.ends[m.SessionID] = make(chan TaskEnd, 1)
				c.accepts[0] <- m.SessionID
				c.accepts = c.accepts[1:]
			}
			c.mu.Unlock()
		}
	case aip.TypeTask:
		// As UFO's client does: a pushed task is started by asking for it,
		// which is how a UFO server begins the session. A Saucer server
		// recognises the echo of its own dispatch.
		c.opts.Logf("task %q assigned (session %s): %s", m.TaskName, m.SessionID, m.UserRequest)
		c.send(ctx, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientType: aip.ClientDevice,
			ClientID: c.opts.ClientID, SessionID: m.SessionID, TaskName: m.TaskName, Request: m.UserRequest,
			RequestID: uuid.New(), Timestamp: aip.Timestamp(time.Now()),
			Metadata: map[string]any{"platform": c.dev.Device().Platform}})
	case aip.TypeTaskEnd:
		c.cancelBackground(ctx, m.SessionID)
		stop := m.Status == aip.StatusFailed && stopsCommands(m.Result)
		c.mu.Lock()
		if r, ok := c.running[m.SessionID]; ok && m.Status == aip.StatusFailed {
			cause := fmt.Errorf("the server ended the task: %s", m.Error)
			r.skip(cause)
			if stop {
				// The server gave up on this device while it was away:
				// the task's work may be done elsewhere by now, so the
				// command still running here must not finish it too.
				cause = fmt.Errorf("the server gave up on this device while it was away and ended the task (%s); its work may be done elsewhere, so this command was stopped", m.Error)
				r.kill(cause)
				c.opts.Logf("task %s was given up on by the server: its command in progress is stopped", m.SessionID)
			}
		}
		if stop {
			c.giveUpLocked(m.SessionID, fmt.Errorf("the server gave up on this device while it was away and ended the task: %s", m.Error))
		}
		ch := c.ends[m.SessionID] // set when a StartTask's task was accepted
		c.mu.Unlock()
		// Told once it is acted on: the rest of its round will not run.
		c.opts.Logf("task ended (session %s): %s %s", m.SessionID, m.Status, m.Error)
		if ch != nil {
			select {
			case ch <- TaskEnd{SessionID: m.SessionID, Status: m.Status, Result: m.Result, Error: m.Error}:
			default:
			}
		}
	case aip.TypeError:
		c.opts.Logf("the server reports an error: %s", m.Error)
	}
}

// stopsCommands reports a task_end result that asks the device to stop
// the task's commands still running (aip.ResultStopCommands).
func stopsCommands(result []byte) bool {
	if len(result) == 0 {
		return false
	}
	var r map[string]any
	if json.Unmarshal(result, &r) != nil {
		return false
	}
	stop, _ := r[aip.ResultStopCommands].(bool)
	return stop
}

// giveUpLocked remembers a session the server gave up on, so that its
// frames still queued do not run. Called with c.mu held.
func (c *Client) giveUpLocked(session string, why error) {
	if c.givenUp == nil {
		c.givenUp = map[string]error{}
	}
	if _, ok := c.givenUp[session]; !ok {
		c.givenUpOrder = append(c.givenUpOrder, session)
		if len(c.givenUpOrder) > recentRounds {
			delete(c.givenUp, c.givenUpOrder[0])
			c.givenUpOrder = c.givenUpOrder[1:]
		}
	}
	c.givenUp[session] = why
}

// controlOnly reports a command frame made only of commands answered
// beside the queue: command_status and cancel_command, and the tool
// listings (a server asks for them outside a task, when the tools change,
// perhaps while a long command runs); none of them changes the device.
func controlOnly(m *aip.ServerMessage) bool {
	for _, a := range m.Actions {
		if !command.IsBackgroundControl(a.ToolName) && a.ToolName != command.GetMCPTools && a.ToolName != command.ListTools {
			return false
		}
	}
	return len(m.Actions) > 0
}

// see notes a frame as seen, and reports whether it is new: a frame seen
// before is answered from the cache once it has run.
func (c *Client) see(m *aip.ServerMessage) bool {
	c.mu.Lock()
	res, seen := c.rounds[m.ResponseID]
	if !seen {
		c.rounds[m.ResponseID] = nil
		c.order = append(c.order, m.ResponseID)
		if len(c.order) > recentRounds {
			delete(c.rounds, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	if seen && res != nil {
		c.deliver(context.Background(), res)
	}
	return !seen
}

// answerNow runs a frame of control commands beside the queue.
func (c *Client) answerNow(ctx context.Context, m *aip.ServerMessage) {
	results := make([]command.Result, len(m.Actions))
	for i, cmd := range m.Actions {
		results[i] = c.dev.Execute(ctx, cmd)
		results[i].CallID = cmd.CallID
	}
	res := &aip.ClientMessage{Type: aip.TypeCommandResults, Status: m.Status, ClientType: aip.ClientDevice,
		ClientID: c.opts.ClientID, SessionID: m.SessionID, ActionResults: results, PrevResponseID: m.ResponseID,
		RequestID: uuid.New(), Timestamp: aip.Timestamp(time.Now())}
	c.mu.Lock()
	if _, ok := c.rounds[m.ResponseID]; ok {
		c.rounds[m.ResponseID] = res
	}
	c.mu.Unlock()
	c.deliver(ctx, res)
}

// enqueue queues a command frame, unless it is a frame seen before: one
// that has run is answered again from the cache; one queued or running
// will be answered when it ends. It reports whether the caller must run
// the queue (drain): no other goroutine is running it.
func (c *Client) enqueue(ctx context.Context, m *aip.ServerMessage) bool {
	c.mu.Lock()
	if res, seen := c.rounds[m.ResponseID]; seen {
		c.mu.Unlock()
		if res != nil {
			c.deliver(ctx, res)
		}
		return false
	}
	c.rounds[m.ResponseID] = nil // seen; results to come
	c.order = append(c.order, m.ResponseID)
	if len(c.order) > recentRounds {
		delete(c.rounds, c.order[0])
		c.order = c.order[1:]
	}
	c.queue = append(c.queue, m)
	if c.draining {
		c.mu.Unlock()
		return false
	}
	c.draining = true
	c.drainers.Add(1)
	c.mu.Unlock()
	return true
}

// drain runs queued command frames one at a time, in arrival order,
// whether or not a connection is up, until the queue is empty.
func (c *Client) drain(ctx context.Context) {
	defer c.drainers.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.draining = false
			c.mu.Unlock()
			return
		}
		m := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		res := c.runRound(ctx, m)
		c.mu.Lock()
		if _, ok := c.rounds[m.ResponseID]; ok {
			c.rounds[m.ResponseID] = res
		}
		c.mu.Unlock()
		if c.journal != nil {
			if err := c.journal.finish(res, c.recentResults); err != nil {
				c.opts.Logf("journal: %v", err)
			}
		}
		c.deliver(ctx, res)
	}
}

// runRound runs a frame's actions in order. After the first failure the
// rest are skipped, as UFO does. A command whose frame has expired is not
// run. Cancellation (the server ending the task, or the client stopping)
// is cooperative: the command running finishes, the rest are skipped.
// A task the server gave up on while the device was away (its task_end
// says aip.ResultStopCommands) is stopped outright: its command running
// is cancelled too (a shell command is killed with what it started), and
// none of its frames still queued runs, since the server may have had its
// work done elsewhere.
func (c *Client) runRound(ctx context.Context, m *aip.ServerMessage) *aip.ClientMessage {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A command runs to its end; the next ones see the cancellation. Only
	// a task the server gave up on (see handle) stops the one running.
	run, kill := context.WithCancelCause(context.WithoutCancel(rctx))
	defer kill(nil)
	if m.SessionID != "" {
		c.mu.Lock()
		if c.running == nil {
			c.running = map[string]roundStop{}
		}
		c.running[m.SessionID] = roundStop{skip: cancel, kill: kill}
		if why := c.givenUp[m.SessionID]; why != nil {
			cancel(why)
			kill(why)
		}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.running, m.SessionID)
			c.mu.Unlock()
		}()
	}
	results := make([]command.Result, len(m.Actions))
	failed := false
	var jerr error
	if c.journal != nil {
		jerr = c.journal.begin(m)
	}
	if l := m.Lifecycle; l != nil && l.DetachAfter > 0 {
		run = command.WithDetach(run, l.DetachAfter)
	}
	background := ""
	for i, cmd := range m.Actions {
		switch {
		case jerr != nil:
			results[i] = command.Failed(cmd.CallID, fmt.Sprintf("%s was not run: the client's journal could not record it: %v", cmd.ToolName, jerr))
		case rctx.Err() != nil:
			results[i] = command.SkippedResult(cmd.CallID, fmt.Sprintf("cancelled before it ran: %v", context.Cause(rctx)))
		case failed:
			results[i] = command.SkippedResult(cmd.CallID, SkippedAfterFailure)
		case background != "":
			results[i] = command.SkippedResult(cmd.CallID, background)
		case m.Lifecycle.Expired(time.Now()):
			results[i] = command.Failed(cmd.CallID, fmt.Sprintf("%s expired at %s before it could run (queued by %s)",
				cmd.ToolName, m.Lifecycle.ExpiresAt.Format(time.RFC3339Nano), m.Lifecycle.QueuedBy))
		default:
			if c.journal != nil {
				if jerr = c.journal.start(m.ResponseID, i); jerr != nil {
					results[i] = command.Failed(cmd.CallID, fmt.Sprintf("%s was not run: the client's journal could not record it: %v", cmd.ToolName, jerr))
					break
				}
			}
			results[i] = c.runCommand(command.WithProgress(run, c.reporter(ctx, m, i)), m.ResponseID, i, cmd)
			if results[i].Running() {
				c.mu.Lock()
				if c.background == nil {
					c.background = map[string]string{}
				}
				c.background[cmd.CallID] = m.SessionID
				c.mu.Unlock()
				results[i].CallID = cmd.CallID
				background = command.StoppedBy(results[i])
			}
			if c.journal != nil {
				results[i].CallID = cmd.CallID
				c.journal.done(m.ResponseID, i, results[i])
			}
		}
		results[i].CallID = cmd.CallID
		if results[i].Status == command.Failure {
			failed = true
		}
	}
	return &aip.ClientMessage{Type: aip.TypeCommandResults, Status: m.Status, ClientType: aip.ClientDevice,
		ClientID: c.opts.ClientID, SessionID: m.SessionID, ActionResults: results, PrevResponseID: m.ResponseID,
		RequestID: uuid.New(), Timestamp: aip.Timestamp(time.Now())}
}

// running is the command in progress, for the heartbeats' progress reports.
type running struct {
	responseID, callID string
	index              int
	start              time.Time
}

// runCommand runs one command; heartbeats report it while it runs.
func (c *Client) runCommand(ctx context.Context, responseID string, index int, cmd command.Command) command.Result {
	c.current.Store(&running{responseID: responseID, callID: cmd.CallID, index: index, start: time.Now()})
	defer c.current.Store(nil)
	return c.dev.Execute(ctx, cmd)
}

// send writes a frame if connected; it is not queued (heartbeats,
// progress, errors are only useful now).
func (c *Client) send(ctx context.Context, m *aip.ClientMessage) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		conn.Send(ctx, m)
	}
}

// deliver writes a results frame, or queues it for the next connection.
// A frame written into a connection that then breaks may be lost; the
// server then sends the command frame again and gets the cached results.
func (c *Client) deliver(ctx context.Context, m *aip.ClientMessage) {
	c.mu.Lock()
	conn := c.conn
	if conn == nil {
		c.outbox = append(c.outbox, m)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if err := conn.Send(ctx, m); err != nil {
		c.mu.Lock()
		c.outbox = append(c.outbox, m)
		c.mu.Unlock()
	}
}

// Connected returns a channel closed while the client is registered (it
// is replaced when the connection drops).
func (c *Client) Connected() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up
}

// StartTask asks the server to run a task on this device and waits for
// it to end. Run must be running. The task continues across
// reconnections; ctx bounds the wait.
func (c *Client) StartTask(ctx context.Context, request, taskName string) (*TaskEnd, error) {
	select {
	case <-c.Connected():
	case <-ctx.Done():
		return nil, fmt.Errorf("not connected to %s: %w", aip.RedactURL(c.opts.URL), context.Cause(ctx))
	}
	accepted := make(chan string, 1)
	c.mu.Lock()
	conn := c.conn
	c.accepts = append(c.accepts, accepted)
	c.mu.Unlock()
	if conn == nil {
		return nil, errors.New("the connection dropped before the task could be sent; try again")
	}
	req := &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientType: aip.ClientDevice,
		ClientID: c.opts.ClientID, TaskName: taskName, Request: request, RequestID: uuid.New(),
		Timestamp: aip.Timestamp(time.Now()), Metadata: map[string]any{"platform": c.dev.Device().Platform}}
	if err := conn.Send(ctx, req); err != nil {
		return nil, fmt.Errorf("send the task: %w", err)
	}
	var session string
	select {
	case session = <-accepted:
	case <-ctx.Done():
		c.mu.Lock()
		for i, ch := range c.accepts {
			if ch == accepted { // the next acceptance is not ours to take
				c.accepts = append(c.accepts[:i], c.accepts[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return nil, fmt.Errorf("the server did not accept the task: %w", context.Cause(ctx))
	}
	c.mu.Lock()
	ch := c.ends[session]
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.ends, session)
		c.mu.Unlock()
	}()
	select {
	case end := <-ch:
		return &end, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("task %s did not end: %w", session, context.Cause(ctx))
	}
}

// untrusted reports a TLS certificate the client does not trust.
func untrusted(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}
