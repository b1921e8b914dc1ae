// Package server is Saucer's agent server: devices connect over AIP
// (WebSocket /ws), register, and get commands from host and app agents that
// run here, one session per task; an HTTP API dispatches tasks, lists
// devices and shows tasks with their command lifecycles.
//
// It speaks AIP as UFO does, so UFO device clients work with it, and its
// durable-command and progress extensions are extra JSON fields they
// ignore.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/uuid"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// Runner runs one task; *agent.Session is one.
type Runner interface {
	Run(ctx context.Context, request string) *agent.Outcome
}

// SessionSpec is what the server knows when a task starts: build the
// agents over its Dispatcher and report their events to its Observer.
type SessionSpec struct {
	TaskID, ClientID, Request, TaskName string
	// Dispatcher sends the session's commands to the device.
	Dispatcher dispatcher.Dispatcher
	// Device is what the device said about itself when it registered.
	Device command.DeviceInfo
	// AppDescriptions are the device's namespaces (Saucer clients send
	// them at registration; UFO clients do not).
	AppDescriptions map[string]string
	// Observer records the session's steps in the task; pass it to the
	// agents.
	Observer func(agent.Event)
	// WrapModel, when set, must wrap the model the agents ask: the task's
	// journal records its replies there (and, for a resumed task, replays
	// them).
	WrapModel func(llm.Model) llm.Model
	// Resumed says the task ran before a restart of the server: its agents
	// start again from the beginning, and its journal brings them back to
	// where they were without asking the model or the device again.
	Resumed bool
	// Person puts the agents' questions and approvals to the API (GET and
	// POST /api/tasks/{id}/pending); pass it as the session's Asker and
	// Confirmer.
	Person Person
}

// Person answers an agent's questions and approves its commands.
type Person interface {
	agent.Asker
	strategy.Confirmer
}

// Defaults of Options.
const (
	DefaultRegisterTimeout   = 10 * time.Second
	DefaultMaxTasks          = 64
	DefaultMaxTasksPerDevice = 1
	DefaultKeepTasks         = 1000
)

// Options configure a Server. NewSession is required.
type Options struct {
	// DeviceAgents names, by client id, the agent of a device's client
	// that runs its command frames (their agent_name), over the default:
	// the agent that asks on Saucer's client and UFO's Windows client,
	// LinuxAgent and MobileAgent on UFO's Linux and mobile clients.
	DeviceAgents map[string]string
	// Token is the API key devices and API callers must present (query
	// ?token= or header X-API-Key). Empty disables authentication.
	Token string
	// KeyLabel names who holds Token ("ops", "dana"): tasks, cancels,
	// answers and approvals made with the key or a console session are
	// recorded as theirs. Empty: "api-key:" and the start of the key's
	// hash, which names the key without revealing it.
	KeyLabel string
	// NewSession builds the agents of a task.
	NewSession func(SessionSpec) (Runner, error)
	// Conn sets each connection's read limit, pings and write timeout.
	Conn aip.ConnOptions
	// AskTimeout is how long an agent's question or approval waits for an
	// answer through the API before it gets its default (no answer; not
	// approved). Zero means DefaultAskTimeout.
	AskTimeout time.Duration
	// RegisterTimeout bounds the wait for a new connection's register frame.
	RegisterTimeout time.Duration
	// CommandTimeout, AwayTimeout and CancelGrace go to each device's
	// dispatcher (see dispatcher.WebSocketOptions).
	CommandTimeout, AwayTimeout, CancelGrace time.Duration
	// CommandTTL is how long a queued command may wait before it expires;
	// zero means its round's deadline.
	CommandTTL time.Duration
	// MaxTasks bounds concurrent tasks on the server, MaxTasksPerDevice on
	// each device.
	MaxTasks, MaxTasksPerDevice int
	// MaxDevices bounds registered devices; zero means no bound.
	MaxDevices int
	// KeepTasks is how many ended tasks stay visible in the API.
	KeepTasks int
	// Logf, when set, is told about connections and tasks.
	Logf func(format string, args ...any)
	// NewID makes ids; nil means time-ordered UUIDs (version 7).
	NewID func() string
	// Store keeps tasks, their journals and the device registry; nil
	// means a memory store. New restores what a durable store holds from
	// an earlier process: running tasks resume when their devices come
	// back. The caller closes it after Shutdown.
	Store store.Store
	// Cluster, when set, makes this server one of several active ones
	// on Store (a PostgreSQL store's *store.Member): API calls about
	// devices and tasks other servers hold go to them, and the server
	// where a device registers takes over its tasks.
	Cluster Cluster

	// Redactor hides secrets in what the API shows of a task's work (its
	// thoughts, commands, outputs), as it does in recordings; nil shows
	// them as they are. A replay through the API compares with it.
	Redactor *trajectory.Redactor
	// RunsDir is where tasks and local runs are recorded (runs/<id>/):
	// GET /api/runs browses them. Empty: no recordings are served.
	RunsDir string
	// KeepRuns is which runs in RunsDir are kept (record.keep): the server
	// prunes the others when it starts and every PruneEvery
	// (DefaultPruneEvery when zero) while it runs. Zero keeps them all.
	KeepRuns   trajectory.Keep
	PruneEvery time.Duration
	// EvalsDir is an eval results directory, or a directory of them:
	// GET /api/evals serves their reports. Empty: none.
	EvalsDir string
	// Review replays recordings (POST /api/runs/{id}/replay) and reads
	// the eval reports of EvalsDir. The server does not know how: package
	// evals does, and serve.Start fills this in (serve.Review). Nil: those
	// routes answer that this server does not replay or read evals.
	Review Review
	// KeepAlive is how often an idle event stream sends a comment
	// (DefaultKeepAlive when zero).
	KeepAlive time.Duration
	// SessionTTL is how long a console login lasts (DefaultSessionTTL
	// when zero).
	SessionTTL time.Duration
	// OnProgress, when set, is told of each running command's progress as
	// the API takes it (GET /api/tasks/{id} shows the latest in
	// "progress"): a device's tool reports, a few a second at most per
	// command. It is called on the device connection's reader: it must
	// return quickly.
	OnProgress func(taskID string, p ProgressInfo)
}

// Server is the agent server. Handler serves /ws and /api/.
type Server struct {
	opts    Options
	ctx     context.Context // cancelled by Shutdown
	stop    context.CancelCauseFunc
	keyHash string

	mu      sync.Mutex
	closing bool
	// suspending is set by Suspend: tasks stop without ending, and
	// nothing more goes into their records or journals.
	suspending atomic.Bool
	devices    map[string]*device
	tasks      map[string]*task
	ended      []string // ended task ids, oldest first
	running    int
	conns      sync.WaitGroup // connection handlers
	taskWG     sync.WaitGroup // task goroutines
	saveWG     sync.WaitGroup // background writes of task records
	store      store.Store
	storeWaits atomic.Int32 // tasks waiting for the store to have room (see keep)
	startedAt  time.Time
	peers      *peers // nil when alone
	events     *hub
	// clusterSeen is the other servers' tasks and clients as the
	// server's stream last read them (see readCluster).
	clusterSeen struct {
		sync.Mutex
		m map[string][]byte
	}
	logins     *loginLimiter
	replays    chan struct{} // one replay at a time
	handler    http.Handler
	handlerOne sync.Once
}

// Errors of Dispatch, mapped to HTTP statuses by the API.
var (
	ErrNoDevice     = errors.New("no such device is connected")
	ErrBusy         = errors.New("too many tasks running")
	ErrShuttingDown = errors.New("the server is shutting down")
	ErrBadRequest   = errors.New("bad request")
)

// New checks the options.
func New(opts Options) (*Server, error) {
	if opts.NewSession == nil {
		return nil, errors.New("server: Options.NewSession is required: it builds the agents of each task")
	}
	if opts.RegisterTimeout <= 0 {
		opts.RegisterTimeout = DefaultRegisterTimeout
	}
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.MaxTasksPerDevice <= 0 {
		opts.MaxTasksPerDevice = DefaultMaxTasksPerDevice
	}
	if opts.KeepTasks <= 0 {
		opts.KeepTasks = DefaultKeepTasks
	}
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = DefaultAskTimeout
	}
	if opts.AwayTimeout <= 0 {
		opts.AwayTimeout = dispatcher.DefaultAwayTimeout
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.NewID == nil {
		opts.NewID = uuid.NewTime
	}
	s := &Server{opts: opts, devices: map[string]*device{}, tasks: map[string]*task{}, startedAt: time.Now(), store: opts.Store,
		events: newHub(), logins: newLoginLimiter(), replays: make(chan struct{}, 1)}
	if s.store == nil {
		s.store = store.NewMemory()
	}
	s.ctx, s.stop = context.WithCancelCause(context.Background())
	if opts.Cluster != nil {
		s.peers = &peers{c: opts.Cluster, waiting: map[string]chan peerMsg{}}
	}
	if err := s.restore(); err != nil {
		return nil, fmt.Errorf("server: restoring the state an earlier server left: %w", err)
	}
	if opts.Token != "" {
		sum := sha256.Sum256([]byte(opts.Token))
		s.keyHash = hex.EncodeToString(sum[:4])
	}
	if s.peers != nil {
		s.joinCluster()
		go s.watchCluster()
	}
	if opts.RunsDir != "" && opts.KeepRuns != (trajectory.Keep{}) {
		go s.pruneRuns()
	}
	return s, nil
}

// Handler serves the WebSocket endpoint /ws and the HTTP API under /api/.
func (s *Server) Handler() http.Handler {
	s.handlerOne.Do(func() {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /ws", s.serveWS)
		mux.HandleFunc("GET /api/health", s.health)
		mux.HandleFunc("POST /api/dispatch", s.authed(s.routeDevice(s.dispatch)))
		mux.HandleFunc("GET /api/clients", s.authed(s.clients))
		mux.HandleFunc("GET /api/clients/{id}/tools", s.authed(s.clientTools))
		mux.HandleFunc("GET /api/tasks", s.authed(s.listTasks))
		mux.HandleFunc("GET /api/tasks/{id}", s.authed(s.routeTask(s.getTask)))
		mux.HandleFunc("DELETE /api/tasks/{id}", s.authed(s.routeTask(s.cancelTask)))
		mux.HandleFunc("POST /api/tasks/{id}/commands/{call_id}/cancel", s.authed(s.routeTask(s.cancelCommand)))
		mux.HandleFunc("GET /api/tasks/{id}/pending", s.authed(s.routeTask(s.listPending)))
		mux.HandleFunc("POST /api/tasks/{id}/pending/{pid}", s.authed(s.routeTask(s.settlePending)))
		s.consoleRoutes(mux)
		s.handler = mux
	})
	return s.handler
}

// authorize checks the API key: 401 when none is given, 403 when it is
// wrong. It says nothing else, before any upgrade.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	return CheckKey(w, r, s.opts.Token)
}

// CheckKey checks a request's API key (?token= or X-API-Key) against
// token, when token is set: it answers 401 when none is given and 403
// when it is wrong, with a JSON error as the rest of the API, and
// returns false.
func CheckKey(w http.ResponseWriter, r *http.Request, token string) bool {
	if token == "" {
		return true
	}
	key := r.URL.Query().Get("token")
	if key == "" {
		key = r.Header.Get("X-API-Key")
	}
	switch {
	case key == "":
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing API key: send the server's key as the X-API-Key header (or ?token=)"})
		return false
	case subtle.ConstantTimeCompare([]byte(key), []byte(token)) != 1:
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "invalid API key: it is not the server's key (its --token, or SAUCER_TOKEN)"})
		return false
	}
	return true
}

// queuedBy names the caller of the HTTP API without revealing the key:
// the key's label, or its hash's start.
func (s *Server) queuedBy() string {
	switch {
	case s.opts.KeyLabel != "":
		return s.opts.KeyLabel
	case s.keyHash == "":
		return "api"
	}
	return "api-key:" + s.keyHash
}

// Shutdown stops the server: it refuses new connections and tasks, ends
// running tasks as failed with the reason (telling their devices), waits
// for them (bounded by ctx), and closes every connection. The HTTP
// listener itself is the caller's to close.
func (s *Server) Shutdown(ctx context.Context, reason string) error {
	if reason == "" {
		reason = "the server is shutting down"
	}
	running := s.closeToNew()
	cause := fmt.Errorf("%w: %s", ErrShuttingDown, reason)
	for _, t := range running {
		s.endTask(t, StatusFailed, cause)
	}
	s.releaseWaiting()
	return s.closeAll(ctx, cause)
}

// releaseWaiting ends, as the server stops (suspended: left running in
// the store; shut down: failed), the restored tasks still waiting for
// their device. They never started, so no goroutine of theirs would end
// them, and the stop would wait for AwayTimeout (whose end abandons
// nothing once the server is closing).
func (s *Server) releaseWaiting() {
	s.mu.Lock()
	var waiting []*task
	for _, d := range s.devices {
		waiting = append(waiting, d.resumes...)
		d.resumes = nil
	}
	s.mu.Unlock()
	for _, t := range waiting {
		s.endUnstarted(t)
	}
}

// endUnstarted ends a restored task that never started, so that no
// goroutine of its own will: as its state says (failed with its end
// cause, handed to another server, or left running by a stop).
func (s *Server) endUnstarted(t *task) {
	s.finish(t, nil, nil)
	s.taskWG.Done()
}

// closeToNew refuses new connections and tasks from now on, and returns
// the tasks still running.
func (s *Server) closeToNew() []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	var running []*task
	for _, t := range s.tasks {
		if !t.ended() {
			running = append(running, t)
		}
	}
	return running
}

// closeAll waits for the tasks (bounded by ctx), closes every connection
// and stops the server.
func (s *Server) closeAll(ctx context.Context, cause error) error {
	done := make(chan struct{})
	go func() { s.taskWG.Wait(); s.saveWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("server: tasks still running at shutdown: %w", context.Cause(ctx))
	}
	s.mu.Lock()
	var conns []*aip.Conn
	for _, d := range s.devices {
		if d.conn != nil {
			conns = append(conns, d.conn)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		go c.Close(1001, "server shutting down")
	}
	s.stop(cause)
	cdone := make(chan struct{})
	go func() { s.conns.Wait(); close(cdone) }()
	select {
	case <-cdone:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("server: connections still open at shutdown: %w", context.Cause(ctx))
		}
	}
	return err
}

// ErrSuspended is the cause of the tasks Suspend stops.
var ErrSuspended = errors.New("the server is stopping; the task resumes when it starts again on the same store")

// Suspend stops the server without ending its tasks, for a restart: it
// refuses new connections and tasks, stops the running tasks' agents
// between steps and leaves their records as running and their journals
// as they were, closes every connection (bounded by ctx), and returns.
// A server started on the same durable store resumes those tasks when
// their devices come back. With a memory store nothing would resume: use
// Shutdown.
func (s *Server) Suspend(ctx context.Context) error {
	running := s.closeToNew()
	for _, t := range running {
		s.flush(t) // what changed since its last round (the store's Close waits for it)
	}
	s.suspending.Store(true)
	for _, t := range running {
		t.cancel(ErrSuspended)
	}
	s.releaseWaiting()
	return s.closeAll(ctx, ErrSuspended)
}

func (s *Server) logf(format string, args ...any) { s.opts.Logf(format, args...) }
