package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/console"
	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

func init() { commands = append(commands, newServeCmd) }

type remoteFlags struct {
	addr, token, tlsCert, tlsKey string
	server, id, caCert           string
	store, journal               string
	standby                      bool
	serverID                     string
	request, taskName, workdir   string
	app                          string
	evals                        string
	connectWait                  time.Duration
	sandbox                      bool
}

// tokenFrom is the flag's value, else SAUCER_TOKEN.
func tokenFrom(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("SAUCER_TOKEN")
}

func newServeCmd(g *globalFlags) *cobra.Command {
	f := &remoteFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the agent server: devices connect over AIP, tasks come from its HTTP API",
		Long: "Run the agent server. Devices (`saucer client`, or UFO's device client) connect to ws://ADDR/ws with the " +
			"API key; the host and app agents run here and send each command to the device. HTTP API (same key, as " +
			"X-API-Key or ?token=): POST /api/dispatch {client_id, request, task_name}, GET /api/clients, " +
			"GET /api/tasks/{id}, DELETE /api/tasks/{id}, GET /api/health; constellations: POST /api/constellations {request}, " +
			"GET /api/constellations[/{id}[/events]], DELETE /api/constellations/{id}. Ctrl-C stops; running tasks resume when it starts again on the same --store (with --store memory they end as failed).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, g, f) },
	}
	cmd.Flags().StringVar(&f.addr, "addr", "", "listen address (default from config: 127.0.0.1:5000)")
	cmd.Flags().StringVar(&f.token, "token", "", "API key devices and API callers must present (default: $SAUCER_TOKEN)")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate: serve wss:// and https:// (with --tls-key)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	cmd.Flags().BoolVar(&f.standby, "standby", false, "with an SQLite --store: wait until the server using it stops or dies, then take over (on PostgreSQL every server is active: no standby needed)")
	cmd.Flags().StringVar(&f.serverID, "server-id", "", "this server's name among those sharing a PostgreSQL --store (default: HOSTNAME-RANDOM)")
	cmd.Flags().StringVar(&f.evals, "evals", "", "an eval results directory (saucer eval -o DIR), or a directory of them, whose reports the console and GET /api/evals serve")
	cmd.Flags().StringVar(&f.store, "store", "", "where tasks and devices are kept: sqlite:PATH, postgres://USER@HOST:PORT/DB or memory (default from config: sqlite:RUNS/saucer-server.db)")
	return cmd
}

// sessionsFrom builds each task's agents from the config through the one
// assembly, with the server's dispatcher for the task's device.
func sessionsFrom(cfg *config.Config) (func(server.SessionSpec) (server.Runner, error), error) {
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
	sessions := server.Sessions(cfg, session.Options{Prompts: set})
	if !cfg.Record.Enabled {
		return sessions, nil
	}
	// Every task is recorded, as a local run is: runs/<task id>/ (the
	// server prunes them: Options.KeepRuns).
	red, err := redactorFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("record: %w (check record.redact and record.redact_patterns)", err)
	}
	return server.RecordTo(runsDir(cfg, ""), cfg, trajectory.Options{Redactor: red, ArtifactThreshold: cfg.Record.ArtifactThreshold}, sessions), nil
}

func connOptions(r config.Remote) aip.ConnOptions {
	return aip.ConnOptions{ReadLimit: r.ReadLimit, PingInterval: r.PingInterval.D(), DeadAfter: r.DeadAfter.D()}
}

func serve(cmd *cobra.Command, g *globalFlags, f *remoteFlags) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	r := cfg.Remote
	if f.addr != "" {
		r.Addr = f.addr
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		r.TLSCert, r.TLSKey = f.tlsCert, f.tlsKey
	}
	if (r.TLSCert == "") != (r.TLSKey == "") {
		return errors.New("serve: give both --tls-cert and --tls-key, or neither")
	}
	token := tokenFrom(f.token)
	if token == "" {
		return errors.New("serve: no API key: give one with --token or SAUCER_TOKEN; devices and API callers present it")
	}
	sessions, err := sessionsFrom(cfg)
	if err != nil {
		return err
	}
	if x, err := exporterFor(cmd.Context(), cfg); err != nil {
		return err
	} else if x != nil {
		// Each task is traced: a session span per task id.
		sessions = server.TraceTo(x, cfg.Model, sessions)
		defer func() {
			flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := x.Shutdown(flush); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "saucer serve: warning: traces were not all sent: %v\n", err)
			}
		}()
	}
	if f.store != "" {
		r.Store = f.store
	}
	if err := config.CheckStore(r.Store); err != nil {
		return fmt.Errorf("serve: --store: %w", err)
	}
	if r.Store == "" {
		r.Store = "sqlite:" + filepath.Join(runsDir(cfg, ""), "saucer-server.db")
	}
	st, err := store.Open(cmd.Context(), r.Store)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer func() {
		// Writes it held because its disk was full, and could not store
		// at the end, are counted here.
		if err := st.Close(); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "saucer serve:", err)
		}
	}()
	var member *store.Member
	if kind, _, _ := store.Parse(r.Store); kind == "postgres" {
		// Every server on PostgreSQL is active: it joins the others.
		if f.standby {
			return fmt.Errorf("serve: --standby is for an SQLite store; servers sharing PostgreSQL are all active (start it without --standby)")
		}
		id := f.serverID
		if id == "" {
			id = defaultServerID()
		}
		member, err = st.(*store.SQL).Join(cmd.Context(), id)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer member.Close()
		fmt.Fprintf(cmd.ErrOrStderr(), "saucer serve: server %s, one of those sharing %s\n", id, store.Redact(r.Store))
	} else if sq, ok := st.(*store.SQL); ok {
		lock := sq.Lock
		if f.standby {
			fmt.Fprintln(cmd.ErrOrStderr(), "saucer serve: standby: waiting for the server that uses the store to stop")
			lock = sq.LockWait
		}
		sigCtx, stopSig := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		err := lock(sigCtx)
		stopSig()
		if err != nil {
			if f.standby && sigCtx.Err() != nil {
				return nil // stopped while it waited
			}
			return fmt.Errorf("serve: %w", err)
		}
	}
	out := cmd.ErrOrStderr()
	var cluster server.Cluster
	var lost <-chan struct{}
	if member != nil {
		cluster, lost = member, member.Lost()
	}
	red, err := redactorFor(cfg)
	if err != nil {
		return fmt.Errorf("redact: %w (check record.redact and record.redact_patterns)", err)
	}
	srv, err := server.New(server.Options{Token: token, NewSession: sessions, Conn: connOptions(r), Store: st, Cluster: cluster,
		Redactor: red, RunsDir: runsDir(cfg, ""), EvalsDir: f.evals,
		KeepRuns:       keepOf(cfg),
		CommandTimeout: cfg.Agent.CommandTimeout.D(), AwayTimeout: r.AwayTimeout.D(), AskTimeout: r.AskTimeout.D(), CommandTTL: r.CommandTTL.D(),
		MaxTasks: r.MaxTasks, MaxTasksPerDevice: r.MaxTasksPerDevice, MaxDevices: r.MaxDevices, DeviceAgents: r.DeviceAgents,
		Logf: func(format string, args ...any) { fmt.Fprintf(out, "saucer serve: "+format+"\n", args...) }})
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(out, "saucer serve: "+format+"\n", args...) }
	orch, err := constellationsFor(cfg, srv, st, logf)
	if err != nil {
		return fmt.Errorf("serve: constellations: %w", err)
	}
	if ids, err := orch.Resume(cmd.Context()); err != nil {
		return fmt.Errorf("serve: resuming the constellations the store holds: %w", err)
	} else if len(ids) > 0 {
		logf("%d constellation(s) resume: %s", len(ids), strings.Join(ids, ", "))
	}
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// Idle keep-alive connections are dropped: an unauthenticated client
	// that opens many and sends nothing must not lock devices out.
	hs := &http.Server{Handler: console.Handler(constellation.ServerHandler(orch, srv, srv.Handler())), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 1 << 20}
	scheme := "ws"
	serveErr := make(chan error, 1)
	if r.TLSCert != "" {
		scheme = "wss"
		go func() { serveErr <- hs.ServeTLS(ln, r.TLSCert, r.TLSKey) }()
	} else {
		go func() { serveErr <- hs.Serve(ln) }()
	}
	fmt.Fprintf(cmd.OutOrStdout(), "saucer serve: %s (%s mode) on %s://%s/ws\n", cfg.Model, cfg.ModeFor(cfg.Model), scheme, ln.Addr())
	fmt.Fprintf(cmd.OutOrStdout(), "saucer serve: console at %s://%s/ (log in with the server's key)\n", strings.Replace(scheme, "ws", "http", 1), ln.Addr())

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var lostErr error
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-lost:
		// The others see this server dead and take its devices and
		// tasks: it must stop them now, not run them twice.
		lostErr = fmt.Errorf("serve: %w; stopped so that the other servers take its devices and tasks (start it again)", member.Err())
		fmt.Fprintln(cmd.ErrOrStderr(), "saucer serve:", lostErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Constellations stop first, without ending: their graphs stay in
	// the store, and their nodes' tasks with the server's.
	orch.Stop()
	if r.Store == "memory" {
		fmt.Fprintln(out, "saucer serve: stopping; running tasks end as failed (the memory store keeps nothing)")
		err = srv.Shutdown(sctx, "the server was stopped")
	} else {
		fmt.Fprintln(out, "saucer serve: stopping; running tasks resume when it starts again on the same store")
		err = srv.Suspend(sctx)
	}
	hs.Shutdown(sctx)
	if lostErr != nil {
		return lostErr
	}
	return err
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
