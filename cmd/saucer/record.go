package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/trajectory"
)

// runsDir is where runs are recorded: --runs, else $SAUCER_RUNS, else the
// config's record.dir.
func runsDir(cfg *config.Config, flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("SAUCER_RUNS"); d != "" {
		return d
	}
	return cfg.Record.Dir
}

// redactorFor removes the config's and the environment's secrets.
func redactorFor(cfg *config.Config) (*trajectory.Redactor, error) {
	return trajectory.NewRedactor(cfg.Secrets(nil, nil), append(trajectory.DefaultPatterns(), cfg.Record.RedactPatterns...))
}

// redacting writes what it is given with secrets removed. The printer
// writes whole lines, so a secret is never split between two writes.
type redacting struct {
	w io.Writer
	r *trajectory.Redactor
}

func (r redacting) Write(b []byte) (int, error) {
	if _, err := r.w.Write(r.r.Bytes(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// pruneRuns removes the runs record.keep does not keep from dir before a
// run starts (a server prunes its own: server.Options.KeepRuns); what it
// cannot remove is a warning.
func pruneRuns(cfg *config.Config, dir string, errw io.Writer) {
	removed, err := trajectory.Prune(dir, keepOf(cfg), time.Now())
	if len(removed) > 0 {
		fmt.Fprintf(errw, "saucer: record.keep removed %d old runs from %s\n", len(removed), dir)
	}
	if err != nil {
		fmt.Fprintf(errw, "saucer: warning: record.keep: %v\n", err)
	}
}

// keepOf is which runs record.keep keeps.
func keepOf(cfg *config.Config) trajectory.Keep {
	return trajectory.Keep{Age: cfg.Record.Keep.Age.D(), Size: int64(cfg.Record.Keep.Size)}
}

// startRecording opens runs/<id>/ for a run, or returns nil when the run is
// not recorded.
func startRecording(cfg *config.Config, dev *client.Client, f *runFlags, task, workdir string, errw io.Writer) (*record.Recorder, error) {
	if f.noRecord || !cfg.Record.Enabled {
		return nil, nil
	}
	pruneRuns(cfg, runsDir(cfg, f.runs), errw)
	red, err := redactorFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("record: %w (check record.redact and record.redact_patterns)", err)
	}
	cfgYAML, err := cfg.YAML()
	if err != nil {
		return nil, err
	}
	pr, err := record.PromptsOf(cfg.Prompts)
	if err != nil {
		return nil, err
	}
	device := dev.Device()
	apps := map[string]string{}
	for _, ns := range dev.Namespaces() {
		apps[ns.Name] = ns.Description
	}
	abs, _ := filepath.Abs(workdir)
	s := trajectory.Session{ID: record.NewID(time.Now()), Task: task, AnswerFormat: f.answerFormat, Model: cfg.Model, Mode: string(cfg.ModeFor(cfg.Model)),
		Config: string(cfgYAML), Prompts: pr, Device: &device, Workdir: abs, Apps: apps}
	dir := filepath.Join(runsDir(cfg, f.runs), s.ID)
	rec, err := record.Start(dir, s, trajectory.Options{Redactor: red, ArtifactThreshold: cfg.Record.ArtifactThreshold})
	if err != nil {
		return nil, fmt.Errorf("%w (use --runs DIR, or --no-record)", err)
	}
	return rec, nil
}

// finishRecording ends the recording and says where it is; a recording
// that failed is a warning, never the run's failure.
func finishRecording(rec *record.Recorder, o *agent.Outcome, w io.Writer) {
	if rec == nil {
		return
	}
	if err := rec.Finish(o); err != nil {
		fmt.Fprintf(w, "saucer: warning: the recording in %s is incomplete: %v\n", rec.Dir(), err)
		return
	}
	fmt.Fprintf(w, "recorded to %s (saucer replay %s)\n", rec.Dir(), rec.Dir())
}
