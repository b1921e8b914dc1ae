package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/telemetry"
)

type runFlags struct {
	maxSteps, maxRounds int
	workdir             string
	app                 string
	directApp           string
	sandbox             bool
	yes                 bool
	quiet               bool
	noRecord            bool
	stream, noStream    bool
	runs                string
	console             string
	answerFormat        string
	knowledge           string
}

func newRunCmd(g *globalFlags) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run \"task\"",
		Short: "Run a task in plain language on this machine",
		Long: "Run a task: the host agent splits it into subtasks, app agents do them with the device's tools " +
			"(the shell and files MCP servers in local mode). Prints a line per step; exits 0 when the task " +
			"finished, 1 when it failed, 2 on bad usage or configuration, 3 when the recording could not be written, 4 when the budget was reached, 130 when interrupted (143 by SIGTERM).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := strings.Join(args, " ")
			if strings.TrimSpace(task) == "" {
				return errors.New(`the task is empty: say what to do, e.g. saucer run "list the files in this folder"`)
			}
			f.answerFormat = strings.TrimSpace(f.answerFormat)
			if cmd.Flags().Changed("answer-format") && f.answerFormat == "" {
				return errors.New(`--answer-format is blank: give the rule in words, e.g. --answer-format "a single integer, digits only", or leave the flag out`)
			}
			return runTask(cmd, g, f, task)
		},
	}
	cmd.Flags().IntVar(&f.maxSteps, "max-steps", 0, "steps per app agent (default from config: 20)")
	cmd.Flags().IntVar(&f.maxRounds, "max-rounds", 0, "host agent rounds (default from config: 10)")
	cmd.Flags().StringVar(&f.directApp, "direct-app", "", "work the task with this app's agent alone, no host agent (agent.direct_app): for a task one app does in full, such as the shell's")
	cmd.Flags().StringVarP(&f.workdir, "workdir", "C", ".", "working directory for the shell and the files root")
	cmd.Flags().StringVar(&f.app, "app", "", "start the MCP server set named under mcp.apps in the config (default: mcp.use)")
	cmd.Flags().BoolVar(&f.sandbox, "sandbox", false, "run the tools in a throwaway sandbox with --workdir as its /root (device: sandbox; see docs/sandbox.md)")
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "approve commands the agent asks to confirm, without asking")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the final answer")
	cmd.Flags().BoolVar(&f.noRecord, "no-record", false, "do not record this run's trajectory")
	cmd.Flags().BoolVar(&f.noStream, "no-stream", false, "do not show the model's text as it arrives (shown by default on a terminal)")
	cmd.Flags().BoolVar(&f.stream, "stream", false, "show the model's text as it arrives even when stdout is not a terminal")
	cmd.Flags().StringVar(&f.console, "console", "", "open the web console for this run at `ADDR` (default 127.0.0.1:0, a free port): questions and approvals wait there, not on the terminal")
	cmd.Flags().Lookup("console").NoOptDefVal = "127.0.0.1:0"
	cmd.Flags().StringVar(&f.knowledge, "knowledge", "", knowledge.FlagHelp)
	cmd.Flags().StringVar(&f.answerFormat, "answer-format", "", "the rule the final answer must follow, in plain words (e.g. \"a single integer, digits only\"): both agents are told it, and the host ends with the answer in that form")
	cmd.Flags().StringVar(&f.runs, "runs", "", "directory for recorded runs (default: $SAUCER_RUNS, else record.dir from the config: runs)")
	return cmd
}

func runTask(cmd *cobra.Command, g *globalFlags, f *runFlags, task string) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	if f.sandbox {
		cfg.Device = config.DeviceSandbox
	}
	if err := overConfig(cmd, cfg,
		configFlag{"max-steps", "agent.max_steps", func(c *config.Config) { c.Agent.MaxSteps = f.maxSteps }},
		configFlag{"max-rounds", "agent.max_rounds", func(c *config.Config) { c.Agent.MaxRounds = f.maxRounds }},
		configFlag{"direct-app", "agent.direct_app", func(c *config.Config) { c.Agent.DirectApp = f.directApp }}); err != nil {
		return err
	}
	// A budget that could not be enforced is refused before anything
	// starts (no device, no recording).
	if err := session.CheckBudget(cfg, cfg.PriceTable()); err != nil {
		return err
	}
	sigs := watchInterrupts(cmd.Context(), cmd.ErrOrStderr(), "the run")
	defer sigs.close()
	ctx, abort := context.WithCancelCause(sigs.Stop)
	defer abort(nil)

	dev, err := local.DeviceFor(ctx, cfg, f.workdir, f.app)
	if err != nil {
		return err
	}
	defer dev.Close()

	red, err := redactorFor(cfg)
	if err != nil {
		return fmt.Errorf("redact: %w (check record.redact and record.redact_patterns)", err)
	}
	// What the console shows (tool output, thoughts, answers) is redacted
	// like the recording.
	out := redacting{cmd.OutOrStdout(), red}
	p := newPrinter(cmd.OutOrStdout(), red)
	lines := newLineReader(cmd.InOrStdin())
	opts := session.Options{Device: dev, Abort: sigs.Abort, AnswerFormat: f.answerFormat, Confirmer: confirmer(f.yes, cmd.InOrStdin(), lines, sigs.Stop, out),
		Asker: asker(cmd.InOrStdin(), lines, sigs.Stop, out)}
	known, err := knowledge.FromConfig(ctx, cfg, f.knowledge, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer known.Close()
	opts.Retriever = known.Retriever
	if !f.quiet {
		opts.Observers = append(opts.Observers, p.event)
		if f.stream || (!f.noStream && isTerminal(cmd.OutOrStdout())) {
			opts.OnChunk = p.chunk
		}
	}
	rec, err := startRecording(cfg, dev, f, task, f.workdir, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	var recordErr atomic.Pointer[error]
	if rec != nil {
		opts.Observers = append(opts.Observers, rec.Observe)
		// A run that cannot be recorded stops (between commands), rather
		// than go on with nothing to show for it.
		rec.OnError = func(err error) {
			recordErr.Store(&err)
			abort(fmt.Errorf("the recording could not be written: %w", err))
		}
		// The recorder's writer batches lines: before each command, what
		// was recorded so far (the model call and decision that chose it)
		// goes to the file, and a command runs only when it got there.
		opts.Gate = func(context.Context) error {
			if err := rec.Sync(); err != nil {
				return fmt.Errorf("the recording could not be written (%w); the run stops", err)
			}
			return nil
		}
	}
	var tracer *telemetry.Tracer
	if ep := cfg.Telemetry.OTLPEndpoint; ep != "" {
		red, err := redactorFor(cfg)
		if err != nil {
			return err
		}
		if tracer, err = telemetry.New(ctx, telemetry.Options{Endpoint: ep, Headers: cfg.Telemetry.Headers, Model: cfg.Model, Redact: red.String}, task); err != nil {
			return err
		}
		opts.Observers = append(opts.Observers, tracer.Observe)
	}
	if !f.quiet {
		fmt.Fprintf(out, "saucer: %s (%s mode) on %s\n", cfg.Model, cfg.ModeFor(cfg.Model), dev.Device().Hostname)
	}
	var o *agent.Outcome
	if f.console != "" {
		if o, err = runWithConsole(ctx, out, cfg, dev, opts, task, f.console, runsDir(cfg, f.runs), f.yes); err != nil {
			return err
		}
	} else {
		sess, err := session.New(cfg, opts)
		if err != nil {
			return err
		}
		o = sess.Run(ctx, task)
	}
	if tracer != nil {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := tracer.End(flush, o); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "saucer: warning: traces were not all sent: %v\n", err)
		}
		cancel()
	}
	finishRecording(rec, o, cmd.ErrOrStderr())
	if rec != nil && recordErr.Load() == nil {
		// knowledge.learn: later runs are given what this one did.
		if n, err := known.Learned(context.WithoutCancel(ctx), rec.Dir()); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "saucer: warning: the run was not learned: %v\n", err)
		} else if n > 0 && !f.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "saucer: learned %d entries from this run (knowledge.learn)\n", n)
		}
	}
	if f.quiet {
		fmt.Fprintln(out, o.Answer)
	} else {
		p.outcome(o)
	}
	switch {
	case o.Budget != "":
		return exitError{4}
	case recordErr.Load() != nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "saucer: the run stopped: the recording in %s could not be written: %v\n", rec.Dir(), *recordErr.Load())
		return exitError{3}
	case sigs.interrupted():
		return exitError{sigs.code()}
	case o.Cancelled:
		return exitError{130}
	case !o.OK():
		return exitError{1}
	}
	return nil
}

// confirmer approves everything with --yes, asks on a terminal, and
// declines when no one is there to ask, or when stop ends (Ctrl-C) before
// an answer.
func confirmer(yes bool, in io.Reader, lines *lineReader, stop context.Context, out io.Writer) confirmFunc {
	return func(ctx context.Context, agentName string, cmds []command.Command, reason string) (bool, error) {
		if yes {
			fmt.Fprintf(out, "  %s asked to confirm %d command(s): approved by --yes\n", agentName, len(cmds))
			return true, nil
		}
		if !isTerminal(in) {
			fmt.Fprintf(out, "  %s asked to confirm %d command(s): declined (no terminal to ask; use --yes to approve)\n", agentName, len(cmds))
			return false, nil
		}
		fmt.Fprintf(out, "  %s wants to run (%s):\n", agentName, reason)
		for _, c := range cmds {
			fmt.Fprintf(out, "    %s\n", c)
		}
		fmt.Fprint(out, "  Run them? [y/N] ")
		wait, release := either(ctx, stop)
		defer release()
		line, err := lines.next(wait)
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(out, "\n  declined (%v)\n", err)
			return false, nil
		}
		return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y"), nil
	}
}

// either is a context that ends when ctx or stop does, with its cause:
// a prompt gives up at the first Ctrl-C whatever context it was given.
// release frees it.
func either(ctx, stop context.Context) (both context.Context, release func()) {
	both, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(stop, func() { cancel(context.Cause(stop)) })
	return both, func() { unhook(); cancel(nil) }
}

type confirmFunc func(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error)

func (f confirmFunc) Confirm(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error) {
	return f(ctx, agent, cmds, reason)
}

type askFunc func(ctx context.Context, agent, question string) (string, error)

func (f askFunc) Ask(ctx context.Context, agent, question string) (string, error) {
	return f(ctx, agent, question)
}

// asker asks the user on a terminal; with no terminal there is no asker, and
// an agent that needs an answer fails with its question. At Ctrl-C (stop
// ends) it gives up at once, and the agent fails with the question.
func asker(in io.Reader, lines *lineReader, stop context.Context, out io.Writer) agent.Asker {
	if !isTerminal(in) {
		return nil
	}
	return askFunc(func(ctx context.Context, agentName, q string) (string, error) {
		fmt.Fprintf(out, "  %s asks: %s\n  > ", agentName, q)
		wait, release := either(ctx, stop)
		defer release()
		line, err := lines.next(wait)
		if err != nil {
			fmt.Fprintf(out, "\n  no answer (%v)\n", err)
			return "", fmt.Errorf("no answer: %w", err)
		}
		return strings.TrimSpace(line), nil
	})
}

func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// exporterFor opens the config's trace exporter, or nil when telemetry is
// off. Span texts go through the recording's redactor.
func exporterFor(ctx context.Context, cfg *config.Config) (*telemetry.Exporter, error) {
	if cfg.Telemetry.OTLPEndpoint == "" {
		return nil, nil
	}
	red, err := redactorFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w (check record.redact and record.redact_patterns)", err)
	}
	return telemetry.NewExporter(ctx, telemetry.Options{Endpoint: cfg.Telemetry.OTLPEndpoint, Headers: cfg.Telemetry.Headers, Model: cfg.Model, Redact: red.String})
}
