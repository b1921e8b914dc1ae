// Package client is the device client: it connects to the device's MCP
// servers, keeps them alive, caches what tools they offer, and runs
// Commands as MCP tool calls, turning every outcome, including transport
// failures, into a command.Result.
//
// Each MCP server is one namespace (an "app" for the host agent). A server
// runs in the same process (Server.MCP, Go tools made with package tools),
// as a child process over stdio
// (Server.Command) or behind a streamable HTTP endpoint (Server.URL).
// External servers are supervised: initialised under a timeout, pinged,
// restarted with backoff when they die, refreshed when their tool list
// changes, and stopped with their whole process group on Close.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

// ProtocolVersion is the MCP revision the client asks for. It is pinned to
// a released revision because mcp-go otherwise opens with a probe for a
// draft one.
const ProtocolVersion = "2025-11-25"

// Defaults for the zero Options and Server fields.
const (
	// DefaultCallTimeout bounds one tool call. It is longer than the limits
	// of Saucer's own tools, so that those report their own, more
	// informative timeouts first.
	DefaultCallTimeout = 15 * time.Minute
	// DefaultInitTimeout bounds starting a server, initialize and the first
	// tools/list. npx may install a package first, hence the margin.
	DefaultInitTimeout = 60 * time.Second
	// DefaultPingInterval is how often an external server is pinged.
	DefaultPingInterval = 30 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait before a dead
	// server is started again; the wait doubles after each failed start.
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMaxResultBytes is the largest tool result passed on.
	DefaultMaxResultBytes = 4 << 20
	// DefaultMaxMessageBytes is the longest line read from a stdio server;
	// a longer one is dropped (and named in the call's error).
	DefaultMaxMessageBytes = 32 << 20
)

// Server is one MCP server the client serves tools from. Exactly one of MCP,
// Command and URL says where it is.
type Server struct {
	// Namespace names the server's tools for routing and for the agents;
	// it must be unique within a Client.
	Namespace string
	// Description tells the host agent what the namespace is for.
	Description string
	// ToolType, when set, is the type of every tool of this server. When
	// empty each tool's type follows its annotations: readOnlyHint true
	// makes it data_collection, anything else action.
	ToolType command.ToolType

	// MCP is an in-process server: Go tools made with tools.New. They are
	// listed through MCP, like any server's, and called directly, without
	// encoding the call, with the results MCP would have given.
	MCP *tools.Server
	// foreign is an mcp-go server served in-process as it is: the
	// package's tests use it to play third-party servers without a
	// process.
	foreign *server.MCPServer
	// viaMCP sends calls to MCP through mcp-go's in-process transport
	// instead of to the tools themselves: the package's tests hold the
	// direct call to what MCP gives.
	viaMCP bool

	// Command starts a stdio server: Command with Args, in Dir (default:
	// the process's directory), with Env (KEY=VALUE) added to the
	// inherited environment.
	Command string
	Args    []string
	Env     []string
	Dir     string

	// URL is a streamable HTTP endpoint; Headers go with every request.
	URL     string
	Headers map[string]string

	// Allow, when not empty, keeps only the tools whose names match one of
	// its patterns (path.Match syntax: *, ?, [a-z]); Deny then removes the
	// tools that match one of its patterns. Filtered tools are invisible:
	// calling one is an unknown tool.
	Allow, Deny []string
	// Risks sets the risk class of the tools whose names match a pattern,
	// over what their annotations say. The first matching pattern in
	// sorted order wins.
	Risks map[string]Risk

	// InitTimeout bounds start, initialize and the first listing; zero
	// means DefaultInitTimeout.
	InitTimeout time.Duration
	// CallTimeout bounds each call to this server; zero means
	// Options.CallTimeout. ToolTimeouts does the same per tool name.
	CallTimeout  time.Duration
	ToolTimeouts map[string]time.Duration

	// Close, when set, is called once the Client is closed: it ends what
	// an in-process server holds (the shell tool's persistent shell).
	Close func() error
}

// Kind says where a server runs: "builtin", "stdio" or "http".
func (s Server) Kind() string {
	switch {
	case s.MCP != nil || s.foreign != nil:
		return KindBuiltin
	case s.Command != "":
		return KindStdio
	case s.URL != "":
		return KindHTTP
	}
	return ""
}

// Server kinds.
const (
	KindBuiltin = "builtin"
	KindStdio   = "stdio"
	KindHTTP    = "http"
)

// Options configures a Client. The zero value is usable.
type Options struct {
	// Device describes the device; the zero value means DetectDevice().
	Device command.DeviceInfo
	// CallTimeout bounds each tool call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// Logger receives the servers' lifecycle, their stderr (at debug
	// level) and policy violations; nil means slog.Default().
	Logger *slog.Logger
	// PingInterval is how often external servers are pinged; zero means
	// DefaultPingInterval, a negative value turns pinging off.
	PingInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait before restarting a dead
	// server; zero means the defaults.
	MinBackoff, MaxBackoff time.Duration
	// RequireAll makes New fail when an external server does not start.
	// Without it New returns a Client whose dead servers are retried in the
	// background and whose calls to them fail fast with the reason.
	RequireAll bool
	// Forbid lists risk classes whose tools may not run: a call to one is
	// a failure Result, logged. The tools stay visible, with their class.
	Forbid []Risk
	// MaxResultBytes is the largest tool result passed on; a larger one is
	// a failure Result. Zero means DefaultMaxResultBytes.
	MaxResultBytes int
	// MaxMessageBytes is the longest line read from a stdio server; zero
	// means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Screenshot, if set, captures the display for the built-in screenshot
	// command (PNG bytes). When nil, a display is detected and captured
	// with a system tool; a device without a display does not declare
	// screenshot at all.
	Screenshot func(ctx context.Context) ([]byte, error)
	// OnClose runs when the client has closed its servers: what the device
	// was built on (a sandbox) ends with it.
	OnClose func() error
}

func (o Options) withDefaults() Options {
	if reflect.ValueOf(o.Device).IsZero() {
		o.Device = DetectDevice()
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Screenshot == nil {
		o.Screenshot = systemScreenshot()
	}
	return o
}

// Namespace summarises one server for the host agent.
type Namespace struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Tools       int    `json:"tools"`
}

// Client runs Commands against a set of MCP servers. It is safe for
// concurrent use. Its tool list follows the servers: it changes when a
// server reports a changed list or is restarted.
type Client struct {
	opts        Options
	log         *slog.Logger
	conns       []*conn // in the order given to New
	byNamespace map[string]*conn
	calls       calls // the commands it runs, and those that ended lately
	// toolsMu guards the tool list's version and the context cancelled
	// at its next change (ToolsVersion).
	toolsMu      sync.Mutex
	toolsVersion uint64
	toolsChanged context.Context
	signalTools  context.CancelFunc
	closeOnce    sync.Once
	closeErr     error
}

// New connects to each server (in parallel), initialises the MCP session
// and lists its tools. It fails, closing what it opened, if a server's
// definition is wrong, if an in-process server cannot be listed, or, with
// Options.RequireAll, if an external server does not start within its
// InitTimeout. Otherwise a dead external server is reported by Status and
// retried in the background.
func New(ctx context.Context, servers []Server, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	c := &Client{opts: opts, log: opts.Logger, byNamespace: make(map[string]*conn, len(servers))}
	c.toolsChanged, c.signalTools = context.WithCancel(context.Background())
	for _, s := range servers {
		if err := c.check(s); err != nil {
			return nil, err
		}
		cn := newConn(s, &c.opts)
		cn.changed = c.toolsChange
		c.conns = append(c.conns, cn)
		c.byNamespace[s.Namespace] = cn
	}
	errs := make([]error, len(c.conns))
	var wg sync.WaitGroup
	for i, cn := range c.conns {
		wg.Go(func() { errs[i] = cn.start(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		if c.conns[i].kind == KindBuiltin || opts.RequireAll || ctx.Err() != nil {
			c.Close()
			return nil, fmt.Errorf("client: server %q: %w", c.conns[i].srv.Namespace, err)
		}
	}
	return c, nil
}

// check refuses server definitions that cannot work.
func (c *Client) check(s Server) error {
	n := 0
	for _, set := range []bool{s.MCP != nil || s.foreign != nil, s.Command != "", s.URL != ""} {
		if set {
			n++
		}
	}
	switch {
	case s.Namespace == "":
		return errors.New("client: a server has an empty namespace; give each server a unique name")
	case c.byNamespace[s.Namespace] != nil:
		return fmt.Errorf("client: namespace %q is used by two servers; namespaces must be unique", s.Namespace)
	case isBuiltin(s.Namespace):
		return fmt.Errorf("client: namespace %q is reserved for the client's built-in commands", s.Namespace)
	case n == 0:
		return fmt.Errorf("client: server %q has no MCP server: set one of MCP (in-process), Command (stdio) or URL (http)", s.Namespace)
	case n > 1:
		return fmt.Errorf("client: server %q sets more than one of MCP, Command and URL", s.Namespace)
	case s.ToolType != "" && !s.ToolType.Valid():
		return fmt.Errorf("client: server %q: tool type %q is neither %s nor %s", s.Namespace, s.ToolType, command.Action, command.DataCollection)
	}
	for pat, r := range s.Risks {
		if !r.Valid() {
			return fmt.Errorf("client: server %q: risk %q for %q is not one of %s", s.Namespace, r, pat, riskList())
		}
	}
	for _, pats := range [][]string{s.Allow, s.Deny, mapKeys(s.Risks)} {
		for _, p := range pats {
			if err := checkPattern(p); err != nil {
				return fmt.Errorf("client: server %q: %w", s.Namespace, err)
			}
		}
	}
	return nil
}

// isBuiltin reports whether name is a command the client answers itself,
// so that no server can take it as its namespace.
func isBuiltin(name string) bool {
	switch name {
	case command.GetMCPTools, command.ListTools, command.GetDeviceInfo, Describe, GetState, Screenshot:
		return true
	}
	return false
}

// Tools lists the tools of one namespace ("" for all) and one type (""
// for both), sorted by namespace, then name. The slice is the caller's.
// A server that is not running keeps the tools it last listed.
func (c *Client) Tools(namespace string, toolType command.ToolType) []command.ToolInfo {
	out := []command.ToolInfo{}
	for _, cn := range c.conns {
		if namespace != "" && cn.srv.Namespace != namespace {
			continue
		}
		for _, t := range cn.toolList() {
			if toolType == "" || t.info.ToolType == toolType {
				out = append(out, t.info)
			}
		}
	}
	slices.SortFunc(out, func(a, b command.ToolInfo) int {
		if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
			return n
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// ToolsVersion is the tool list's version, which goes up whenever a
// server's tools change (a server that announced a new list, or came
// back with another after a restart), and a context cancelled at the next
// change: a remote device tells its server at once (aip.MetaToolsVersion).
// A context rather than a channel so that a watcher can wait with
// context.AfterFunc, without a goroutine of its own: a device that
// waits idle for its server holds as few as it can.
func (c *Client) ToolsVersion() (uint64, context.Context) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	return c.toolsVersion, c.toolsChanged
}

// toolsChange counts a change of the tool list and wakes its watchers.
func (c *Client) toolsChange() {
	c.toolsMu.Lock()
	c.toolsVersion++
	c.signalTools()
	c.toolsChanged, c.signalTools = context.WithCancel(context.Background())
	c.toolsMu.Unlock()
}

// allTools is every visible tool, for suggestions.
func (c *Client) allTools() []command.ToolInfo { return c.Tools("", "") }

// Namespaces lists the servers in the order given to New.
func (c *Client) Namespaces() []Namespace {
	out := make([]Namespace, 0, len(c.conns))
	for _, cn := range c.conns {
		out = append(out, Namespace{Name: cn.srv.Namespace, Description: cn.srv.Description, Tools: len(cn.toolList())})
	}
	return out
}

// Status reports the state of every server, in the order given to New.
func (c *Client) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(c.conns))
	for _, cn := range c.conns {
		out = append(out, cn.status())
	}
	return out
}

// Device describes the device the client runs on.
func (c *Client) Device() command.DeviceInfo { return c.opts.Device }

// Close stops supervising, cancels the commands still running (in the
// background too) and waits for them to end, up to closeWait, then ends
// every MCP session and stops every server process with its whole process
// group. It waits for them to exit, so nothing outlives it. Calling it
// again returns the first result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.calls.cancelAll(errors.New("the device client was closed"), closeWait)
		var wg sync.WaitGroup
		errs := make([]error, len(c.conns))
		for i, cn := range c.conns {
			wg.Go(func() {
				if err := cn.close(); err != nil {
					errs[i] = fmt.Errorf("close %s: %w", cn.srv.Namespace, err)
				}
			})
		}
		wg.Wait()
		for _, cn := range c.conns {
			if cn.srv.Close != nil {
				if err := cn.srv.Close(); err != nil {
					errs = append(errs, fmt.Errorf("close %s: %w", cn.srv.Namespace, err))
				}
			}
		}
		if c.opts.OnClose != nil {
			errs = append(errs, c.opts.OnClose())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// closeWait bounds how long Close waits for cancelled commands to end: a
// shell command's processes are killed at once, and a tool that ignores
// its cancellation must not hold Close for good.
const closeWait = 5 * time.Second

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
