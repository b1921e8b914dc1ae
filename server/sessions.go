package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/telemetry"
	"github.com/saucerhq/saucer/trajectory"
)

// Sessions is the usual Options.NewSession: each task's agents are built
// from cfg through the one assembly (package session), over base — a
// strategy registry, middleware, prompts — with the task's dispatcher and
// observer. Unless base names a model, each task opens its own from the
// config (a scripted model keeps its place in the script per task).
func Sessions(cfg *config.Config, base session.Options) func(SessionSpec) (Runner, error) {
	return func(spec SessionSpec) (Runner, error) {
		o := base
		o.Device, o.Dispatcher, o.Apps, o.DeviceInfo = nil, spec.Dispatcher, spec.AppDescriptions, spec.Device
		o.Observers = append(slices.Clip(base.Observers), spec.Observer)
		if o.Asker == nil && spec.Person != nil {
			o.Asker = spec.Person
		}
		if o.Confirmer == nil && spec.Person != nil {
			o.Confirmer = spec.Person
		}
		if spec.WrapModel != nil {
			m := o.Model
			if m == nil {
				var err error
				if m, err = session.OpenModel(cfg); err != nil {
					return nil, err
				}
			}
			o.Model = spec.WrapModel(m)
		}
		return session.New(cfg, o)
	}
}

var _ Runner = (*agent.Session)(nil)

// RecordTo wraps a session builder so that every task is recorded in the
// trajectory format under dir/<task id>/, as saucer run records a local
// run: saucer replay and saucer eval work on remote sessions too. The
// directory is named by the task's id, never by anything a client sent.
func RecordTo(dir string, cfg *config.Config, opts trajectory.Options, next func(SessionSpec) (Runner, error)) func(SessionSpec) (Runner, error) {
	return RecordToThen(dir, cfg, opts, next, nil)
}

// RecordToThen is RecordTo that tells then of each task's run directory
// once its recording is finished (saucer serve learns it there, with
// knowledge.learn). then runs on the task's own goroutine.
func RecordToThen(dir string, cfg *config.Config, opts trajectory.Options, next func(SessionSpec) (Runner, error), then func(ctx context.Context, runDir string)) func(SessionSpec) (Runner, error) {
	// Every task runs with the same config: encode it once, as the
	// string every task's session_start holds.
	configYAML := sync.OnceValues(func() (string, error) {
		b, err := cfg.YAML()
		return string(b), err
	})
	return func(spec SessionSpec) (Runner, error) {
		cfgYAML, err := configYAML()
		if err != nil {
			return nil, err
		}
		device := spec.Device
		s := trajectory.Session{ID: spec.TaskID, Task: spec.Request, Model: cfg.Model, Mode: string(cfg.ModeFor(cfg.Model)),
			Config: cfgYAML, Device: &device, Apps: spec.AppDescriptions}
		runDir := filepath.Join(dir, filepath.Base(spec.TaskID))
		if spec.Resumed {
			// The resumed run records the whole task again (its journal
			// replays the part before the restart); what the first run
			// wrote is kept beside it.
			old := runDir + ".before-restart"
			os.RemoveAll(old)
			if err := os.Rename(runDir, old); err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("record task %s: %w", spec.TaskID, err)
			}
		}
		rec, err := record.Start(runDir, s, opts)
		if err != nil {
			return nil, fmt.Errorf("record task %s: %w", spec.TaskID, err)
		}
		return watched(spec, next, rec.Observe, func(ctx context.Context, out *agent.Outcome) {
			rec.Finish(out)
			if then != nil {
				then(context.WithoutCancel(ctx), runDir)
			}
		})
	}
}

// watched builds a task's runner with next, its events also going to
// observe, and its outcome to end (also when its agents cannot start).
func watched(spec SessionSpec, next func(SessionSpec) (Runner, error), observe func(agent.Event), end func(context.Context, *agent.Outcome)) (Runner, error) {
	inner := spec.Observer
	spec.Observer = func(e agent.Event) {
		if inner != nil {
			inner(e)
		}
		observe(e)
	}
	r, err := next(spec)
	if err != nil {
		end(context.Background(), &agent.Outcome{Status: fsm.Error, Answer: err.Error(), Err: err})
		return nil, err
	}
	return endingRunner{r, end}, nil
}

// endingRunner tells end of its task's outcome.
type endingRunner struct {
	Runner
	end func(context.Context, *agent.Outcome)
}

func (r endingRunner) Run(ctx context.Context, request string) *agent.Outcome {
	out := r.Runner.Run(ctx, request)
	r.end(context.WithoutCancel(ctx), out)
	return out
}

// TraceTo wraps a session builder so that every task is traced through x:
// a session span per task, labelled with the task's id and device, and
// the spans of its agents, model calls and commands (see package
// telemetry). The task's session span ends when the task does.
func TraceTo(x *telemetry.Exporter, model string, next func(SessionSpec) (Runner, error)) func(SessionSpec) (Runner, error) {
	return func(spec SessionSpec) (Runner, error) {
		tr := x.Start(spec.Request, model, map[string]string{"task_id": spec.TaskID, "device": spec.Device.DeviceID})
		return watched(spec, next, tr.Observe, func(ctx context.Context, out *agent.Outcome) { tr.End(ctx, out) })
	}
}
