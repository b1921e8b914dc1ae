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
// It reads the agent's processing context for who is asking and in which
// step; the strategies call the model from the agent's own goroutine.
type observedModel struct {
	s    *Session
	pc   *strategy.Context
	next llm.Model
}

func (m observedModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	start := time.Now()
	resp, err := m.next.Complete(ctx, req)
	m.report(req, resp, err, time.Since(start))
	return resp, err
}

func (m observedModel) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	start := time.Now()
	resp, err := m.next.Stream(ctx, req, onChunk)
	m.report(req, resp, err, time.Since(start))
	return resp, err
}

func (m observedModel) report(req *llm.Request, resp *llm.Response, err error, d time.Duration) {
	pc := m.pc
	e := Event{Kind: EventModelCall, Agent: pc.Agent.Name, Role: pc.Agent.Role, App: pc.Agent.App, Subtask: pc.Subtask,
		Round: pc.Round, Step: pc.Step, Phase: pc.Phase, Request: req, Response: resp, Duration: d, Err: err}
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

func (d observedDispatcher) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	start := time.Now()
	results := d.next.Execute(ctx, cmds)
	pc := d.pc
	d.s.emit(Event{Kind: EventDispatch, Agent: pc.Agent.Name, Role: pc.Agent.Role, App: pc.Agent.App, Subtask: pc.Subtask,
		Round: pc.Round, Step: pc.Step, Phase: pc.Phase, Commands: cmds, Results: results, Duration: time.Since(start)})
	return results
}
