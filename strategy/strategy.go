// Package strategy is the processor that moves an agent through one step:
// DATA_COLLECTION → LLM_INTERACTION → ACTION_EXECUTION → MEMORY_UPDATE.
//
// Each phase runs the strategies configured for it, in order. Strategies are
// chosen by name from a Registry, so a config file (or a user's own code)
// decides what an agent does in each phase; middleware wraps every strategy
// for cross-cutting work such as logging, timing and recording.
package strategy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Phase is one stage of an agent step.
type Phase string

const (
	DataCollection  Phase = "DATA_COLLECTION"
	LLMInteraction  Phase = "LLM_INTERACTION"
	ActionExecution Phase = "ACTION_EXECUTION"
	MemoryUpdate    Phase = "MEMORY_UPDATE"
)

// Phases lists the phases in the order a step runs them.
var Phases = []Phase{DataCollection, LLMInteraction, ActionExecution, MemoryUpdate}

// Strategy does one piece of an agent step.
type Strategy interface {
	// Name is the name the strategy is registered and configured under.
	Name() string
	// Phase is the phase the strategy belongs to.
	Phase() Phase
	// Execute does the work, reading and writing the processing context. A
	// returned error is an infrastructure failure; what the model or a tool
	// got wrong is data in the context, not an error.
	Execute(ctx context.Context, pc *Context) error
}

// Func turns a function into a Strategy.
func Func(name string, phase Phase, fn func(ctx context.Context, pc *Context) error) Strategy {
	return funcStrategy{name, phase, fn}
}

type funcStrategy struct {
	name  string
	phase Phase
	fn    func(context.Context, *Context) error
}

func (f funcStrategy) Name() string                                   { return f.name }
func (f funcStrategy) Phase() Phase                                   { return f.phase }
func (f funcStrategy) Execute(ctx context.Context, pc *Context) error { return f.fn(ctx, pc) }

// Handler runs the strategy currently named by pc.Running().
type Handler func(ctx context.Context, pc *Context) error

// Middleware wraps every strategy run: func(next) next.
type Middleware func(next Handler) Handler

// Entry is a strategy in a processor. FailFast stops the step when the
// strategy fails; otherwise the error is kept in pc.Errors() and the step goes
// on with the next strategy.
type Entry struct {
	Strategy Strategy
	FailFast bool
}

// Processor runs a step's strategies phase by phase.
type Processor struct {
	// stages are the entries in the order they run: by phase, then as
	// given.
	stages []stage
}

// stage is an entry of a processor, with its phase as read when it was
// built and its Execute inside the middleware, wrapped once: a step runs
// each without building its chain again. Without middleware run is nil and
// the strategy's Execute runs as it is.
type stage struct {
	Entry
	phase Phase
	run   Handler
}

// NewProcessor builds a processor. Entries run in phase order, and in the
// given order within a phase. Middleware is applied outermost first.
func NewProcessor(entries []Entry, mw ...Middleware) (*Processor, error) {
	for _, e := range entries {
		if e.Strategy == nil {
			return nil, errors.New("strategy: nil strategy in processor")
		}
		if ph := e.Strategy.Phase(); !validPhase(ph) {
			return nil, fmt.Errorf("strategy %q: unknown phase %q (phases: %v)", e.Strategy.Name(), ph, Phases)
		}
	}
	p := &Processor{stages: make([]stage, 0, len(entries))}
	for _, ph := range Phases {
		for _, e := range entries {
			if e.Strategy.Phase() != ph {
				continue
			}
			st := stage{Entry: e, phase: ph}
			if len(mw) > 0 {
				st.run = e.Strategy.Execute
				for i := len(mw) - 1; i >= 0; i-- {
					st.run = mw[i](st.run)
				}
			}
			p.stages = append(p.stages, st)
		}
	}
	return p, nil
}

// Entries returns the processor's strategies in the order they run.
func (p *Processor) Entries() []Entry {
	out := make([]Entry, len(p.stages))
	for i, st := range p.stages {
		out[i] = st.Entry
	}
	return out
}

// StepError is a fail-fast strategy's failure.
type StepError struct {
	Strategy string
	Phase    Phase
	Err      error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s strategy %q: %v", e.Phase, e.Strategy, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Run runs one step and returns a *StepError when a fail-fast strategy
// fails. When ctx is done before the step has acted (during data collection
// or while asking the model) it stops and returns ctx's cause; once actions
// may have run, the remaining phases run anyway so that what was done is
// remembered (the dispatcher itself runs no command after a cancel). A
// strategy that has started is never cut off by the processor.
func (p *Processor) Run(ctx context.Context, pc *Context) error {
	for _, e := range p.stages {
		ph := e.phase
		if ph == DataCollection || ph == LLMInteraction {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
		}
		pc.running = e.Strategy.Name()
		pc.phase = ph
		start := time.Now()
		run := e.run
		if run == nil {
			run = e.Strategy.Execute
		}
		err := runGuarded(run, ctx, pc)
		pc.addTiming(ph, time.Since(start))
		if err != nil {
			serr := &StepError{Strategy: e.Strategy.Name(), Phase: ph, Err: err}
			if e.FailFast {
				pc.running = ""
				return serr
			}
			pc.errs = append(pc.errs, serr)
		}
	}
	pc.running = ""
	return nil
}

// runGuarded runs h, turning a panic into an error: a strategy (a user's
// own, say) that panics fails its step with the reason, and the session,
// its recording and the other agents go on.
func runGuarded(h Handler, ctx context.Context, pc *Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v (at %s)", r, panicSite())
		}
	}()
	return h(ctx, pc)
}

// panicSite is the function and line a panic came from: the first frame of
// the stack outside the runtime and this file.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasSuffix(f.File, "strategy/strategy.go") {
			return fmt.Sprintf("%s, %s:%d", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

func validPhase(p Phase) bool {
	for _, q := range Phases {
		if p == q {
			return true
		}
	}
	return false
}
