// Package serve is Saucer's agent server as a library: the one entry
// point that `saucer serve` only wraps.
//
// Start opens the store (SQLite by default, PostgreSQL shared by several
// active servers, or memory), takes its lock or joins the servers that
// share it, builds each task's agents from the config through the one
// assembly (recorded and traced as the config says), resumes the tasks
// and constellations the store holds, and serves the AIP endpoint, the
// HTTP API and the console with the safe defaults: a header read timeout,
// an idle timeout for keep-alive connections and a header size limit, so
// that clients which open connections and send nothing cannot lock
// devices out. Stop, or the end of Wait's context, stops it all in order:
// constellations first (their graphs stay in the store), then tasks
// (suspended, to resume when a server starts again on the same store;
// with the memory store they end as failed), then HTTP, then the store.
//
// The package sits above server, constellation and console, on the
// command line's floor, though its folder is under server.
package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/internal/console"
	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/telemetry"
	"github.com/saucerhq/saucer/trajectory"
)

// The HTTP server's limits: a client has ReadHeaderTimeout to send its
// request's headers, at most MaxHeaderBytes of them, and an idle
// keep-alive connection is dropped after IdleTimeout.
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 60 * time.Second
	MaxHeaderBytes    = 1 << 20
	// StopTimeout bounds how long Stop waits for tasks and requests.
	StopTimeout = 30 * time.Second
)

// Options says how to serve. Only Token is required: the rest comes from
// Config (remote.*, record.*, constellation.*, telemetry.*).
type Options struct {
	// Config is the configuration; nil: config.Default().
	Config *config.Config
	// Token is the API key devices and API callers must present.
	Token string
	// Addr is where to listen (default: Config.Remote.Addr); port 0
	// picks a free one (Server.Addr says which).
	Addr string
	// TLSCert and TLSKey are PEM files: serve wss:// and https://
	// (default: Config.Remote's). Both or neither.
	TLSCert, TLSKey string
	// Store is where tasks and devices are kept: sqlite:PATH,
	// postgres://USER@HOST:PORT/DB or memory (default: Config.Remote.Store,
	// else sqlite:RunsDir/saucer-server.db).
	Store string
	// Standby, with an SQLite store, waits until the server that uses it
	// stops or dies, then takes over (Start's context ends the wait).
	Standby bool
	// ServerID names this server among those sharing a PostgreSQL store
	// (default: HOSTNAME-RANDOM).
	ServerID string
	// RunsDir is where tasks and constellations are recorded and where
	// the API finds recordings (default: Config.Record.Dir).
	RunsDir string
	// EvalsDir is an eval results directory, or a directory of them,
	// whose reports the API and console serve. Empty: none.
	EvalsDir string
	// NewSession builds each task's agents. Nil: from Config through the
	// one assembly (server.Sessions), recorded under RunsDir when
	// record.enabled. Either way each task is traced when
	// telemetry.otlp_endpoint is set.
	NewSession func(server.SessionSpec) (server.Runner, error)
	// Handler, when set, wraps the HTTP handler: add routes or
	// middleware around the API, the AIP endpoint and the console.
	Handler func(http.Handler) http.Handler
	// Logf says what the server does (a device registered, a task ended,
	// the stop); nil: the standard logger.
	Logf func(format string, args ...any)
}

// Server is a running agent server.
type Server struct {
	srv    *server.Server
	orch   *constellation.Orchestrator
	hs     *http.Server
	ln     net.Listener
	scheme string
	logf   func(string, ...any)

	memory    bool
	st        store.Store
	member    *store.Member
	lost      <-chan struct{}
	exporter  *telemetry.Exporter
	serveErr  chan error
	stop      chan struct{}
	stopOnce  sync.Once
	done      chan struct{}
	result    error
	closeOnce sync.Once
	// closeKnowledge releases the knowledge store the agents read.
	closeKnowledge func()
}

// Start starts a server as opts says. ctx bounds the start (opening the
// store, a standby's wait), not the server: Stop or Wait ends that.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	r := cfg.Remote
	if opts.Addr != "" {
		r.Addr = opts.Addr
	}
	if opts.TLSCert != "" || opts.TLSKey != "" {
		r.TLSCert, r.TLSKey = opts.TLSCert, opts.TLSKey
	}
	if (r.TLSCert == "") != (r.TLSKey == "") {
		return nil, errors.New("serve: a TLS certificate and its key go together: give both, or neither")
	}
	if opts.Token == "" {
		return nil, errors.New("serve: no API key: set Options.Token; devices and API callers present it")
	}
	if opts.Store != "" {
		r.Store = opts.Store
	}
	if err := config.CheckStore(r.Store); err != nil {
		return nil, fmt.Errorf("serve: store: %w", err)
	}
	runs := opts.RunsDir
	if runs == "" {
		runs = cfg.Record.Dir
	}
	if r.Store == "" {
		r.Store = "sqlite:" + filepath.Join(runs, "saucer-server.db")
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(format string, args ...any) { log.Printf("saucer: "+format, args...) }
	}
	red, err := trajectory.NewRedactor(cfg.Secrets(nil, nil), append(trajectory.DefaultPatterns(), cfg.Record.RedactPatterns...))
	if err != nil {
		return nil, fmt.Errorf("serve: redact: %w (check record.redact and record.redact_patterns)", err)
	}
	// The agents are given what `saucer learn` stored (knowledge.use);
	// the store is the server's, one for all its tasks.
	// With knowledge.learn, each task is learned as its recording ends.
	known, err := knowledge.FromConfig(ctx, cfg, "", logLines(logf))
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	sessions := opts.NewSession
	if sessions == nil {
		if sessions, err = sessionsFrom(cfg, runs, red, known, logf); err != nil {
			known.Close()
			return nil, err
		}
	}
	s := &Server{logf: logf, memory: r.Store == "memory", serveErr: make(chan error, 1), stop: make(chan struct{}), done: make(chan struct{}),
		closeKnowledge: known.Close}
	defer func() {
		if err != nil {
			s.close() // what was opened, in reverse
		}
	}()
	if cfg.Telemetry.OTLPEndpoint != "" {
		// Each task is traced: a session span per task id.
		s.exporter, err = telemetry.NewExporter(ctx, telemetry.Options{Endpoint: cfg.Telemetry.OTLPEndpoint, Headers: cfg.Telemetry.Headers, Model: cfg.Model, Redact: red.String})
		if err != nil {
			return nil, err
		}
		sessions = server.TraceTo(s.exporter, cfg.Model, sessions)
	}
	if err := s.openStore(ctx, r.Store, opts); err != nil {
		return nil, err
	}
	var cluster server.Cluster
	if s.member != nil {
		cluster, s.lost = s.member, s.member.Lost()
	}
	s.srv, err = server.New(server.Options{Token: opts.Token, NewSession: sessions, Store: s.st, Cluster: cluster, Logf: logf,
		Conn:     aip.ConnOptions{ReadLimit: r.ReadLimit, PingInterval: r.PingInterval.D(), DeadAfter: r.DeadAfter.D()},
		Redactor: red, Review: Review(red), RunsDir: runs, EvalsDir: opts.EvalsDir,
		KeepRuns:       trajectory.Keep{Age: cfg.Record.Keep.Age.D(), Size: int64(cfg.Record.Keep.Size)},
		CommandTimeout: cfg.Agent.CommandTimeout.D(), AwayTimeout: r.AwayTimeout.D(), AskTimeout: r.AskTimeout.D(), CommandTTL: r.CommandTTL.D(),
		MaxTasks: r.MaxTasks, MaxTasksPerDevice: r.MaxTasksPerDevice, MaxDevices: r.MaxDevices, DeviceAgents: r.DeviceAgents,
		KeyLabel: r.KeyLabel})
	if err != nil {
		return nil, err
	}
	if s.orch, err = constellations(cfg, s.srv, s.st, runs, logf); err != nil {
		return nil, fmt.Errorf("serve: constellations: %w", err)
	}
	if ids, err := s.orch.Resume(ctx); err != nil {
		return nil, fmt.Errorf("serve: resuming the constellations the store holds: %w", err)
	} else if len(ids) > 0 {
		logf("%d constellation(s) resume: %s", len(ids), strings.Join(ids, ", "))
	}
	if s.ln, err = net.Listen("tcp", r.Addr); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	var h http.Handler = console.Handler(constellation.ServerHandler(s.orch, s.srv, s.srv.Handler()))
	if opts.Handler != nil {
		h = opts.Handler(h)
	}
	// Idle keep-alive connections are dropped: an unauthenticated client
	// that opens many and sends nothing must not lock devices out.
	s.hs = &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: MaxHeaderBytes}
	s.scheme = "ws"
	if r.TLSCert != "" {
		s.scheme = "wss"
		go func() { s.serveErr <- s.hs.ServeTLS(s.ln, r.TLSCert, r.TLSKey) }()
	} else {
		go func() { s.serveErr <- s.hs.Serve(s.ln) }()
	}
	return s, nil
}

// openStore opens the store and makes this server its user: the one
// that holds an SQLite store's lock, or one of the active servers on a
// PostgreSQL store.
func (s *Server) openStore(ctx context.Context, spec string, opts Options) error {
	st, err := store.Open(ctx, spec)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.st = st
	if kind, _, _ := store.Parse(spec); kind == "postgres" {
		// Every server on PostgreSQL is active: it joins the others.
		if opts.Standby {
			return errors.New("serve: standby is for an SQLite store; servers sharing PostgreSQL are all active (start it without standby)")
		}
		id := opts.ServerID
		if id == "" {
			id = defaultServerID()
		}
		if s.member, err = st.(*store.SQL).Join(ctx, id); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		s.logf("server %s, one of those sharing %s", id, store.Redact(spec))
		return nil
	}
	sq, ok := st.(*store.SQL)
	if !ok {
		return nil // memory
	}
	lock := sq.Lock
	if opts.Standby {
		s.logf("standby: waiting for the server that uses the store to stop")
		lock = sq.LockWait
	}
	if err := lock(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Server is the agent server itself: its devices, tasks and API.
func (s *Server) Server() *server.Server { return s.srv }

// Addr is the address it listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is where devices connect: ws://HOST:PORT/ws (wss:// with TLS).
func (s *Server) URL() string { return s.scheme + "://" + s.ln.Addr().String() + "/ws" }

// ConsoleURL is the web console's address (log in with the API key); the
// HTTP API is under it, at /api/.
func (s *Server) ConsoleURL() string {
	return strings.Replace(s.scheme, "ws", "http", 1) + "://" + s.ln.Addr().String() + "/"
}

// Wait serves until ctx ends or Stop is called, then stops the server in
// order and returns how the stop went. It also returns, after stopping,
// when the HTTP server fails, and when a server sharing a PostgreSQL
// store loses its membership: the others then take its devices and
// tasks, so it must not run them too.
func (s *Server) Wait(ctx context.Context) error {
	var lostErr error
	select {
	case err := <-s.serveErr:
		lostErr = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-s.stop:
	case <-s.lost:
		lostErr = fmt.Errorf("serve: %w; stopped so that the other servers take its devices and tasks (start it again)", s.member.Err())
		s.logf("%v", lostErr)
	}
	s.stopOnce.Do(func() {
		s.result = s.shutdown()
		if lostErr != nil {
			s.result = lostErr
		}
		close(s.done)
	})
	<-s.done
	return s.result
}

// Stop stops the server in order (see the package's doc) and returns how
// that went; it waits for a Wait under way to do it.
func (s *Server) Stop() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	return s.Wait(context.Background())
}

func (s *Server) shutdown() error {
	sctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	// Constellations stop first, without ending: their graphs stay in
	// the store, and their nodes' tasks with the server's.
	s.orch.Stop()
	var err error
	if s.memory {
		s.logf("stopping; running tasks end as failed (the memory store keeps nothing)")
		err = s.srv.Shutdown(sctx, "the server was stopped")
	} else {
		s.logf("stopping; running tasks resume when it starts again on the same store")
		err = s.srv.Suspend(sctx)
	}
	s.hs.Shutdown(sctx)
	s.close()
	return err
}

// close releases what Start opened, in reverse order: the cluster
// membership, the store, the trace exporter.
func (s *Server) close() {
	s.closeOnce.Do(func() {
		if s.orch != nil && s.hs == nil {
			s.orch.Stop() // Start failed after making it
		}
		if s.srv != nil && s.hs == nil {
			sctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
			s.srv.Suspend(sctx)
			cancel()
		}
		if s.member != nil {
			s.member.Close()
		}
		if s.st != nil {
			// Writes it held because its disk was full, and could not
			// store at the end, are counted here.
			if err := s.st.Close(); err != nil {
				s.logf("%v", err)
			}
		}
		if s.exporter != nil {
			flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.exporter.Shutdown(flush); err != nil {
				s.logf("warning: traces were not all sent: %v", err)
			}
		}
		if s.closeKnowledge != nil {
			s.closeKnowledge()
		}
	})
}

// logLines is logf as a writer, a line a log entry.
type logLines func(format string, args ...any)

func (l logLines) Write(p []byte) (int, error) {
	l("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// sessionsFrom builds each task's agents from the config through the one
// assembly, with the server's dispatcher for the task's device, and
// records each task under runs when the config says so.
func sessionsFrom(cfg *config.Config, runs string, red *trajectory.Redactor, known *knowledge.Use, logf func(string, ...any)) (func(server.SessionSpec) (server.Runner, error), error) {
	set, err := session.Prompts(cfg.Prompts)
	if err != nil {
		return nil, err
	}
	if _, err := session.OpenModel(cfg); err != nil {
		return nil, err // a missing key is better said at start than at the first task
	}
	if err := session.CheckBudget(cfg, cfg.PriceTable()); err != nil {
		return nil, err // and so is a budget that could not be enforced
	}
	sessions := server.Sessions(cfg, session.Options{Prompts: set, Retriever: known.Retriever})
	if !cfg.Record.Enabled {
		return sessions, nil
	}
	// Every task is recorded, as a local run is: runs/<task id>/ (the
	// server prunes them: record.keep).
	learned := func(ctx context.Context, runDir string) {
		if n, err := known.Learned(ctx, runDir); err != nil {
			logf("warning: task %s was not learned: %v", filepath.Base(runDir), err)
		} else if n > 0 {
			logf("learned %d entries from task %s (knowledge.learn)", n, filepath.Base(runDir))
		}
	}
	return server.RecordToThen(runs, cfg, trajectory.Options{Redactor: red, ArtifactThreshold: cfg.Record.ArtifactThreshold}, sessions, learned), nil
}

// defaultServerID names a server by its host and a random suffix: unique
// among the servers of a store, and readable in logs.
func defaultServerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "saucer"
	}
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x", host, b)
}
