package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/agentbench"
	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

func init() { commands = append(commands, newEvalCmd) }

type evalFlags struct {
	jobs       int
	out        string
	timeout    time.Duration
	trials     int
	minSuccess float64
	quiet      bool
	labels     []string
	shard      string
	sandbox    bool
	knowledge  string
}

func newEvalCmd(g *globalFlags) *cobra.Command {
	f := &evalFlags{}
	cmd := &cobra.Command{
		Use:   "eval SUITE.yaml",
		Short: "Run an eval suite and write its reports (JSON, JUnit XML, Markdown, HTML)",
		Long: "Run every case of an eval suite (see evals/README.md): cases on recorded or live local devices, " +
			"with checkers, trials, limits and metrics. The results directory keeps every trial's result (trials.jsonl) " +
			"and its trajectory (a trial that replayed its recording exactly names the recording instead); running again with the same directory resumes, and refuses if the suite or the options changed. " +
			"--model replaces every case's model. Exits 1 when the success rate is below --min-success, 3 when trials " +
			"could not be run (infra_error: a device, setup script or model that did not start), 130 when interrupted (143 by SIGTERM) " +
			"(run again to resume).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runEval(cmd, g, f, args[0]) },
	}
	cmd.Flags().IntVarP(&f.jobs, "jobs", "j", 0, "trials run in parallel (default: one per CPU for a suite that only replays recordings, else 1)")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "results directory (default eval-results/<suite name>)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "time limit per trial for cases that set none (e.g. 2m)")
	cmd.Flags().IntVar(&f.trials, "trials", 0, "trials per case, replacing the suite's")
	cmd.Flags().Float64Var(&f.minSuccess, "min-success", 0, "exit 1 when the success rate is below this (0 to 1)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	cmd.Flags().StringSliceVar(&f.labels, "label", nil, "run only the cases with this label (repeatable)")
	cmd.Flags().StringVar(&f.shard, "shard", "", "run only share i of n of the cases (i/n, from 1/n to n/n); join the shards with `saucer eval merge`")
	cmd.Flags().StringVar(&f.knowledge, "knowledge", "", knowledge.FlagHelp+"; a case that replays its recorded model is given what its recording was")
	cmd.Flags().BoolVar(&f.sandbox, "sandbox", false, "run every live case in a fresh sandbox of its own (see docs/sandbox.md)")
	cmd.AddCommand(newEvalCompareCmd(), newEvalImportCmd(), newEvalStepsCmd(g), newEvalMergeCmd())
	return cmd
}

func runEval(cmd *cobra.Command, g *globalFlags, f *evalFlags, file string) error {
	if err := checkBounds(cmd, atLeast1("jobs", "give at least 1 trial at a time (leave -j out for one per CPU on a suite that only replays recordings, else 1)"),
		atLeast1("trials", "give at least 1 trial per case (leave --trials out for the suite's)"),
		positive("timeout", "give a positive duration such as 2m (leave --timeout out for the cases' own limits)"),
		minSuccessBound); err != nil {
		return err
	}
	s, err := evals.LoadSuite(file)
	if err != nil {
		return err
	}
	var shard evals.Shard
	if f.shard != "" {
		if shard, err = evals.ParseShard(f.shard); err != nil {
			return err
		}
	}
	cfg, err := g.load()
	if err != nil {
		return err
	}
	red, err := redactorFor(cfg)
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = filepath.Join("eval-results", s.Name)
	}
	opts := evals.Options{Results: out, Jobs: f.jobs, Timeout: f.timeout, Model: g.model, Trials: f.trials, Labels: f.labels, Sandbox: f.sandbox,
		Config: cfg, Redactor: red, Shard: shard, Constellations: constellation.EvalRunner{}}
	opts.OpenModel = func(spec string) (llm.Model, error) {
		// An imported AgentBench suite's cases play their example solutions.
		if m, ok, err := agentbench.Open(spec, file); ok {
			return m, err
		}
		return provider.Open(spec, cfg.Providers, os.Getenv)
	}
	errw := cmd.ErrOrStderr()
	// Trials are not learned as they end (knowledge.learn): an eval
	// measures; saucer learn reads its results with their checks.
	noLearn := *cfg
	noLearn.Knowledge.Learn = false
	known, err := knowledge.FromConfig(cmd.Context(), &noLearn, f.knowledge, errw)
	if err != nil {
		return err
	}
	defer known.Close()
	opts.Session.Retriever = known.Retriever
	if opts.Trace, err = exporterFor(cmd.Context(), cfg); err != nil {
		return err
	} else if opts.Trace != nil {
		defer func() {
			flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := opts.Trace.Shutdown(flush); err != nil {
				fmt.Fprintf(errw, "saucer eval: warning: traces were not all sent: %v\n", err)
			}
		}()
	}
	if !f.quiet {
		opts.Progress = progressBar(errw, isTerminal(os.Stderr) && errw == os.Stderr)
	}
	sigs := watchInterrupts(cmd.Context(), errw, "the trials")
	defer sigs.close()
	ctx := sigs.Stop
	opts.Session.Abort = sigs.Abort
	rep, runErr := evals.Run(ctx, s, opts)
	if rep == nil {
		return runErr
	}
	if err := writeReports(cmd.OutOrStdout(), rep, out); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	switch {
	case sigs.interrupted():
		if runErr != nil {
			fmt.Fprintln(errw, runErr)
		}
		return exitError{sigs.code()}
	case runErr != nil:
		return runErr
	case infraFailed(errw, rep):
		return exitError{3}
	case rep.Metrics.SuccessRate < f.minSuccess:
		fmt.Fprintf(w, "FAIL: success rate %.1f%% is below --min-success %.1f%%\n", 100*rep.Metrics.SuccessRate, 100*f.minSuccess)
		return exitError{1}
	}
	return nil
}

// infraFailed says which trials could not be run (infra_error: their
// device, setup or model did not start, or the harness failed them), and
// whether there were any: their score says nothing about the agent.
func infraFailed(w io.Writer, rep *evals.Report) bool {
	var lines []string
	for _, c := range rep.Cases {
		for _, tr := range c.Trials {
			if tr != nil && tr.Failure == evals.FailInfra {
				lines = append(lines, fmt.Sprintf("  %s trial %d: %s", tr.Case, tr.Trial, cutLine(tr.Detail, 200)))
			}
		}
	}
	if len(lines) == 0 {
		return false
	}
	fmt.Fprintf(w, "saucer eval: %d trial(s) could not be run (infra_error); fix the cause, remove their lines from the results directory's %s (grep -v '\"failure\":\"infra_error\"') and run again to redo them:\n%s\n",
		len(lines), evals.TrialsFile, strings.Join(lines, "\n"))
	return true
}

// cutLine is s on one line, at most n bytes.
func cutLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// writeReports writes the report files and prints the summary.
func writeReports(w io.Writer, rep *evals.Report, out string) error {
	if err := evals.WriteReports(rep, out); err != nil {
		return err
	}
	rep.WriteMarkdown(w)
	fmt.Fprintf(w, "\nreports: %s\n", strings.Join([]string{filepath.Join(out, "report.json"), filepath.Join(out, "report.md"),
		filepath.Join(out, "junit.xml"), filepath.Join(out, "report.html")}, ", "))
	return nil
}

func newEvalMergeCmd() *cobra.Command {
	var out string
	var minSuccess float64
	cmd := &cobra.Command{
		Use:   "merge SHARD_DIR...",
		Short: "Join the results directories of a sharded run (saucer eval --shard i/n) into one report",
		Long: "Join the results directories of every shard of one run (saucer eval SUITE --shard i/n -o DIR_i) into " +
			"--out: the trials are copied and the reports are written as an unsharded run would write them. Refuses " +
			"shards of different suites or options, a shard given twice, a missing or unfinished shard.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkBounds(cmd, minSuccessBound); err != nil {
				return err
			}
			if out == "" {
				return errors.New("--out DIR is needed: the merged results are written there")
			}
			rep, err := evals.Merge(args, out)
			if err != nil {
				return err
			}
			if err := writeReports(cmd.OutOrStdout(), rep, out); err != nil {
				return err
			}
			if infraFailed(cmd.ErrOrStderr(), rep) {
				return exitError{3}
			}
			if rep.Metrics.SuccessRate < minSuccess {
				fmt.Fprintf(cmd.OutOrStdout(), "FAIL: success rate %.1f%% is below --min-success %.1f%%\n", 100*rep.Metrics.SuccessRate, 100*minSuccess)
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "directory for the merged results")
	cmd.Flags().Float64Var(&minSuccess, "min-success", 0, "exit 1 when the success rate is below this (0 to 1)")
	return cmd
}

// progressBar draws the run's progress: redrawn in place on a terminal,
// else a line at each tenth of the run.
func progressBar(w io.Writer, tty bool) func(evals.Progress) {
	lastTenth := -1
	return func(p evals.Progress) {
		const width = 24
		filled := width * p.Done / max(1, p.Total)
		eta := "?"
		if p.ETA > 0 || p.Done == p.Total {
			eta = p.ETA.Round(time.Second).String()
		}
		line := fmt.Sprintf("[%s%s] %d/%d  pass %d  fail %d  elapsed %s  ETA %s", strings.Repeat("#", filled), strings.Repeat("-", width-filled),
			p.Done, p.Total, p.Passed, p.Failed, p.Elapsed.Round(time.Second), eta)
		if tty {
			fmt.Fprintf(w, "\r%s", line)
			if p.Done == p.Total {
				fmt.Fprintln(w)
			}
			return
		}
		if tenth := 10 * p.Done / max(1, p.Total); tenth != lastTenth {
			lastTenth = tenth
			fmt.Fprintln(w, line)
		}
	}
}

func newEvalCompareCmd() *cobra.Command {
	var failOnRegression bool
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two eval results (directories or report.json files): regressions, improvements, metric deltas",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := evals.ReadReport(args[0])
			if err != nil {
				return err
			}
			b, err := evals.ReadReport(args[1])
			if err != nil {
				return err
			}
			c := evals.Compare(a, b)
			c.Write(cmd.OutOrStdout())
			if failOnRegression && len(c.Regressions) > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&failOnRegression, "fail-on-regression", false, "exit 1 when any case regressed")
	return cmd
}

func newEvalImportCmd() *cobra.Command {
	var out, scripts string
	var plain bool
	cmd := &cobra.Command{
		Use:   "import agentbench PATH...",
		Short: "Turn AgentBench OS tasks (task files, or the benchmark's data folder) into a Saucer suite",
		Long: "Turn AgentBench's OS-interaction tasks into one suite with the benchmark's execution rules: PATH is a task " +
			"file (a list of tasks, one task object, or JSON Lines) or a folder searched for them, such as the benchmark's " +
			"data/os_interaction/data. Script files are read from scripts/N/ for a file in data/N/, else scripts/<file name>/ " +
			"or scripts/ beside the file; --scripts names the folder instead. Writes the suite and the example solutions " +
			"(played as each case's model) to --out.",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "agentbench" {
				return fmt.Errorf("unknown source %q: only agentbench can be imported", args[0])
			}
			if out == "" {
				return errors.New("--out DIR is needed: the suite and its scripted solutions are written there")
			}
			res, err := agentbench.Import(agentbench.Options{Paths: args[1:], Out: out, Scripts: scripts, PlainNoRoot: plain})
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d tasks into %s (%d runnable without root: label no-root)\n", res.Tasks, res.Suite, res.NoRoot)
			if n := len(res.CannotJudge); n > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%d cannot be judged in the sandbox (label %s; the warnings say why): %s\n", n, agentbench.CannotJudge, strings.Join(res.CannotJudge, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "directory for the suite")
	cmd.Flags().StringVar(&scripts, "scripts", "", "the folder the tasks' script files are in (default: found beside each task file)")
	cmd.Flags().BoolVar(&plain, "plain-no-root", false, "run the no-root tasks on the plain device, not in sandboxes (for hosts that cannot make them; needs-root tasks still need one)")
	return cmd
}

func newEvalStepsCmd(g *globalFlags) *cobra.Command {
	var suiteFile, caseID string
	cmd := &cobra.Command{
		Use:   "steps RUN_DIR",
		Short: "Step-level evaluation: at each recorded app step, ask the model (--model) for the next action and score it",
		Long: "Send the model each recorded app-agent request and score the action it predicts against the recorded one, " +
			"and its final answer (finish_task's result where the recorded agent finished) against the recorded answer. " +
			"With --suite and --case, the case's answer check is the gold answer, and without --model the case's own " +
			"model answers (an imported AgentBench case's example solution, say).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load()
			if err != nil {
				return err
			}
			t, err := trajectory.Read(args[0])
			if err != nil {
				return err
			}
			var opts evals.StepOptions
			var m llm.Model
			if (suiteFile == "") != (caseID == "") {
				return errors.New("--suite and --case go together: the case of the suite whose answer is the gold one")
			}
			if suiteFile != "" {
				s, err := evals.LoadSuite(suiteFile)
				if err != nil {
					return err
				}
				i := slices.IndexFunc(s.Cases, func(c evals.Case) bool { return c.ID == caseID })
				if i < 0 {
					return fmt.Errorf("suite %s has no case %q", suiteFile, caseID)
				}
				c := s.Cases[i]
				for _, ch := range c.Checks {
					if ch.Answer != nil && opts.Answer == nil {
						opts.Answer = ch.Answer
					}
				}
				if g.model == "" {
					cfg.Model = cmp.Or(c.Model, s.Model, cfg.Model)
				}
				if em, ok, err := agentbench.Open(cfg.Model, suiteFile); ok {
					if err != nil {
						return err
					}
					m = em
				}
			}
			if m == nil {
				if m, err = session.OpenModel(cfg); err != nil {
					return err
				}
			}
			opts.Mode = cfg.ModeFor(cfg.Model)
			rep, err := evals.EvaluateSteps(cmd.Context(), t, m, opts)
			if err != nil {
				return err
			}
			rep.Write(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&suiteFile, "suite", "", "the suite of the recorded case (with --case): its answer check is the gold answer")
	cmd.Flags().StringVar(&caseID, "case", "", "the recorded case's id in --suite")
	return cmd
}
