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
func about(kind EventKind, pc *strategy.Context) Event {
	a := pc.Agent()
	return Event{Kind: kind, Agent: a.Name, Role: a.Role, App: a.App, Subtask: pc.Subtask(),
		Round: pc.Round(), Step: pc.Step(), Phase: pc.Phase()}
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
	pe := about(EventProgress, d.pc)
	outer := command.ProgressFrom(ctx)
	ctx = command.WithProgress(ctx, func(p command.Progress) {
		if outer != nil {
			outer(p)
		}
		e := pe
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
