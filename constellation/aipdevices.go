package constellation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/internal/backoff"
)

// AIPOptions configure AIPDevices. URL and Devices are required.
type AIPOptions struct {
	// URL is the AIP server's WebSocket URL (ws://HOST:PORT/ws), a `saucer
	// serve` outside this cluster or UFO's server.
	URL string
	// Token is the server's API key: sent in the X-API-Key header, and in
	// ?token= when the server refuses the header (UFO's reads only that).
	Token string
	// Name is this client's name: it registers once per device, as
	// NAME@DEVICE (UFO's Galaxy names its clients so). Default
	// "saucer-constellation".
	Name string
	// Devices are the server's devices nodes may run on, with the apps
	// each offers: AIP has no frame that lists a server's devices or
	// their tools, so they are configured.
	Devices []Device
	// HTTPClient makes the handshake (TLS settings); nil means the
	// default.
	HTTPClient *http.Client
	// Timeout bounds a registration or a task's acceptance; default 30s.
	Timeout time.Duration
	Logf    func(format string, args ...any)
}

// AIPDevices runs nodes on the devices of an AIP server reached as a
// constellation client, as UFO's Galaxy does: one WebSocket per device,
// registered with client_type constellation and that device as target_id;
// a node's attempt is a task frame whose session_id is the attempt's key,
// and its end the task_end frame with that session_id.
//
// The key as session_id is what keeps an attempt from running twice: a
// Saucer server that gets a task frame again with a session_id the same
// client gave before joins the task it started (after this side's restart
// too), and keeps its task_end for a client that is away. UFO's server
// does neither (it cancels a constellation's tasks when its connection
// drops).
type AIPDevices struct {
	opts  AIPOptions
	mu    sync.Mutex
	links map[string]*link
}

// NewAIPDevices checks the options; connections open when first needed.
func NewAIPDevices(opts AIPOptions) (*AIPDevices, error) {
	if opts.URL == "" || len(opts.Devices) == 0 {
		return nil, errors.New("constellation: an AIP server needs its URL (ws://HOST:PORT/ws) and the devices to use on it, with their apps")
	}
	opts.Name = cmp.Or(opts.Name, "saucer-constellation")
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &AIPDevices{opts: opts, links: map[string]*link{}}, nil
}

// Close closes every connection.
func (a *AIPDevices) Close() error {
	a.mu.Lock()
	ls := make([]*link, 0, len(a.links))
	for _, l := range a.links {
		ls = append(ls, l)
	}
	a.links = map[string]*link{}
	a.mu.Unlock()
	for _, l := range ls {
		l.conn.CloseNow()
	}
	return nil
}

// List returns the configured devices the server has connected now (a
// registration for a device that is not connected is refused).
func (a *AIPDevices) List(ctx context.Context) ([]Device, error) {
	var out []Device
	var errs []error
	for _, d := range a.opts.Devices {
		_, err := a.link(ctx, d.ID)
		switch {
		case err == nil:
			out = append(out, d)
		case errors.Is(err, ErrDeviceGone):
		default:
			errs = append(errs, err)
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Start sends task to device as a task frame with session_id key and
// waits for the server to accept it.
func (a *AIPDevices) Start(ctx context.Context, device, key, task string) (string, error) {
	if !slices.ContainsFunc(a.opts.Devices, func(d Device) bool { return d.ID == device }) {
		return "", fmt.Errorf("%w: %s is not one of this AIP server's configured devices", ErrDeviceGone, device)
	}
	l, err := a.link(ctx, device)
	if err != nil {
		return "", err
	}
	accepted := l.expect(key)
	defer l.forget(key)
	err = l.conn.Send(ctx, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientType: aip.ClientConstellation,
		ClientID: l.clientID, TargetID: device, SessionID: key, TaskName: key, Request: task, RequestID: key,
		Timestamp: aip.Timestamp(time.Now())})
	if err != nil {
		return "", fmt.Errorf("sending the task to %s: %w", device, err)
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	select {
	case m := <-accepted:
		if m.Type == aip.TypeError {
			if strings.Contains(m.Error, "not connected") {
				return "", fmt.Errorf("%w: %s", ErrDeviceGone, m.Error)
			}
			return "", fmt.Errorf("the server refused the task: %s", m.Error)
		}
		return taskRef(device, key), nil
	case <-l.done:
		return "", fmt.Errorf("%w: the connection for %s ended before the task was accepted: %v", ErrDeviceGone, device, l.err)
	case <-ctx.Done():
		return "", fmt.Errorf("the server did not accept the task on %s: %w", device, context.Cause(ctx))
	}
}

// Wait waits for the task_end of a task Start started (or, after a
// restart, of a task an earlier AIPDevices started): a connection that
// drops is opened again, and a Saucer server sends what it kept.
func (a *AIPDevices) Wait(ctx context.Context, taskID string) (TaskOutcome, error) {
	device, session, ok := parseTaskRef(taskID)
	if !ok {
		return TaskOutcome{}, fmt.Errorf("%q is not a task id of an AIP server", taskID)
	}
	for {
		l, err := a.link(ctx, device)
		if err != nil {
			if errors.Is(err, ErrDeviceGone) {
				return TaskOutcome{DeviceLost: true, Error: err.Error()}, nil
			}
			return TaskOutcome{}, err
		}
		select {
		case m := <-l.end(session):
			return outcomeOf(m), nil
		case <-l.done:
			a.drop(device, l)
			a.opts.Logf("constellation: the connection for %s ended while its task ran (%v); connecting again", device, l.err)
		case <-ctx.Done():
			return TaskOutcome{}, context.Cause(ctx)
		}
	}
}

// outcomeOf reads a task_end frame: Saucer's result is {"answer": ...},
// UFO's a free object (e.g. {"finish": ...}), kept as its JSON.
func outcomeOf(m *aip.ServerMessage) TaskOutcome {
	var r map[string]any
	json.Unmarshal(m.Result, &r)
	text := ""
	switch {
	case r["answer"] != nil:
		text = fmt.Sprint(r["answer"])
	case r["finish"] != nil:
		text = fmt.Sprint(r["finish"])
	case len(m.Result) > 0 && string(m.Result) != "null":
		text = string(m.Result)
	}
	if m.Status == aip.StatusCompleted {
		return TaskOutcome{OK: true, Result: text}
	}
	msg := cmp.Or(m.Error, fmt.Sprint(r["failure"]))
	// UFO says so when it cancels a task whose device left.
	lost := strings.Contains(msg, "device disconnected") || strings.Contains(msg, "is not connected")
	return TaskOutcome{Error: msg, Result: text, DeviceLost: lost}
}

// taskRef is a task's id as the graph keeps it: the device (escaped) and
// the session_id.
func taskRef(device, session string) string {
	return "aip:" + url.PathEscape(device) + "/" + session
}

func parseTaskRef(id string) (device, session string, ok bool) {
	rest, ok := strings.CutPrefix(id, "aip:")
	if !ok {
		return "", "", false
	}
	d, session, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	device, err := url.PathUnescape(d)
	return device, session, err == nil && session != ""
}

// link is the registered connection for one device.
type link struct {
	device, clientID string
	conn             *aip.Conn
	done             chan struct{}
	err              error

	mu      sync.Mutex
	pending map[string]chan *aip.ServerMessage // a start's acceptance, by session
	ends    map[string]chan *aip.ServerMessage // task_end frames, by session
}

func (l *link) expect(session string) chan *aip.ServerMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := make(chan *aip.ServerMessage, 1)
	l.pending[session] = c
	return c
}

func (l *link) forget(session string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, session)
}

// end is where the task_end of session arrives (or has arrived).
func (l *link) end(session string) chan *aip.ServerMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.ends[session]
	if c == nil {
		c = make(chan *aip.ServerMessage, 1)
		l.ends[session] = c
	}
	return c
}

func (a *AIPDevices) drop(device string, l *link) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.links[device] == l {
		delete(a.links, device)
	}
}

// link returns the device's live link, opening and registering one if
// needed. A registration refused because the device is not connected is
// ErrDeviceGone.
func (a *AIPDevices) link(ctx context.Context, device string) (*link, error) {
	a.mu.Lock()
	l := a.links[device]
	a.mu.Unlock()
	if l != nil {
		select {
		case <-l.done:
			a.drop(device, l)
		default:
			return l, nil
		}
	}
	l, err := a.open(ctx, device)
	// The server may still hold this client's last connection (this side
	// restarted, or the connection just dropped) until it sees it gone.
	deadline := time.Now().Add(a.opts.Timeout)
	for n := 0; errors.Is(err, errDuplicate) && time.Now().Before(deadline); n++ {
		t := time.NewTimer(backoff.Policy{Base: 20 * time.Millisecond, Cap: time.Second}.Delay(n))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		}
		l, err = a.open(ctx, device)
	}
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.links[device]; old != nil {
		l.conn.CloseNow() // another caller opened one meanwhile
		return old, nil
	}
	a.links[device] = l
	return l, nil
}

func (a *AIPDevices) open(ctx context.Context, device string) (*link, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	h := http.Header{}
	if a.opts.Token != "" {
		h.Set("X-API-Key", a.opts.Token)
	}
	opts := aip.DialOptions{Header: h, HTTPClient: a.opts.HTTPClient}
	conn, resp, err := aip.Dial(ctx, a.opts.URL, opts)
	if err != nil && resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && a.opts.Token != "" {
		conn, resp, err = aip.Dial(ctx, aip.WithToken(a.opts.URL, a.opts.Token), opts)
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return nil, fmt.Errorf("the AIP server %s refused the token (HTTP %d): check constellation.servers' token", aip.RedactURL(a.opts.URL), resp.StatusCode)
		}
		return nil, fmt.Errorf("connecting to the AIP server for %s: %w", device, err)
	}
	l := &link{device: device, clientID: a.opts.Name + "@" + device, conn: conn, done: make(chan struct{}),
		pending: map[string]chan *aip.ServerMessage{}, ends: map[string]chan *aip.ServerMessage{}}
	now := aip.Timestamp(time.Now())
	err = conn.Send(ctx, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
		ClientID: l.clientID, TargetID: device, Timestamp: now,
		Metadata: map[string]any{"type": "constellation_client", "task_name": a.opts.Name, "targeted_device_id": device,
			"registration_time": now, "platform": "saucer"}})
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("registering for %s: %w", device, err)
	}
	_, b, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("registering for %s: no answer: %w", device, err)
	}
	m, err := aip.DecodeServer(b)
	switch {
	case err != nil:
		conn.CloseNow()
		return nil, fmt.Errorf("registering for %s: the answer is not an AIP frame: %w", device, err)
	case m.Type == aip.TypeError:
		conn.CloseNow()
		switch {
		case strings.Contains(m.Error, "not connected"):
			return nil, fmt.Errorf("%w: %s", ErrDeviceGone, m.Error)
		case strings.Contains(m.Error, "already registered"):
			return nil, fmt.Errorf("registering for %s: %w: %s", device, errDuplicate, m.Error)
		}
		return nil, fmt.Errorf("registering for %s: the server refused: %s", device, m.Error)
	case m.Status != aip.StatusOK:
		conn.CloseNow()
		return nil, fmt.Errorf("registering for %s: the server answered %s/%s, not heartbeat/ok", device, m.Type, m.Status)
	}
	go l.read(a.opts.Logf)
	return l, nil
}

// read takes the server's frames: a task's acceptance (heartbeat/ok with
// its session_id) or refusal (error with it), and task ends.
func (l *link) read(logf func(string, ...any)) {
	defer close(l.done)
	ctx := context.Background()
	l.conn.Bind(ctx)
	for {
		_, b, err := l.conn.Read(ctx)
		if err != nil {
			l.err = err
			return
		}
		m, err := aip.DecodeServer(b)
		if err != nil {
			logf("constellation: %s: an unreadable frame from the AIP server: %v", l.device, err)
			continue
		}
		switch m.Type {
		case aip.TypeHeartbeat, aip.TypeError:
			l.mu.Lock()
			c := l.pending[m.SessionID]
			l.mu.Unlock()
			if c != nil && m.SessionID != "" {
				select {
				case c <- m:
				default:
				}
			} else if m.Type == aip.TypeError {
				logf("constellation: %s: the AIP server says: %s", l.device, m.Error)
			}
		case aip.TypeTaskEnd:
			select {
			case l.end(m.SessionID) <- m:
			default: // told twice (a resent end)
			}
		}
	}
}

// errDuplicate is a registration refused because the server still holds
// a connection of this client's name.
var errDuplicate = errors.New("the server still holds a connection of this name")

// Join runs nodes on the devices of several places (this server's, an AIP
// server's) as one set: a device belongs to the first place that lists it.
// A task id carries its place's index, so that a resumed orchestrator
// waits on the right one.
func Join(places ...Devices) Devices { return joined(places) }

type joined []Devices

func (j joined) List(ctx context.Context) ([]Device, error) {
	var out []Device
	for _, p := range j {
		ds, err := p.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if !slices.ContainsFunc(out, func(o Device) bool { return o.ID == d.ID }) {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

func (j joined) Start(ctx context.Context, device, key, task string) (string, error) {
	for i, p := range j {
		ds, err := p.List(ctx)
		if err != nil {
			return "", err
		}
		if slices.ContainsFunc(ds, func(d Device) bool { return d.ID == device }) {
			id, err := p.Start(ctx, device, key, task)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d|%s", i, id), nil
		}
	}
	return "", fmt.Errorf("%w: no place lists %s", ErrDeviceGone, device)
}

func (j joined) Wait(ctx context.Context, taskID string) (TaskOutcome, error) {
	idx, id, ok := strings.Cut(taskID, "|")
	if !ok {
		return j[0].Wait(ctx, taskID) // started before places were joined
	}
	var i int
	if _, err := fmt.Sscanf(idx, "%d", &i); err != nil || i < 0 || i >= len(j) {
		return TaskOutcome{}, fmt.Errorf("task id %q does not name one of the %d places", taskID, len(j))
	}
	return j[i].Wait(ctx, id)
}
