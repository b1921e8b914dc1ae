package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/tools"
)

func init() { commands = append(commands, newMCPCmd) }

// newMCPCmd serves Saucer's own tools to other MCP hosts.
func newMCPCmd(g *globalFlags) *cobra.Command {
	var workdir, addr string
	cmd := &cobra.Command{
		Use:   "mcp shell|files|desktop",
		Short: "Serve Saucer's shell, files or desktop tools as an MCP server (stdio, or streamable HTTP with --http)",
		Long: "Serve one of Saucer's own MCP servers to any MCP host, over stdio (the default) or over streamable HTTP\n" +
			"at http://ADDR/mcp with --http ADDR. The tools' settings and the shell policy come from the config.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"shell", "files", "desktop"},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load()
			if err != nil {
				return err
			}
			if !slices.Contains(config.BuiltinServers, args[0]) {
				return fmt.Errorf("unknown server %q: saucer mcp serves shell, files or desktop", args[0])
			}
			srv, stopServer, err := local.Builtin(cfg, workdir, args[0])
			if err != nil {
				return err
			}
			defer stopServer()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if addr == "" {
				return serveStdio(ctx, srv, cmd)
			}
			return serveHTTP(ctx, srv, addr, cmd)
		},
	}
	cmd.Flags().StringVarP(&workdir, "workdir", "C", ".", "working directory for the shell and the files root")
	cmd.Flags().StringVar(&addr, "http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8931) instead of stdio")
	return cmd
}

// stopGrace is how long a stopped server gives the calls in flight to end.
const stopGrace = 2 * time.Second

// serveStdio serves over stdin and stdout until stdin ends or ctx is
// cancelled (SIGTERM, Ctrl-C). mcp-go's Listen waits for every call in
// flight, and a call can be stuck in the kernel where no context reaches
// it (opening a FIFO, writing a reply to a client that stopped reading):
// once stopped, the server waits stopGrace for them, then leaves them.
func serveStdio(ctx context.Context, srv *tools.Server, cmd *cobra.Command) error {
	done := make(chan error, 1)
	go func() {
		// stdout carries the protocol: nothing else may be written there.
		done <- mcpserve.Stdio(ctx, srv, cmd.InOrStdin(), cmd.OutOrStdout())
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(stopGrace):
			fmt.Fprintf(cmd.ErrOrStderr(), "saucer mcp: stopped with a call still running after %s; leaving it\n", stopGrace)
			return nil
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func serveHTTP(ctx context.Context, srv *tools.Server, addr string, cmd *cobra.Command) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", sameOrigin(mcpserve.HTTP(srv)))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errs := make(chan error, 1)
	go func() { errs <- hs.Serve(ln) }()
	fmt.Fprintf(cmd.ErrOrStderr(), "saucer mcp: serving at http://%s/mcp (Ctrl-C stops)\n", ln.Addr())
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		// Listening streams never end on their own: give requests a moment,
		// then close what is left.
		shutdown, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		if err := hs.Shutdown(shutdown); err != nil {
			hs.Close()
		}
		return nil
	}
}

// sameOrigin refuses requests that a web page of another origin sends (the
// MCP specification asks servers to check Origin, against DNS rebinding):
// a request without Origin (not from a browser) or from a loopback origin
// passes; any other is refused with 403.
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, "forbidden: requests from origin "+o+" are refused (only local clients may call this server)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
