package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/sandbox"
	"github.com/saucerhq/saucer/session"
)

func init() { commands = append(commands, newDoctorCmd) }

// newDoctorCmd checks the config, the provider, every MCP server and,
// when a desktop server is in use, the display, session bus, AT-SPI bus
// and desktop applications' commands, and says how to fix what is wrong. It exits 1 when something is.
func newDoctorCmd(g *globalFlags) *cobra.Command {
	var workdir, app string
	var skipProvider, ping bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the config, the model provider, every configured MCP server and the desktop they drive",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			ok := true
			report := func(good bool, what, detail, fix string) {
				mark := "ok  "
				if !good {
					mark, ok = "FAIL", false
				}
				fmt.Fprintf(out, "%s %s: %s\n", mark, what, detail)
				if !good && fix != "" {
					fmt.Fprintf(out, "     fix: %s\n", fix)
				}
			}
			cfg, err := g.load()
			if err == nil {
				err = session.Check(cfg, workdir, app)
			}
			if err != nil {
				report(false, "config", err.Error(), "edit the key named above (saucer config prints the effective config)")
				return exitError{1}
			}
			report(true, "config", fmt.Sprintf("loaded (%s)", configName(g.config)), "")
			if skipProvider {
				fmt.Fprintf(out, "skip provider: --skip-provider\n")
			} else if m, err := session.OpenModel(cfg); err != nil {
				report(false, "provider", err.Error(), "set the variable or key named above, or pick another --model")
			} else if !ping {
				report(true, "provider", cfg.Model+" is configured (no request was sent; --ping sends one)", "")
			} else {
				// The smallest real request: does the model answer, and how fast?
				start := time.Now()
				resp, err := m.Complete(cmd.Context(), &llm.Request{Messages: []llm.Message{llm.User("Reply with the single word: pong")}, MaxTokens: 16})
				took := time.Since(start).Round(time.Millisecond)
				if err != nil {
					report(false, "provider", fmt.Sprintf("%s did not answer (after %s): %v", cfg.Model, took, err), "check the key, the base URL and the model name; see the error above")
				} else {
					report(true, "provider", fmt.Sprintf("%s answered in %s (%d+%d tokens): %s", cfg.Model, took,
						resp.Usage.PromptTokens, resp.Usage.CompletionTokens, oneLine(resp.Message.Content, 40)), "")
				}
			}
			// The sandboxed device: a FAIL only when the config asks for it.
			// Kept for the desktop checks, which look inside it when the
			// device is the sandbox.
			var inside *sandbox.Sandbox
			if sb, err := local.StartSandbox(cmd.Context(), cfg, workdir); err != nil {
				if cfg.Device == config.DeviceSandbox {
					report(false, "sandbox", err.Error(), "install what is named above, run as root, or set device: local")
				} else {
					fmt.Fprintf(out, "info sandbox: not available here (device: local is in use): %v\n", oneLine(err.Error(), 200))
				}
			} else {
				report(true, "sandbox", "available ("+sb.Limits()+")", "")
				defer sb.Close()
				if cfg.Device == config.DeviceSandbox {
					inside = sb
				}
			}
			if cfg.Tools.Shell.Enabled && cfg.Device != config.DeviceSandbox {
				// How a command's timeout reaches what it started, on this machine.
				fmt.Fprintf(out, "info shell: %s\n", shell.TimeoutKill())
			}
			// The desktop servers' display, buses and applications: a
			// desktop server starts without them and fails only when used.
			if found, err := local.DesktopChecks(cmd.Context(), cfg, workdir, app, inside); err == nil {
				for _, f := range found {
					report(f.OK, "desktop "+f.What, f.Detail, f.Fix)
				}
			}
			servers, err := local.Servers(cfg, workdir, app)
			if err != nil {
				report(false, "mcp", err.Error(), "fix mcp.use, mcp.apps or mcp.servers")
				return exitError{1}
			}
			opts := local.ClientOptions(cfg)
			opts.PingInterval = -1
			opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // the report says it all
			start := time.Now()
			dev, err := client.New(cmd.Context(), servers, opts)
			if err != nil {
				report(false, "mcp", err.Error(), "")
				return exitError{1}
			}
			defer dev.Close()
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, st := range dev.Status() {
				if st.State == client.StateReady {
					fmt.Fprintf(w, "ok  \tserver %s (%s)\t%d tools\tstarted in %s\n", st.Namespace, st.Kind, st.Tools, st.StartDuration.Round(time.Millisecond))
					continue
				}
				ok = false
				fmt.Fprintf(w, "FAIL\tserver %s (%s)\t%s\n", st.Namespace, st.Kind, st.Error)
				fmt.Fprintf(w, "    \t  fix: %s\n", serverFix(st.Error))
			}
			w.Flush()
			fmt.Fprintf(out, "checked %d MCP servers in %s\n", len(servers), time.Since(start).Round(time.Millisecond))
			if !ok {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&workdir, "workdir", "C", ".", "working directory for the shell, the files root and stdio servers")
	cmd.Flags().StringVar(&app, "app", "", "check the server set of this app (mcp.apps) instead of mcp.use")
	cmd.Flags().BoolVar(&skipProvider, "skip-provider", false, "do not check the model provider")
	cmd.Flags().BoolVar(&ping, "ping", false, "send the model the smallest real request and report its latency or error")
	return cmd
}

func configName(file string) string {
	if file == "" {
		return "built-in defaults"
	}
	return file
}

// serverFix suggests what to do about a server that did not start.
func serverFix(err string) string {
	switch {
	case strings.Contains(err, "cannot start"):
		return "install the server or correct mcp.servers.NAME.command (it must be on PATH or an absolute path)"
	case strings.Contains(err, "exited while starting"):
		return "run its command by hand to see why it stops; its stderr is quoted above"
	case strings.Contains(err, "non-JSON"):
		return "the server prints to stdout, which must carry only JSON-RPC; make it log to stderr"
	case strings.Contains(err, "did not finish starting"):
		return "raise mcp.servers.NAME.init_timeout (npx may be installing it), or check that it speaks MCP over stdio"
	case strings.Contains(err, "http server"):
		return "check mcp.servers.NAME.url and that the server is running"
	}
	return "see the error above"
}
