package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

// HostAgent splits the user's request into subtasks and assigns each to an
// app, until it can answer (FINISH) or must give up (FAIL).
type HostAgent struct {
	core
}

// AppAgent works one subtask with one app's tools.
type AppAgent struct {
	core
	subtask string
}

// core is what both agents share: a processing context, a pipeline, a
// state machine and the loop that drives them.
type core struct {
	s *Session
	// setup makes pc, at the agent's first step.
	setup   strategy.Setup
	pc      *strategy.Context
	proc    *strategy.Processor
	machine *fsm.Machine
	limit   int
	// knowledgeTold: a step event has carried what the agent retrieved.
	knowledgeTold bool
}

// context is the agent's processing context, made at its first use.
func (c *core) context() *strategy.Context {
	if c.pc == nil {
		c.pc = c.s.newContext(c.setup)
	}
	return c.pc
}

func (s *Session) newHost(request string) *HostAgent {
	set := s.setup(strategy.Agent{Name: "host", Role: fsm.Host}, s.opts.MaxRounds)
	set.Request = request
	// What was known up front stands in for what discovery cannot ask
	// (UFO's client has no get_device_info).
	set.Device = s.opts.Device
	for name, d := range s.opts.AppDescriptions {
		set.Apps = append(set.Apps, prompts.App{Name: name, Description: d})
	}
	h := &HostAgent{core{s: s, setup: set, proc: s.hostProc, machine: fsm.New(fsm.Host), limit: s.opts.MaxRounds}}
	// Discovery asks the device about itself for the host only; its app
	// agents are told what it learnt, so that they know which device they
	// work on, as whom and in which folder without asking the shell.
	h.setup.RunSubtask = func(ctx context.Context, app, subtask string) memory.Note {
		return s.runSubtask(ctx, app, subtask, h.context().Device())
	}
	return h
}

// appDevice is what an app agent is told of the device: which one it is
// (platform, host name, id), who its tools run as and where they start, and
// what the deployment added (Custom). The rest (the OS release, the
// hardware, the features) is the host's, to plan with: every step of an app
// agent sends its prompt again, and they would lengthen each request for
// nothing its tools need.
func appDevice(d command.DeviceInfo) command.DeviceInfo {
	return command.DeviceInfo{DeviceID: d.DeviceID, Platform: d.Platform, Hostname: d.Hostname,
		User: d.User, UID: d.UID, Home: d.Home, WorkDir: d.WorkDir, Custom: d.Custom}
}

// runSubtask is how the host's ASSIGN reaches an app agent, on the device
// the host knows; the outcome goes on the blackboard for every later agent
// to see.
func (s *Session) runSubtask(ctx context.Context, app, subtask string, device command.DeviceInfo) memory.Note {
	a := s.NewApp(app, subtask)
	a.setup.Device = appDevice(device)
	note := a.Run(ctx, s.requestOf(ctx))
	s.board.AddNote(note)
	return note
}

// NewApp makes an app agent for a subtask, told of the device what was
// known up front (Options.Device, see appDevice). The host agent makes its
// own; this is for callers that drive an app agent directly.
func (s *Session) NewApp(app, subtask string) *AppAgent {
	s.apps++
	name := fmt.Sprintf("app:%s#%d", app, s.apps)
	set := s.setup(strategy.Agent{Name: name, Role: fsm.App, App: app}, s.opts.MaxSteps)
	set.Subtask, set.Device = subtask, appDevice(s.opts.Device)
	a := &AppAgent{subtask: subtask}
	a.core = core{s: s, setup: set, machine: fsm.New(fsm.App), limit: s.opts.MaxSteps, proc: s.appProc}
	if p, ok := s.appProcs[app]; ok {
		a.proc = p
	}
	return a
}

// Step runs the agent's next step alone and returns the state it reached.
// Run is the usual way to drive an agent; Step is for benchmarks, debuggers
// and evaluators that look at one step at a time.
func (a *AppAgent) Step(ctx context.Context) (fsm.State, error) {
	err := a.step(ctx, a.context().Memory().Len()+1)
	return a.machine.Current(), err
}

type requestKey struct{}

func (s *Session) requestOf(ctx context.Context) string {
	r, _ := ctx.Value(requestKey{}).(string)
	return r
}

// Run works the subtask; request is the user's whole request, for context
// (an agent that has already stepped keeps the request it had).
func (a *AppAgent) Run(ctx context.Context, request string) memory.Note {
	note, _ := a.work(ctx, request)
	return note
}

// work is Run, with how the agent's loop ended.
func (a *AppAgent) work(ctx context.Context, request string) (memory.Note, ending) {
	if a.pc == nil {
		a.setup.Request = request
	}
	who := a.context().Agent()
	a.s.emit(Event{Kind: EventAgentStart, Agent: who.Name, Role: fsm.App, App: who.App, Subtask: a.subtask})
	end := a.loop(ctx)
	note := memory.Note{Subtask: a.subtask, App: who.App, Status: string(end.status), Result: end.answer}
	a.s.emit(Event{Kind: EventAgentEnd, Agent: who.Name, Role: fsm.App, App: who.App, Subtask: a.subtask, Note: &note, Err: end.err})
	return note, end
}

// directSubtask is the subtask of an app agent that works a request alone.
const directSubtask = "The whole request above: no other agent works on it. Your result is the final answer to it: write it for the user (in the answer format, when the request gives one)."

// runDirect works a request with one app agent alone (Options.DirectApp):
// it asks the device about itself, as a host would, and its result is
// the session's answer.
func (s *Session) runDirect(ctx context.Context, app, request string) *Outcome {
	a := s.NewApp(app, directSubtask)
	a.setup.Alone = true
	note, end := a.work(ctx, request)
	s.board.AddNote(note)
	return &Outcome{Status: end.status, Answer: end.answer, Cancelled: end.cancelled, Rounds: a.context().Memory().Len(), Err: end.err}
}

func (h *HostAgent) run(ctx context.Context) *Outcome {
	pc := h.context()
	ctx = context.WithValue(ctx, requestKey{}, pc.Request())
	h.s.emit(Event{Kind: EventAgentStart, Agent: "host", Role: fsm.Host})
	end := h.loop(ctx)
	out := &Outcome{Status: end.status, Answer: end.answer, Cancelled: end.cancelled, Rounds: pc.Memory().Len(), Err: end.err}
	h.s.emit(Event{Kind: EventAgentEnd, Agent: "host", Role: fsm.Host, Err: end.err})
	return out
}

type ending struct {
	status    fsm.State
	answer    string
	cancelled bool
	err       error
}

// loop runs steps until the state machine reaches a final state, the step
// budget runs out, or ctx is cancelled (checked between steps; a step's
// commands are never cut off in the middle).
func (c *core) loop(ctx context.Context) ending {
	pc := c.context()
	// The device's client picks the tools that run a command by the
	// agent that asks (UFO's routes each frame by its agent_name).
	asker := command.AppAgentName
	if pc.Agent().Role == fsm.Host {
		asker = command.HostAgentName
	}
	ctx = command.WithAgent(ctx, asker)
	for step := 1; ; step++ {
		if ctx.Err() != nil {
			return c.stop(fsm.Fail, ending{cancelled: true, answer: fmt.Sprintf("cancelled after %d steps: %v", step-1, context.Cause(ctx))})
		}
		if step > c.limit {
			what := "steps"
			if pc.Agent().Role == fsm.Host {
				what = "rounds"
			}
			return c.stop(fsm.Fail, ending{answer: fmt.Sprintf("stopped: reached the limit of %d %s without finishing", c.limit, what)})
		}
		if err := c.step(ctx, step); err != nil {
			if ctx.Err() != nil {
				return c.stop(fsm.Fail, ending{cancelled: true, answer: fmt.Sprintf("cancelled during step %d: %v", step, context.Cause(ctx))})
			}
			return c.stop(fsm.Error, ending{answer: err.Error(), err: err})
		}
		switch st := pc.Status(); st {
		case fsm.Finish, fsm.Fail:
			return ending{status: st, answer: c.answer()}
		case fsm.Pending:
			if e, stop := c.askUser(ctx); stop {
				return e
			}
		}
	}
}

// step runs step number n through the pipeline and moves the state machine
// to where the step left the agent.
func (c *core) step(ctx context.Context, n int) error {
	pc := c.context()
	round := n
	if pc.Agent().Role == fsm.App {
		round = 0
	}
	pc.BeginStep(round, n)
	start := time.Now()
	err := c.proc.Run(ctx, pc)
	c.s.steps++
	c.s.usage = c.s.usage.Add(pc.Usage())
	if c.s.opts.Observer != nil { // the event copies what the step did
		e := about(EventStep, pc)
		e.Phase = "" // the step as a whole
		e.To, e.Decision, e.Commands, e.Results = pc.Status(), pc.Decision(), pc.Commands(), pc.Results()
		e.Messages, e.Response, e.Usage, e.Attempts, e.Duration = pc.Messages(), pc.Response(), pc.Usage(), pc.Attempts(), time.Since(start)
		e.Timings, e.Errors, e.Observations, e.Err = pc.Timings(), pc.Errors(), pc.Observations(), err
		if k := pc.Knowledge(); k != nil && k.Text != "" && !c.knowledgeTold {
			e.Knowledge, c.knowledgeTold = k, true
		}
		c.s.emit(e)
	}
	if err != nil {
		return err
	}
	if pc.Status() == "" {
		return errors.New("the step ended without a status: the pipeline needs an LLM_INTERACTION strategy that decides one")
	}
	for _, st := range append(pc.Visited(), pc.Status()) {
		if err := c.goTo(st); err != nil {
			return err
		}
	}
	return nil
}

func (c *core) answer() string {
	if d := c.pc.Decision(); d != nil {
		return d.Result
	}
	return ""
}

func (c *core) goTo(st fsm.State) error {
	from := c.machine.Current()
	// The machine's own context is never the caller's: a cancelled context
	// must not leave it half-way through a transition.
	if err := c.machine.Go(context.Background(), st); err != nil {
		return err
	}
	who := c.pc.Agent()
	c.s.emit(Event{Kind: EventTransition, Agent: who.Name, Role: who.Role, App: who.App, Step: c.pc.Step(), From: from, To: st})
	return nil
}

// stop moves the machine to a final state for a reason outside the model's
// reply (a limit, a cancel, an error).
func (c *core) stop(st fsm.State, e ending) ending {
	e.status = st
	if !c.machine.Terminal() {
		if err := c.goTo(st); err != nil && e.err == nil {
			e.err = err
		}
	}
	return e
}

// askUser answers a PENDING step: the question goes to the user and the
// answer to the agent's memory, or the agent fails when no one can answer.
func (c *core) askUser(ctx context.Context) (ending, bool) {
	q := ""
	if d := c.pc.Decision(); d != nil {
		q = d.Comment
		if q == "" {
			q = d.Result
		}
	}
	if c.s.opts.Asker == nil {
		return c.stop(fsm.Fail, ending{answer: "the agent needs the user's input, but no one can answer here: " + q}), true
	}
	ans, err := c.s.opts.Asker.Ask(ctx, c.pc.Agent().Name, q)
	if err != nil {
		return c.stop(fsm.Fail, ending{answer: fmt.Sprintf("asking the user failed: %v (question: %s)", err, q)}), true
	}
	c.pc.Memory().AddNote("The user answered: " + ans)
	if err := c.goTo(fsm.Continue); err != nil {
		return c.stop(fsm.Error, ending{answer: err.Error(), err: err}), true
	}
	return ending{}, false
}
