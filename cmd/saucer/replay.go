package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

func init() { commands = append(commands, newReplayCmd) }

type replayFlags struct {
	liveModel bool
	record    string
	quiet     bool
}

func newReplayCmd(g *globalFlags) *cobra.Command {
	f := &replayFlags{}
	cmd := &cobra.Command{
		Use:   "replay RUN_DIR|CONSTELLATION_RECORDING",
		Short: "Re-run a recorded session or constellation offline: recorded model replies, recorded device",
		Long: "Replay a recorded run (runs/<id>) deterministically and offline: the model answers with the recorded " +
			"replies, each request checked against the recorded one, and the device with the recorded results. " +
			"Any divergence (another prompt, another command, another end) is printed with a diff and the exit code is 1. " +
			"A session stopped by a budget or an interrupt replays up to where it was stopped and ends as recorded; " +
			"a recording cut short (a full disk, a crash) replays up to where it stops and says so (exit 0).\n\n" +
			"With --live-model only the device is replayed: the model named by --model (or the config) is asked, " +
			"to try a new model or new prompts on the recorded observations; commands the recording never ran fail.\n\n" +
			"A constellation's recording (RUNS/constellations/ID.jsonl, or a folder holding one) is known by its content and " +
			"replayed offline: the planner's edits and each node's start and end applied in order, with the orchestrator's " +
			"rules, every graph version checked against the recorded one. It prints the versions, the edits, each node's end " +
			"and the final status and answer; a divergence is printed with where it is (event, version, node, what differed) " +
			"and the exit code is 1.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, g, f, args[0])
		},
	}
	cmd.Flags().BoolVar(&f.liveModel, "live-model", false, "ask the configured model (--model) instead of the recorded replies; only the device is replayed")
	cmd.Flags().StringVar(&f.record, "record", "", "record the replay into this new directory")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the outcome and the divergences")
	return cmd
}

func runReplay(cmd *cobra.Command, g *globalFlags, f *replayFlags, dir string) error {
	// A constellation's recording, known by its content, replays as a
	// constellation; anything else is a task's run directory.
	if file, err := evals.ConstellationRecording(dir); err != nil {
		return err
	} else if file != "" {
		return replayConstellation(cmd, f, file)
	}
	t, err := trajectory.Read(dir)
	if err != nil {
		return err
	}
	current, err := g.load()
	if err != nil {
		return err
	}
	red, err := redactorFor(current)
	if err != nil {
		return err
	}
	opts := evals.ReplayOptions{Redactor: red, RecordTo: f.record}
	if f.liveModel {
		cfg, err := evals.ReplayConfig(t)
		if err != nil {
			return err
		}
		cfg.Model, cfg.Mode, cfg.Models, cfg.Providers = current.Model, current.Mode, current.Models, current.Providers
		if g.prompts != "" {
			cfg.Prompts = g.prompts
		}
		if opts.Model, err = session.OpenModel(cfg); err != nil {
			return err
		}
		opts.Config = cfg
	}
	out := cmd.OutOrStdout()
	p := newPrinter(out, red)
	if !f.quiet {
		opts.Observer = p.event
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := t.Session()
	if !f.quiet {
		model := s.Model + " (recorded replies)"
		if f.liveModel {
			model = opts.Config.Model + " (live), recorded device"
		}
		fmt.Fprintf(out, "replaying %s: %q with %s\n", dir, s.Task, model)
	}
	res, err := evals.Replay(ctx, t, opts)
	if err != nil {
		return err
	}
	p.outcome(res.Outcome)
	if res.Recorded != "" {
		fmt.Fprintf(out, "replay recorded to %s\n", res.Recorded)
	}
	if f.liveModel {
		for _, d := range res.DeviceDivergences {
			fmt.Fprintf(out, "not in the recording: %s\n", d.Reason)
		}
		if !res.Outcome.OK() {
			return exitError{1}
		}
		return nil
	}
	if res.Diverged() {
		fmt.Fprintf(out, "DIVERGED from the recording:\n%s", res.Report())
		return exitError{1}
	}
	if res.Incomplete != "" {
		fmt.Fprintf(out, "incomplete recording, identical up to where it stops: %d model calls, %d dispatches; %s\n",
			len(t.Calls()), len(t.Of(trajectory.TypeDispatch)), res.Incomplete)
		return nil
	}
	fmt.Fprintf(out, "identical to the recording: %d model calls, %d dispatches\n", len(t.Calls()), len(t.Of(trajectory.TypeDispatch)))
	return nil
}
