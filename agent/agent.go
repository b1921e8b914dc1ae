// Package agent runs a session: a HostAgent splits the user's request and
// assigns subtasks to apps (tool namespaces on the device); an AppAgent works
// one subtask with its app's tools until it finishes or fails. Each agent
// step is one pass of the strategy processor; the step's status moves the
// agent's finite-state machine.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

// Asker puts an agent's question to the user (the PENDING state).
type Asker interface {
	Ask(ctx context.Context, agent, question string) (string, error)
}

// Options configure a session. Model, Dispatcher and Prompts are required.
type Options struct {
	Model      llm.Model
	Mode       strategy.Mode
	Dispatcher dispatcher.Dispatcher
	Prompts    *prompts.Set
	// Registry supplies strategies by name; nil means the built-ins.
	Registry *strategy.Registry
	// HostPipeline and AppPipeline name each agent's strategies; empty
	// means strategy.DefaultPipeline().
	HostPipeline, AppPipeline []strategy.Spec
	// AppPipelines overrides AppPipeline for the named apps.
	AppPipelines map[string][]strategy.Spec
	Middleware   []strategy.Middleware
	// MaxRounds bounds the host agent's steps, MaxSteps each app agent's.
	MaxRounds, MaxSteps int
	Limits              strategy.Limits
	Confirmer           strategy.Confirmer
	Asker               Asker
	// Device is what is known of the device before discovery (a remote
	// device's registration), for the host agent; its discovery adds the
	// device's answer to get_device_info, and its app agents are told the
	// result.
	Device command.DeviceInfo
	// AppDescriptions describe apps to the host agent, by namespace.
	AppDescriptions map[string]string
	// DirectApp, when set, runs each request straight as that app's
	// agent, alone, with no host agent: a task one app does in full
	// costs no host calls. The app's result is the answer.
	DirectApp string
	// Retriever, when set, gives each agent what was learned before that
	// fits its request or subtask, for its first prompt (package
	// knowledge; a replay's comes from the recording).
	Retriever strategy.Retriever
	// Observer, when set, is told of every step and transition, and of
	// every model call and command batch. Calls are serialized: an observer
	// need not be safe for concurrent use.
	Observer func(Event)
	// OnChunk, when set, streams model replies as they arrive.
	OnChunk func(agent string, c llm.Chunk)
}

// Defaults used where Options leave a value zero.
const (
	DefaultMaxRounds  = 10
	DefaultMaxSteps   = 20
	DefaultMaxRetries = 3
)

// EventKind says what an Event reports.
type EventKind string

const (
	EventAgentStart EventKind = "agent_start"
	// EventDecision comes as soon as the model's reply is understood, before
	// anything runs; EventStep comes when the step is over.
	EventDecision   EventKind = "decision"
	EventStep       EventKind = "step"
	EventTransition EventKind = "transition"
	EventAgentEnd   EventKind = "agent_end"
	// EventModelCall reports one call to the model (re-asks and retries
	// each make one) with its full request, its reply or error and its
	// latency, so that a recording can answer the same calls again.
	EventModelCall EventKind = "model_call"
	// EventDispatch reports one batch of commands sent to the dispatcher,
	// in any phase (discovery and observations included), with its results.
	EventDispatch EventKind = "dispatch"
	// EventRetry comes before a wait to retry a failed model call: Err is
	// the failure, Duration the wait.
	EventRetry EventKind = "retry"
	// EventFallback comes when a model is passed over for its fallback;
	// Err says which, for which, and why.
	EventFallback EventKind = "fallback"
	// EventProgress reports a running command's progress (Progress): its
	// tool's reports as they come, and the end of a command left running
	// in the background. It names the agent and step that dispatched the
	// command, and may come after that step, or that agent, has ended.
	EventProgress EventKind = "progress"
)

// Event is what an Observer is told.
type Event struct {
	Kind    EventKind
	Agent   string
	Role    fsm.Role
	App     string
	Subtask string
	Round   int
	Step    int
	// From and To are set on transitions.
	From, To fsm.State
	// Step events carry the step's work.
	Decision *strategy.Decision
	Commands []command.Command
	Results  []command.Result
	Messages []llm.Message
	Response *llm.Response
	Usage    llm.Usage
	// Cost is what the event's model calls cost (model_call and step
	// events), priced by the session (package session) by the model that
	// answered; unknown without a price, estimated with Usage.
	Cost     price.Cost
	Attempts int
	Duration time.Duration
	Timings  map[strategy.Phase]time.Duration
	Errors   []error
	// Observations are what the step's data collection saw (step events).
	Observations []prompts.Observation
	// Knowledge is what the agent's Retriever gave it for its prompts, on
	// the step event of the step that asked (its first); nil when it gave
	// nothing.
	Knowledge *strategy.Retrieved
	// Request is the model call's request (model_call events); Phase is the
	// phase a model call or a dispatch was made in.
	Request *llm.Request
	Phase   strategy.Phase
	// Note is set when an app agent ends.
	Note *memory.Note
	// Progress is set on progress events.
	Progress *command.Progress
	Err      error
}

// Outcome is how a session ended.
type Outcome struct {
	Status fsm.State
	Answer string
	// Cancelled is set when the caller's context ended the session.
	Cancelled bool
	Rounds    int
	Steps     int
	Usage     llm.Usage
	// Cost is what the session's model calls cost (set by package
	// session, which knows the prices).
	Cost     price.Cost
	Subtasks []memory.Note
	// Err is the infrastructure failure behind an ERROR status.
	Err error
	// Budget, when set, says which budget ended the session and what it
	// spent (see package session).
	Budget string
}

// OK reports whether the session finished its task.
func (o *Outcome) OK() bool { return o.Status == fsm.Finish }

// Session runs one user request with a host agent and its app agents.
type Session struct {
	opts  Options
	board *memory.Blackboard
	// artifacts keep what is too long for every request, for all the
	// session's agents (a handle seen by one can be read by another).
	artifacts *memory.Artifacts
	hostProc  *strategy.Processor
	appProcs  map[string]*strategy.Processor
	appProc   *strategy.Processor
	steps     int
	usage     llm.Usage
	apps      int
	// emitMu serializes observer calls: observations are collected in
	// parallel, and each reports its dispatch.
	emitMu sync.Mutex
}

// New checks the options and builds the strategy pipelines.
func New(opts Options) (*Session, error) {
	switch {
	case opts.Model == nil:
		return nil, errors.New("agent: no model")
	case opts.Dispatcher == nil:
		return nil, errors.New("agent: no dispatcher")
	case opts.Prompts == nil:
		return nil, errors.New("agent: no prompts")
	}
	if opts.Mode == "" {
		opts.Mode = strategy.ModeTools
	}
	if opts.Registry == nil {
		opts.Registry = builtins()
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = DefaultMaxRounds
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	switch {
	case opts.Limits.MaxRetries == 0:
		opts.Limits.MaxRetries = DefaultMaxRetries
	case opts.Limits.MaxRetries < 0:
		opts.Limits.MaxRetries = 0
	}
	s := &Session{opts: opts, board: &memory.Blackboard{}, appProcs: map[string]*strategy.Processor{},
		artifacts: &memory.Artifacts{Threshold: opts.Limits.MaxResultChars, Head: opts.Limits.ArtifactHead}}
	var err error
	if s.hostProc, err = s.processor("host", opts.HostPipeline); err != nil {
		return nil, err
	}
	if s.appProc, err = s.processor("app", opts.AppPipeline); err != nil {
		return nil, err
	}
	for app, specs := range opts.AppPipelines {
		if s.appProcs[app], err = s.processor("app "+app, specs); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// builtins is the registry of the built-in strategies that sessions
// without one of their own share: nothing registers on it.
var builtins = sync.OnceValue(strategy.NewRegistry)

func (s *Session) processor(who string, specs []strategy.Spec) (*strategy.Processor, error) {
	if len(specs) == 0 {
		specs = strategy.DefaultPipeline()
	}
	entries, err := s.opts.Registry.Build(specs)
	if err != nil {
		return nil, fmt.Errorf("agent: %s pipeline: %w", who, err)
	}
	mw := s.opts.Middleware
	if s.opts.Observer != nil {
		mw = append([]strategy.Middleware{s.announceDecision}, mw...)
	}
	return strategy.NewProcessor(entries, mw...)
}

// announceDecision tells the observer what the model decided as soon as the
// LLM_INTERACTION phase has decided it, so a live view shows the plan before
// its (possibly long) execution. A session without an observer has no
// need of it.
func (s *Session) announceDecision(next strategy.Handler) strategy.Handler {
	return func(ctx context.Context, pc *strategy.Context) error {
		had := pc.Decided()
		err := next(ctx, pc)
		if !had && pc.Decided() && pc.Phase() == strategy.LLMInteraction {
			d := pc.Decision()
			e := about(EventDecision, pc)
			e.Phase = "" // a decision is reported for the step, not the phase
			e.To, e.Decision, e.Usage, e.Attempts = d.Status, d, pc.Usage(), pc.Attempts()
			s.emit(e)
		}
		return err
	}
}

// Blackboard is the session's shared blackboard.
func (s *Session) Blackboard() *memory.Blackboard { return s.board }

// Run works the request to the end and says how it ended. It never returns
// nil; infrastructure failures end in status ERROR with Outcome.Err set.
func (s *Session) Run(ctx context.Context, request string) *Outcome {
	var out *Outcome
	if s.opts.DirectApp != "" {
		out = s.runDirect(ctx, s.opts.DirectApp, request)
	} else {
		out = s.newHost(request).run(ctx)
	}
	out.Steps, out.Usage = s.steps, s.usage
	out.Subtasks = s.board.Notes()
	return out
}

func (s *Session) emit(e Event) {
	if s.opts.Observer != nil {
		s.emitMu.Lock()
		defer s.emitMu.Unlock()
		s.opts.Observer(e)
	}
}

// setup is what every agent's context is made with; the agent adds who it
// is and what it works on.
func (s *Session) setup(a strategy.Agent, maxSteps int) strategy.Setup {
	return strategy.Setup{Agent: a, Mode: s.opts.Mode, Model: s.opts.Model, Dispatcher: s.opts.Dispatcher,
		Prompts: s.opts.Prompts, Board: s.board, Artifacts: s.artifacts, Confirmer: s.opts.Confirmer, Limits: s.opts.Limits, MaxSteps: maxSteps,
		Retriever: s.opts.Retriever}
}

// newContext makes an agent's processing context, with the session's
// observers around its model and dispatcher.
func (s *Session) newContext(set strategy.Setup) *strategy.Context {
	if s.opts.OnChunk != nil {
		name := set.Agent.Name
		set.OnChunk = func(c llm.Chunk) { s.opts.OnChunk(name, c) }
	}
	if s.opts.Observer == nil {
		return strategy.NewContext(set)
	}
	// The observers name the agent and its step: they read the context,
	// which exists once it is made from what they are part of.
	model := &observedModel{s: s, next: set.Model}
	disp := &observedDispatcher{s: s, next: set.Dispatcher}
	var pc *strategy.Context
	set.Model, set.Dispatcher = model, disp
	set.OnRetry = func(err error, wait time.Duration) {
		e := about(EventRetry, pc)
		e.Phase, e.Subtask = "", ""
		e.Err, e.Duration = err, wait
		s.emit(e)
	}
	pc = strategy.NewContext(set)
	model.pc, disp.pc = pc, pc
	return pc
}
