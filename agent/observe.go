package agent

import (
	"context"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/strategy"
)

// observedModel reports every call of one agent's model to the observer.
// It reads the agent's processing context (set once the context is made)
// for who is asking and in which step; the strategies call the model from
// the agent's own goroutine.
type observedModel struct {
	s    *Session
	pc   *strategy.Context
	next llm.Model
}

// about is an event about the agent whose context pc is, in its current
// step and phase.
func about(kind EventKind, pc *strategy.Context) Event { return whereOf(pc).event(kind) }

// where is who an event is about and where in its work, as about reads it.
type where struct {
	agent       strategy.Agent
	subtask     string
	round, step int
	phase       strategy.Phase
}

func whereOf(pc *strategy.Context) where {
	return where{agent: pc.Agent(), subtask: pc.Subtask(), round: pc.Round(), step: pc.Step(), phase: pc.Phase()}
}

func (w where) event(kind EventKind) Event {
	return Event{Kind: kind, Agent: w.agent.Name, Role: w.agent.Role, App: w.agent.App, Subtask: w.subtask,
		Round: w.round, Step: w.step, Phase: w.phase}
}

func (m *observedModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	start := time.Now()
	resp, err := m.next.Complete(ctx, req)
	m.report(req, resp, err, time.Since(start))
	return resp, err
}

func (m *observedModel) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	start := time.Now()
	resp, err := m.next.Stream(ctx, req, onChunk)
	m.report(req, resp, err, time.Since(start))
	return resp, err
}

// SupportsComputer passes on whether the model has a native computer-use
// tool.
func (m *observedModel) SupportsComputer() bool { return llm.SupportsComputer(m.next) }

func (m *observedModel) report(req *llm.Request, resp *llm.Response, err error, d time.Duration) {
	e := about(EventModelCall, m.pc)
	e.Request, e.Response, e.Duration, e.Err = req, resp, d, err
	if resp != nil {
		e.Usage = resp.Usage
	}
	m.s.emit(e)
}

// observedDispatcher reports every batch one agent dispatches. Observations
// dispatch from several goroutines at once; they only read the context's
// agent, step and phase, which do not change while they run.
type observedDispatcher struct {
	s    *Session
	pc   *strategy.Context
	next dispatcher.Dispatcher
}

func (d *observedDispatcher) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	// The commands' progress reports become events of this agent and
	// step, also those that come after it (a command left running in the
	// background); a callback the caller set still gets them.
	// The callback keeps only who and where (an Event is large, and most
	// commands report no progress).
	w := whereOf(d.pc)
	outer := command.ProgressFrom(ctx)
	ctx = command.WithProgress(ctx, func(p command.Progress) {
		if outer != nil {
			outer(p)
		}
		e := w.event(EventProgress)
		e.Progress = &p
		d.s.emit(e)
	})
	start := time.Now()
	results := d.next.Execute(ctx, cmds)
	e := about(EventDispatch, d.pc)
	e.Commands, e.Results, e.Duration = cmds, results, time.Since(start)
	d.s.emit(e)
	return results
}
