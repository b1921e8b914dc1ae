package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/backoff"
	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/tools"
)

// State is where a server is in its life.
type State string

// Server states.
const (
	// StateStarting: the first start is under way.
	StateStarting State = "starting"
	// StateReady: initialised and listed; calls go through.
	StateReady State = "ready"
	// StateDead: not running; calls fail fast, a restart is scheduled.
	StateDead State = "dead"
	// StateClosed: the client was closed.
	StateClosed State = "closed"
)

// ServerStatus describes one server, for `saucer doctor` and get_state.
type ServerStatus struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	State     State  `json:"state"`
	// Error is why the server is dead, or why its last start failed.
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"`
	// PID is the stdio server's process id while it runs.
	PID int `json:"pid,omitempty"`
	// Restarts counts the successful starts after the first.
	Restarts int `json:"restarts"`
	// StartDuration is how long the last successful start took (spawn,
	// initialize, tools/list).
	StartDuration time.Duration `json:"start_duration"`
	// NextRetry is when a dead server is started again.
	NextRetry time.Time `json:"next_retry,omitzero"`
}

// live is one connection to a running server.
type live struct {
	mc *mcpclient.Client
	// direct holds the tools of Saucer's own server (Server.MCP) by name:
	// both ends are in this process, so a call goes to the tool itself
	// rather than through JSON-RPC (see callDirect). Discovery still goes
	// through mc, so that the agents see the tools as any MCP client would.
	direct map[string]*tools.Tool
	proc   *process      // stdio servers only
	gone   chan struct{} // closed when the process exits; nil when there is no process
}

func (l *live) close() error {
	err := l.mc.Close()
	if l.proc != nil {
		if perr := l.proc.stop(); perr != nil {
			return perr
		}
		return nil // a closed pipe or an exit status on the way down is not news
	}
	return err
}

// conn supervises one server: it owns the live connection, the cached tool
// list and the restart schedule.
type conn struct {
	srv  Server
	kind string
	opts *Options
	log  *slog.Logger

	ctx     context.Context // the connection's lifetime; cancelled by close
	cancel  context.CancelFunc
	done    chan struct{} // closed when the supervisor loop returns
	refresh chan struct{} // tools/list_changed arrived
	poke    chan struct{} // a call saw a transport error: check liveness now

	mu        sync.Mutex
	cur       *live
	state     State
	lastErr   error
	tools     map[string]*tool
	restarts  int
	startDur  time.Duration
	upSince   time.Time
	nextRetry time.Time

	progressMu sync.Mutex
	progress   map[string]func(Progress)
	tokens     atomic.Int64
	// changed is told when the tool list changes (its Client's version).
	changed func()
}

func newConn(s Server, opts *Options) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		srv: s, kind: s.Kind(), opts: opts,
		log:    opts.Logger.With("server", s.Namespace),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
		// Capacity one: signals coalesce while the loop is busy.
		refresh:  make(chan struct{}, 1),
		poke:     make(chan struct{}, 1),
		state:    StateStarting,
		progress: map[string]func(Progress){},
	}
}

func (cn *conn) initTimeout() time.Duration {
	if cn.srv.InitTimeout > 0 {
		return cn.srv.InitTimeout
	}
	return DefaultInitTimeout
}

// start makes the first attempt and starts the supervisor. The server is
// supervised even when the attempt fails: it is retried with backoff.
func (cn *conn) start(ctx context.Context) error {
	err := cn.attempt(ctx)
	go cn.loop(err != nil)
	return err
}

// attempt starts the server once: spawn or connect, initialize, list.
func (cn *conn) attempt(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cn.initTimeout())
	defer cancel()
	// Closing the client must stop a start that is under way.
	stop := context.AfterFunc(cn.ctx, cancel)
	defer stop()

	began := time.Now()
	l, tools, err := cn.open(ctx)
	if err != nil {
		err = cn.explain(ctx, l, err)
		if l != nil {
			l.close()
		}
		cn.mu.Lock()
		if cn.state != StateClosed {
			cn.state, cn.lastErr = StateDead, err
		}
		cn.mu.Unlock()
		cn.log.Warn("mcp server did not start", "error", err)
		return err
	}
	cn.mu.Lock()
	if cn.state == StateClosed { // closed while starting
		cn.mu.Unlock()
		l.close()
		return errors.New("the client was closed")
	}
	if !cn.upSince.IsZero() {
		cn.restarts++
	}
	changed := !sameTools(cn.tools, tools)
	cn.cur, cn.state, cn.lastErr, cn.tools = l, StateReady, nil, tools
	cn.startDur, cn.upSince, cn.nextRetry = time.Since(began), time.Now(), time.Time{}
	cn.mu.Unlock()
	if changed && cn.changed != nil {
		cn.changed()
	}
	cn.log.Debug("mcp server ready", "kind", cn.kind, "tools", len(tools), "took", time.Since(began))
	return nil
}

// open connects and lists tools. On failure it returns what it opened, so
// that explain can read the process's last words before it is closed.
func (cn *conn) open(ctx context.Context) (*live, map[string]*tool, error) {
	l := &live{}
	var err error
	switch cn.kind {
	case KindBuiltin:
		srv := cn.srv.foreign
		if srv == nil {
			// Taken before the server is made, so that every tool called
			// directly is one the server lists (tools are only added).
			held := cn.srv.MCP.Tools()
			srv = mcpserve.New(cn.srv.MCP)
			if !cn.srv.viaMCP {
				l.direct = make(map[string]*tools.Tool, len(held))
				for _, t := range held {
					l.direct[t.Name] = t
				}
			}
		}
		l.mc, err = mcpclient.NewInProcessClientWithOptions(srv, mcpclient.WithProtocolVersion(ProtocolVersion))
		if err != nil {
			return nil, nil, err
		}
	case KindStdio:
		p, err := startProcess(cn.srv, cn.opts.MaxMessageBytes, cn.log)
		if err != nil {
			return nil, nil, err
		}
		l.proc, l.gone = p, p.exited
		l.mc = mcpclient.NewClient(transport.NewIO(p.stdout, p.stdin, nil), mcpclient.WithProtocolVersion(ProtocolVersion))
	case KindHTTP:
		t, err := transport.NewStreamableHTTP(cn.srv.URL, transport.WithHTTPHeaders(cn.srv.Headers), transport.WithContinuousListening())
		if err != nil {
			return nil, nil, fmt.Errorf("url %q: %w", cn.srv.URL, err)
		}
		l.mc = mcpclient.NewClient(t, mcpclient.WithProtocolVersion(ProtocolVersion))
	}
	l.mc.OnNotification(cn.onNotification)
	// The session lives as long as the connection, not as long as this
	// attempt's context.
	if err := l.mc.Start(cn.ctx); err != nil {
		return l, nil, fmt.Errorf("start: %w", err)
	}
	_, err = l.mc.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      mcp.Implementation{Name: "saucer", Version: "0.1.0"},
	}})
	if err != nil {
		return l, nil, fmt.Errorf("initialize: %w", err)
	}
	tools, err := cn.list(ctx, l)
	if err != nil {
		return l, nil, err
	}
	return l, tools, nil
}

func (cn *conn) list(ctx context.Context, l *live) (map[string]*tool, error) {
	res, err := l.mc.ListTools(ctx, mcp.ListToolsRequest{}) // follows pagination
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	return buildTools(cn.srv, res.Tools, cn.log)
}

// explain turns a failed start into an error that says what happened and
// what the server said.
func (cn *conn) explain(ctx context.Context, l *live, err error) error {
	var p *process
	if l != nil {
		p = l.proc
	}
	if p != nil {
		// A crash shows up as a closed pipe before the exit status is in.
		select {
		case <-p.exited:
		case <-time.After(500 * time.Millisecond):
		}
	}
	msg := err.Error()
	switch {
	case p != nil && p.hasExited():
		msg = fmt.Sprintf("%s exited while starting (%v)", cn.describe(), p.exitErr())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = fmt.Sprintf("%s did not finish starting (initialize and tools/list) within %s", cn.describe(), cn.initTimeout())
	case cn.ctx.Err() != nil:
		return errors.New("the client was closed while the server was starting")
	default:
		msg = fmt.Sprintf("%s: %s", cn.describe(), msg)
	}
	return errors.New(msg + p.lastWords())
}

func (cn *conn) describe() string {
	switch cn.kind {
	case KindStdio:
		return fmt.Sprintf("stdio server %q (%s)", cn.srv.Namespace, cn.srv.Command)
	case KindHTTP:
		return fmt.Sprintf("http server %q (%s)", cn.srv.Namespace, cn.srv.URL)
	}
	return fmt.Sprintf("server %q", cn.srv.Namespace)
}

// loop supervises the server until close: it notices a dead process,
// pings, restarts with backoff and refreshes the tool list.
func (cn *conn) loop(dead bool) {
	defer close(cn.done)
	var ping <-chan time.Time
	if cn.kind != KindBuiltin && cn.opts.PingInterval > 0 {
		t := time.NewTicker(cn.opts.PingInterval)
		defer t.Stop()
		ping = t.C
	}
	// Restarts wait by Saucer's one retry policy (package backoff), as
	// model calls and the device connection do.
	policy := backoff.Policy{Base: cn.opts.MinBackoff, Cap: cn.opts.MaxBackoff}
	failures := 0
	var retry <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	schedule := func() {
		d := policy.Delay(failures)
		failures++
		cn.mu.Lock()
		cn.nextRetry = time.Now().Add(d)
		cn.mu.Unlock()
		timer = time.NewTimer(d)
		retry = timer.C
	}
	if dead && cn.kind != KindBuiltin {
		schedule()
	}
	for {
		cn.mu.Lock()
		l := cn.cur
		cn.mu.Unlock()
		var gone <-chan struct{}
		if l != nil {
			gone = l.gone
		}
		select {
		case <-cn.ctx.Done():
			return
		case <-gone:
			cn.mu.Lock()
			up := time.Since(cn.upSince)
			cn.mu.Unlock()
			if up > cn.opts.MaxBackoff {
				failures = 0 // it ran well for a while: restart soon
			}
			schedule()
			cn.fail(l, fmt.Errorf("%s exited (%v)%s", cn.describe(), l.proc.exitErr(), l.proc.lastWords()))
		case <-retry:
			retry = nil
			if err := cn.attempt(cn.ctx); err != nil {
				if cn.ctx.Err() != nil {
					return
				}
				schedule()
				continue
			}
			cn.log.Info("mcp server restarted")
		case <-ping:
			if err := cn.alive(l); err != nil {
				schedule()
				cn.fail(l, err)
			}
		case <-cn.poke:
			if err := cn.alive(l); err != nil {
				schedule()
				cn.fail(l, err)
			}
		case <-cn.refresh:
			if l != nil {
				cn.relist(l)
			}
		}
	}
}

// alive pings the server; a server that does not answer is dead, and the
// error says so.
func (cn *conn) alive(l *live) error {
	if l == nil {
		return nil
	}
	timeout := min(10*time.Second, cn.initTimeout())
	ctx, cancel := context.WithTimeout(cn.ctx, timeout)
	defer cancel()
	err := l.mc.Ping(ctx)
	if err == nil || cn.ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("%s did not answer a ping within %s: %v%s", cn.describe(), timeout, err, l.proc.lastWords())
}

// fail marks the server dead because of err and closes l, if l is still
// the current connection.
func (cn *conn) fail(l *live, err error) {
	cn.mu.Lock()
	if cn.cur != l || cn.state == StateClosed {
		cn.mu.Unlock()
		return
	}
	cn.cur, cn.state, cn.lastErr = nil, StateDead, err
	cn.mu.Unlock()
	cn.log.Warn("mcp server is down; restarting it", "error", err)
	l.close()
}

// relist refreshes the cached tools after tools/list_changed.
func (cn *conn) relist(l *live) {
	ctx, cancel := context.WithTimeout(cn.ctx, cn.initTimeout())
	defer cancel()
	tools, err := cn.list(ctx, l)
	if err != nil {
		cn.log.Warn("could not refresh the tool list; keeping the old one", "error", err)
		return
	}
	cn.mu.Lock()
	changed := cn.cur == l && !sameTools(cn.tools, tools)
	if cn.cur == l {
		cn.tools = tools
	}
	cn.mu.Unlock()
	if changed && cn.changed != nil {
		cn.changed()
	}
	cn.log.Debug("tool list refreshed", "tools", len(tools))
}

// sameTools reports whether two listings hold the same tool infos.
func sameTools(a, b map[string]*tool) bool {
	if len(a) != len(b) {
		return false
	}
	for name, t := range a {
		u := b[name]
		if u == nil || !reflect.DeepEqual(t.info, u.info) {
			return false
		}
	}
	return true
}

func (cn *conn) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged):
		select {
		case cn.refresh <- struct{}{}:
		default:
		}
	case "notifications/progress":
		cn.deliverProgress(n.Params.AdditionalFields)
	case "notifications/message":
		cn.log.Debug("mcp server log", "params", n.Params.AdditionalFields)
	}
}

// toolList is the cached tools, in no particular order.
func (cn *conn) toolList() []*tool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	out := make([]*tool, 0, len(cn.tools))
	for _, t := range cn.tools {
		out = append(out, t)
	}
	return out
}

func (cn *conn) lookup(name string) *tool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.tools[name]
}

func (cn *conn) status() ServerStatus {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	s := ServerStatus{Namespace: cn.srv.Namespace, Kind: cn.kind, State: cn.state, Tools: len(cn.tools),
		Restarts: cn.restarts, StartDuration: cn.startDur}
	if cn.lastErr != nil {
		s.Error = cn.lastErr.Error()
	}
	if cn.cur != nil && cn.cur.proc != nil {
		s.PID = cn.cur.proc.cmd.Process.Pid
	}
	if cn.state == StateDead {
		s.NextRetry = cn.nextRetry
	}
	return s
}

// current returns the live connection, or an error saying why there is
// none, for a call to fail fast.
func (cn *conn) current() (*live, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	switch cn.state {
	case StateReady:
		return cn.cur, nil
	case StateClosed:
		return nil, fmt.Errorf("server %q is closed", cn.srv.Namespace)
	}
	msg := fmt.Sprintf("server %q is not running", cn.srv.Namespace)
	if cn.lastErr != nil {
		msg += ": " + cn.lastErr.Error()
	}
	if !cn.nextRetry.IsZero() {
		msg += fmt.Sprintf("; Saucer starts it again in %s", time.Until(cn.nextRetry).Round(100*time.Millisecond).Abs())
	}
	return nil, errors.New(msg)
}

// callTool runs one tool call on the live connection and maps its result.
// args is the call's arguments as a JSON object. A transport failure is
// explained: the process's exit, or a check of the server's health.
func (cn *conn) callTool(ctx context.Context, cmd command.Command, args json.RawMessage, onProgress func(Progress)) (command.Result, error) {
	l, err := cn.current()
	if err != nil {
		return command.Result{}, err
	}
	if t := l.direct[cmd.ToolName]; t != nil {
		return callDirect(ctx, t, cmd, args, onProgress), nil
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: cmd.ToolName, Arguments: args}}
	if onProgress != nil && cn.srv.MCP != nil {
		// Saucer's own server in-process: its reports come straight to us,
		// in order, before the result.
		ctx = mcpserve.WithProgress(ctx, func(p tools.Progress) {
			onProgress(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
		})
	} else if onProgress != nil {
		token := cn.srv.Namespace + "-" + strconv.FormatInt(cn.tokens.Add(1), 10)
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		cn.progressMu.Lock()
		cn.progress[token] = onProgress
		cn.progressMu.Unlock()
		defer func() {
			cn.progressMu.Lock()
			delete(cn.progress, token)
			cn.progressMu.Unlock()
		}()
	}
	res, err := l.mc.CallTool(ctx, req)
	if err == nil {
		if res == nil {
			return command.Result{}, errors.New("the server sent no result")
		}
		return resultOf(cmd, res), nil
	}
	var te *transport.Error
	if ctx.Err() != nil || !errors.As(err, &te) {
		return command.Result{}, err
	}
	if l.proc != nil {
		select {
		case <-l.gone:
			return command.Result{}, fmt.Errorf("%s exited during the call (%v)%s", cn.describe(), l.proc.exitErr(), l.proc.lastWords())
		case <-time.After(time.Second):
		}
	}
	select {
	case cn.poke <- struct{}{}:
	default:
	}
	return command.Result{}, fmt.Errorf("%s: %v%s", cn.describe(), err, l.proc.lastWords())
}

// close stops the supervisor and the server, and waits for both.
func (cn *conn) close() error {
	cn.mu.Lock()
	l := cn.cur
	cn.cur, cn.state = nil, StateClosed
	cn.mu.Unlock()
	cn.cancel()
	<-cn.done
	if l != nil {
		return l.close()
	}
	return nil
}

// lastWords is what the running server last said on stderr or wrote to
// stdout that was not JSON-RPC: the likely reason a call got no answer.
func (cn *conn) lastWords() string {
	cn.mu.Lock()
	l := cn.cur
	cn.mu.Unlock()
	if l == nil {
		return ""
	}
	return l.proc.lastWords()
}
