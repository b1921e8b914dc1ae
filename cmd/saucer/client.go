package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/local"
)

func init() { commands = append(commands, newClientCmd) }

func newClientCmd(g *globalFlags) *cobra.Command {
	f := &remoteFlags{}
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Connect this device to an agent server and run the commands it sends",
		Long: "Connect this device to an agent server (`saucer serve`, or a UFO server) over AIP: register with the device's " +
			"info, run its tools (the same MCP servers and config as local mode) for the commands the server's agents " +
			"send, and reconnect with backoff when the connection drops. With --request, ask the server to run that " +
			"task on this device and exit when it ends (0 completed, 1 failed).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClient(cmd, g, f) },
	}
	cmd.Flags().StringVar(&f.server, "server", "", "server WebSocket URL (default from config: ws://127.0.0.1:5000/ws); several, comma-separated, are tried in turn")
	cmd.Flags().StringVar(&f.token, "token", "", "the server's API key (default: $SAUCER_TOKEN): sent as the X-API-Key header, and also as ?token= to a server that takes it only there (UFO's)")
	cmd.Flags().StringVar(&f.id, "id", "", "this device's id on the server (default: the host name)")
	cmd.Flags().StringVar(&f.caCert, "ca-cert", "", "PEM file of the CA to trust for wss:// (default: the system's)")
	cmd.Flags().StringVar(&f.request, "request", "", "ask the server to run this task on this device, then exit")
	cmd.Flags().StringVar(&f.taskName, "task-name", "task", "name of the --request task")
	cmd.Flags().DurationVar(&f.connectWait, "connect-wait", 30*time.Second, "with --request: give up when the server cannot be reached for this long, at the start or while the task runs")
	cmd.Flags().StringVarP(&f.workdir, "workdir", "C", ".", "working directory for the shell and the files root")
	cmd.Flags().BoolVar(&f.sandbox, "sandbox", false, "run the tools in a throwaway sandbox (device: sandbox; see docs/sandbox.md)")
	cmd.Flags().StringVar(&f.app, "app", "", "start the MCP server set named under mcp.apps in the config (default: mcp.use)")
	cmd.Flags().StringVar(&f.journal, "journal", "", "file noting each command before and after it runs, so that after a crash an interrupted command is reported, not run again (default: USER_CACHE_DIR/saucer/client-ID.journal; \"off\": none)")
	return cmd
}

// awayTooLong reports once the client has been disconnected for longer
// than limit at a stretch.
func awayTooLong(ctx context.Context, rc *remote.Client, limit time.Duration) <-chan time.Duration {
	lost := make(chan time.Duration, 1)
	go func() {
		tick := time.NewTicker(min(limit/4, 250*time.Millisecond))
		defer tick.Stop()
		var since time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case <-rc.Connected():
				since = time.Time{}
			default:
				if since.IsZero() {
					since = time.Now()
				} else if away := time.Since(since); away > limit {
					lost <- away
					return
				}
			}
		}
	}()
	return lost
}

// journalPath is the client's command journal: the flag's file, none for
// "off", else one per device id in the user's cache directory.
func journalPath(flag, id string) (string, error) {
	switch flag {
	case "off":
		return "", nil
	case "":
	default:
		return flag, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("client: no place for the command journal (%v): give --journal PATH, or --journal off", err)
	}
	safe := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, id)
	return filepath.Join(dir, "saucer", "client-"+safe+".journal"), nil
}

// tlsConfig trusts the PEM CA file, or the system's roots when empty.
func tlsConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-cert: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func runClient(cmd *cobra.Command, g *globalFlags, f *remoteFlags) error {
	if cmd.Flags().Changed("request") && strings.TrimSpace(f.request) == "" {
		return errors.New("--request is empty: give the task for the server to run on this device, in words (or leave the flag out to serve the server's tasks)")
	}
	if err := checkBounds(cmd, positive("connect-wait", "give a positive duration such as 30s")); err != nil {
		return err
	}
	cfg, err := g.load()
	if err != nil {
		return err
	}
	if f.sandbox {
		cfg.Device = config.DeviceSandbox
	}
	r := cfg.Remote
	if f.server != "" {
		r.Server = f.server
	}
	if f.id != "" {
		r.ClientID = f.id
	}
	if f.caCert != "" {
		r.CACert = f.caCert
	}
	if r.ClientID == "" {
		if r.ClientID, err = os.Hostname(); err != nil || r.ClientID == "" {
			return errors.New("client: give this device an id with --id")
		}
	}
	tlsCfg, err := tlsConfig(r.CACert)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dev, err := local.DeviceFor(ctx, cfg, f.workdir, f.app)
	if err != nil {
		return err
	}
	defer dev.Close()
	errOut := cmd.ErrOrStderr()
	journal, err := journalPath(f.journal, r.ClientID)
	if err != nil {
		return err
	}
	rc, err := remote.New(dev, remote.Options{URL: r.Server, Token: tokenFrom(f.token), ClientID: r.ClientID, TLS: tlsCfg, Journal: journal,
		Conn:              aip.ConnOptions{ReadLimit: r.ReadLimit, PingInterval: r.PingInterval.D(), DeadAfter: r.DeadAfter.D()},
		HeartbeatInterval: r.Heartbeat.D(), MaxBackoff: r.MaxBackoff.D(), RegisterTimeout: r.RegisterTimeout.D(),
		Logf: func(format string, args ...any) { fmt.Fprintf(errOut, "saucer client: "+format+"\n", args...) }})
	if err != nil {
		return err
	}
	if f.request == "" {
		return rc.Run(ctx)
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- rc.Run(runCtx) }()
	defer func() { cancelRun(); <-runErr }()
	type ended struct {
		end *remote.TaskEnd
		err error
	}
	// A server that is down is not waited for forever.
	select {
	case <-rc.Connected():
	case err := <-runErr:
		runErr <- err
		if err != nil {
			return err
		}
		return exitError{130}
	case <-time.After(f.connectWait):
		return fmt.Errorf("client: could not reach the server at %s within %s (--connect-wait); is saucer serve running there?", aip.RedactURL(r.Server), f.connectWait)
	}
	res := make(chan ended, 1)
	go func() { e, err := rc.StartTask(runCtx, f.request, f.taskName); res <- ended{e, err} }()
	lost := awayTooLong(runCtx, rc, f.connectWait)
	var e ended
	select {
	case e = <-res:
	case away := <-lost:
		return fmt.Errorf("client: lost the server at %s for %s (--connect-wait) while the task ran; it may go on there when the server is back: "+
			"GET /api/tasks shows how it ends", aip.RedactURL(r.Server), away.Round(time.Second))
	case err := <-runErr:
		runErr <- err // for the deferred wait
		if err != nil {
			return err
		}
		return exitError{130}
	}
	if e.err != nil {
		if ctx.Err() != nil {
			return exitError{130}
		}
		return e.err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "task %s %s\n", e.end.SessionID, e.end.Status)
	if e.end.Error != "" {
		fmt.Fprintf(out, "error: %s\n", e.end.Error)
	}
	if len(e.end.Result) > 0 {
		fmt.Fprintf(out, "result: %s\n", e.end.Result)
	}
	if e.end.Status != aip.StatusCompleted {
		return exitError{1}
	}
	return nil
}
