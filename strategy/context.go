package strategy

import (
	"context"
	"slices"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy/internal/computeruse"
)

// Mode is how the model acts: native tool calls, or one JSON reply.
type Mode string

const (
	ModeTools Mode = "tools"
	ModeJSON  Mode = "json"
)

// ParseMode accepts "tools" or "json"; "" means tools.
func ParseMode(s string) (Mode, bool) {
	switch s {
	case "", "tools", "tool", "native":
		return ModeTools, true
	case "json":
		return ModeJSON, true
	}
	return "", false
}

// Confirmer decides whether commands that need the user's approval may run.
// It is asked before the commands run, never after.
type Confirmer interface {
	Confirm(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error)
}

// Agent says who a processing context belongs to.
type Agent struct {
	Name string
	Role fsm.Role
	// App is the tool namespace an app agent works with.
	App string
}

// Action is one thing the model asked to do.
type Action struct {
	Function  string         `json:"function"`
	Arguments map[string]any `json:"arguments"`
	// CallID is the model's id for a native tool call (tools mode).
	CallID string `json:"call_id,omitempty"`
	// Invalid says why the action cannot run (arguments that are not a JSON
	// object, even after repair); the model gets it back as a failure.
	Invalid string `json:"invalid,omitempty"`
}

// Decision is the model's reply, the same whichever way the model acted.
type Decision struct {
	Observation string    `json:"observation,omitempty"`
	Thought     string    `json:"thought,omitempty"`
	Status      fsm.State `json:"status"`
	Plan        []string  `json:"plan,omitempty"`
	Comment     string    `json:"comment,omitempty"`
	Result      string    `json:"result,omitempty"`
	Actions     []Action  `json:"actions,omitempty"`
}

// Context is the processing context of one agent: what the agent works on
// and with (fixed when it is made, see Setup), what it has learnt of the
// device (once), and what the current step has done so far. Strategies
// read it and act on it through its methods, which say what a strategy
// may do; only the agent begins a step.
type Context struct {
	// The agent's: fixed by NewContext.
	agent      Agent
	request    string
	subtask    string
	mode       Mode
	model      llm.Model
	dispatcher dispatcher.Dispatcher
	prompts    *prompts.Set
	memory     *memory.Memory
	board      *memory.Blackboard
	artifacts  *memory.Artifacts
	confirmer  Confirmer
	runSubtask func(ctx context.Context, app, subtask string) memory.Note
	onChunk    func(llm.Chunk)
	onRetry    func(err error, wait time.Duration)
	limits     Limits
	maxSteps   int

	// Device knowledge, learnt once and kept across steps.
	device command.DeviceInfo
	// alone: an app agent with no host (Setup.Alone).
	alone bool
	tools []command.ToolInfo
	apps  []prompts.App

	// The step: cleared by BeginStep.
	round, step  int
	observations []prompts.Observation
	images       []llm.Image
	messages     []llm.Message
	response     *llm.Response
	decision     *Decision
	attempts     int
	usage        llm.Usage
	commands     []command.Command
	results      []command.Result
	status       fsm.State
	visited      []fsm.State
	notes        []string
	errs         []error
	timings      phaseTimes
	running      string
	phase        Phase

	values map[any]any
	intro  []llm.Message
	turns  map[stepKey]turns
	// folded is what the last fold of the history left (nil before the
	// first).
	folded *foldState
	// native are the tools offered in tools mode, for nativeOf tools,
	// with read_artifact when nativeRead.
	native     []llm.Tool
	nativeOf   int
	nativeRead bool
	// boardNotes are the blackboard's notes as prompts show them, made
	// again only when a note was added: the blackboard only grows.
	boardNotes []prompts.Note
	// introNotes is how many of them an app agent's first user turn
	// holds.
	introNotes int
	// retriever and knowledge: what was learned before, asked once for
	// the first prompt (nil: not asked yet, or no retriever).
	retriever Retriever
	knowledge *Retrieved
	// computer is the display the model's native computer-use tool acts
	// on, once the first screenshot gave it (nil: not offered); see
	// computer.go.
	computer *computeruse.Display
	// computerTried: the first screenshot for computer use was taken (or
	// failed), once per agent.
	computerTried bool
}

// Setup is what a processing context is made with: who the agent is, what
// it works on and what it works with. Package agent fills it; so can a
// test of a strategy. The zero value of a field means none.
type Setup struct {
	Agent   Agent
	Request string // the user's request
	Subtask string // an app agent's subtask
	Mode    Mode
	// Model and Dispatcher are what the agent asks and acts through.
	Model      llm.Model
	Dispatcher dispatcher.Dispatcher
	Prompts    *prompts.Set
	// Memory is the agent's history; nil means a new, empty one.
	Memory *memory.Memory
	// Board is shared by the session's agents.
	Board *memory.Blackboard
	// Artifacts keep the values too large for every request (shared by
	// the session's agents); nil cuts them at Limits.MaxResultChars.
	Artifacts *memory.Artifacts
	Confirmer Confirmer
	// RunSubtask runs an app agent for a host agent's assignment.
	RunSubtask func(ctx context.Context, app, subtask string) memory.Note
	// OnChunk, when set, streams the model's reply as it arrives.
	OnChunk func(llm.Chunk)
	// OnRetry, when set, is told before each wait to retry a model call.
	OnRetry func(err error, wait time.Duration)
	Limits  Limits
	// MaxSteps is the agent's step budget (rounds, for the host agent).
	MaxSteps int
	// Device is what is known of the device before discovery.
	Device command.DeviceInfo
	// Alone marks an app agent that works the whole request with no
	// host agent: its discovery asks the device about itself, and its
	// prompt says no one else works on the request.
	Alone bool
	// Apps are the apps known before discovery, with the descriptions the
	// agent was configured with; discovery keeps the descriptions.
	Apps []prompts.App
	// Retriever, when set, gives the agent what was learned before for
	// its first prompt.
	Retriever Retriever
}

// NewContext makes the processing context of one agent.
func NewContext(s Setup) *Context {
	pc := &Context{
		agent: s.Agent, request: s.Request, subtask: s.Subtask, mode: s.Mode,
		model: s.Model, dispatcher: s.Dispatcher, prompts: s.Prompts, memory: s.Memory, board: s.Board, artifacts: s.Artifacts,
		confirmer: s.Confirmer, runSubtask: s.RunSubtask, onChunk: s.OnChunk, onRetry: s.OnRetry,
		limits: s.Limits, maxSteps: s.MaxSteps, device: s.Device, apps: slices.Clone(s.Apps), alone: s.Alone,
		retriever: s.Retriever,
	}
	if pc.memory == nil {
		pc.memory = &memory.Memory{}
	}
	return pc
}

// Limits bound an agent's work.
type Limits struct {
	// MaxRetries is how often a reply that cannot be used is re-asked, and
	// how often a retryable provider error is retried.
	MaxRetries int
	// RetryBackoff is the first wait before retrying a provider error.
	RetryBackoff time.Duration
	// MaxResultChars is the most of one value (a result, an observation,
	// an argument the model wrote) a request carries: a longer one is kept
	// as an artifact, shown by its first ArtifactHead bytes and read on
	// demand with read_artifact. 0 is no bound.
	MaxResultChars int
	// ArtifactHead is how much of an artifact the request shows
	// (memory.DefaultArtifactHead when 0).
	ArtifactHead int
	// ConfirmDestructive asks the Confirmer before any command whose tool
	// is annotated destructive, even when the model did not ask.
	ConfirmDestructive bool
	// MaxRetryAfter caps how long a server may ask to wait before a retry
	// (0: llm.DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// Approve names the commands that need the user's approval before they
	// run, whatever the model said.
	Approve []ApprovalRule
	// Context bounds how much of the history each request carries; zero
	// fields take memory.DefaultPolicy.
	Context memory.Policy
	// DetachAfter leaves an app agent's command that runs longer than
	// this in the background (command.WithDetach): the model gets its
	// latest progress and, from then on, the tools command_status and
	// cancel_command (prompts.BackgroundTools). Zero: commands are waited
	// for.
	DetachAfter time.Duration
	// ComputerUse offers a desktop app's agent its model's native
	// computer-use tool, where the model has one and the app the pixel
	// tools (agent.computer_use: auto); see computer.go.
	ComputerUse bool
}

// BeginStep starts step number step (in round round, for a host agent):
// it clears what the last step did. The agent calls it; a strategy never
// needs to.
func (pc *Context) BeginStep(round, step int) {
	pc.round, pc.step = round, step
	pc.observations = nil
	pc.images = nil
	pc.messages = nil
	pc.response = nil
	pc.decision = nil
	pc.attempts = 0
	pc.usage = llm.Usage{}
	pc.commands = nil
	pc.results = nil
	pc.status = ""
	pc.visited = nil
	pc.notes = nil
	pc.errs = nil
	pc.timings = phaseTimes{}
	pc.values = nil
}

func (pc *Context) addTiming(p Phase, d time.Duration) {
	if i := slices.Index(Phases, p); i >= 0 && i < len(pc.timings.d) {
		pc.timings.d[i] += d
		pc.timings.ran[i] = true
	}
}

// phaseTimes is the time a step spent in each phase so far, by the index
// of the phase in Phases: a step keeps no map of its own, and Timings
// makes the one it gives.
type phaseTimes struct {
	d   [4]time.Duration
	ran [4]bool
}

func (t *phaseTimes) asMap() map[Phase]time.Duration {
	var out map[Phase]time.Duration
	for i, ran := range t.ran {
		if ran {
			if out == nil {
				out = make(map[Phase]time.Duration, len(Phases))
			}
			out[Phases[i]] = t.d[i]
		}
	}
	return out
}

// Key is a typed slot in a processing context, for data that custom
// strategies pass to each other without the context knowing its type.
type Key[T any] struct{ name string }

// NewKey makes a key; the name is for debugging only, keys are compared by
// identity.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name} }

func (k *Key[T]) String() string { return k.name }

// Set stores v under k for the current step.
func Set[T any](pc *Context, k *Key[T], v T) {
	if pc.values == nil {
		pc.values = map[any]any{}
	}
	pc.values[k] = v
}

// Get returns the value stored under k in the current step.
func Get[T any](pc *Context, k *Key[T]) (T, bool) {
	v, ok := pc.values[k]
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}
