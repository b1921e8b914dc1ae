package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

func init() { commands = append(commands, newServeCmd) }

type remoteFlags struct {
	addr, token, tlsCert, tlsKey string
	server, id, caCert           string
	request, taskName, workdir   string
	app                          string
	connectWait                  time.Duration
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
			"GET /api/tasks/{id}, DELETE /api/tasks/{id}, GET /api/health. Ctrl-C ends running tasks as failed and stops.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, g, f) },
	}
	cmd.Flags().StringVar(&f.addr, "addr", "", "listen address (default from config: 127.0.0.1:5000)")
	cmd.Flags().StringVar(&f.token, "token", "", "API key devices and API callers must present (default: $SAUCER_TOKEN)")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate: serve wss:// and https:// (with --tls-key)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
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
	sessions := server.Sessions(cfg, session.Options{Prompts: set, Cost: pricesFor(cfg).Cost})
	if !cfg.Record.Enabled {
		return sessions, nil
	}
	// Every task is recorded, as a local run is: runs/<task id>/.
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
	out := cmd.ErrOrStderr()
	srv, err := server.New(server.Options{Token: token, NewSession: sessions, Conn: connOptions(r),
		CommandTimeout: cfg.Agent.CommandTimeout.D(), AwayTimeout: r.AwayTimeout.D(), AskTimeout: r.AskTimeout.D(), CommandTTL: r.CommandTTL.D(),
		MaxTasks: r.MaxTasks, MaxTasksPerDevice: r.MaxTasksPerDevice, MaxDevices: r.MaxDevices,
		Logf: func(format string, args ...any) { fmt.Fprintf(out, "saucer serve: "+format+"\n", args...) }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// Idle keep-alive connections are dropped: an unauthenticated client
	// that opens many and sends nothing must not lock devices out.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 1 << 20}
	scheme := "ws"
	serveErr := make(chan error, 1)
	if r.TLSCert != "" {
		scheme = "wss"
		go func() { serveErr <- hs.ServeTLS(ln, r.TLSCert, r.TLSKey) }()
	} else {
		go func() { serveErr <- hs.Serve(ln) }()
	}
	fmt.Fprintf(cmd.OutOrStdout(), "saucer serve: %s (%s mode) on %s://%s/ws\n", cfg.Model, cfg.ModeFor(cfg.Model), scheme, ln.Addr())

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "saucer serve: stopping; running tasks end as failed")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx, "the server was stopped")
	hs.Shutdown(sctx)
	return err
}
