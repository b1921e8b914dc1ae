package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/server/serve"
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
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, g, f) },
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

// runServe is saucer serve: flags to serve.Options, and the server runs
// until Ctrl-C or SIGTERM.
func runServe(cmd *cobra.Command, g *globalFlags, f *remoteFlags) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("serve: give both --tls-cert and --tls-key, or neither")
	}
	token := tokenFrom(f.token)
	if token == "" {
		return errors.New("serve: no API key: give one with --token or SAUCER_TOKEN; devices and API callers present it")
	}
	if err := config.CheckStore(f.store); err != nil {
		return fmt.Errorf("serve: --store: %w", err)
	}
	out := cmd.ErrOrStderr()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := serve.Start(ctx, serve.Options{Config: cfg, Token: token, Addr: f.addr, TLSCert: f.tlsCert, TLSKey: f.tlsKey,
		Store: f.store, Standby: f.standby, ServerID: f.serverID, RunsDir: runsDir(cfg, ""), EvalsDir: f.evals,
		Logf: func(format string, args ...any) { fmt.Fprintf(out, "saucer serve: "+format+"\n", args...) }})
	if err != nil {
		if f.standby && ctx.Err() != nil {
			return nil // stopped while it waited
		}
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "saucer serve: %s (%s mode) on %s\n", cfg.Model, cfg.ModeFor(cfg.Model), srv.URL())
	fmt.Fprintf(cmd.OutOrStdout(), "saucer serve: console at %s (log in with the server's key)\n", srv.ConsoleURL())
	return srv.Wait(ctx)
}
