package strategy

import (
	"context"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
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

// Context is the typed processing context of one agent. The agent fills the
// session part once; the step part is reset before each step.
type Context struct {
	// Session: set by the agent, the same for every step.
	Agent      Agent
	Request    string // the user's request
	Subtask    string // an app agent's subtask
	Mode       Mode
	Model      llm.Model
	Dispatcher dispatcher.Dispatcher
	Prompts    *prompts.Set
	Memory     *memory.Memory
	Board      *memory.Blackboard
	Confirmer  Confirmer
	// RunSubtask runs an app agent for a host agent's assignment.
	RunSubtask func(ctx context.Context, app, subtask string) memory.Note
	// OnChunk, when set, streams the model's reply as it arrives.
	OnChunk func(llm.Chunk)
	// OnRetry, when set, is told before each wait to retry a model call.
	OnRetry func(err error, wait time.Duration)
	Limits  Limits
	// MaxSteps is the agent's step budget (rounds, for the host agent).
	MaxSteps int

	// Device knowledge, collected once and kept across steps.
	Device command.DeviceInfo
	Tools  []command.ToolInfo
	Apps   []prompts.App

	// Step: reset by BeginStep.
	Round, Step  int
	Observations []prompts.Observation
	// Images go with this step's request (on its status turn): the
	// screenshots of data collection.
	Images   []llm.Image
	Messages []llm.Message // the last request sent to the model
	Response *llm.Response // the last reply
	Decision *Decision
	Attempts int       // model calls this step, re-asks included
	Usage    llm.Usage // tokens this step, re-asks included
	Commands []command.Command
	Results  []command.Result
	// Status is where the step leaves the agent.
	Status fsm.State
	// Visited are states the step passed through before Status (CONFIRM
	// before a confirmed action runs, for example), in order.
	Visited []fsm.State
	// Notes are extra user turns to remember after this step.
	Notes   []string
	Errors  []error
	Timings map[Phase]time.Duration
	// Running and Phase name the strategy being run (for middleware).
	Running string
	Phase   Phase

	values map[any]any
	intro  []llm.Message
	turns  map[stepKey][]llm.Message
	// native are the tools offered in tools mode, for nativeOf tools.
	native   []llm.Tool
	nativeOf int
}

// Limits bound an agent's work.
type Limits struct {
	// MaxRetries is how often a reply that cannot be used is re-asked, and
	// how often a retryable provider error is retried.
	MaxRetries int
	// RetryBackoff is the first wait before retrying a provider error.
	RetryBackoff time.Duration
	// MaxResultChars caps one result's text in the prompt.
	MaxResultChars int
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
}

// BeginStep clears the per-step fields.
func (pc *Context) BeginStep(round, step int) {
	pc.Round, pc.Step = round, step
	pc.Observations = nil
	pc.Images = nil
	pc.Messages = nil
	pc.Response = nil
	pc.Decision = nil
	pc.Attempts = 0
	pc.Usage = llm.Usage{}
	pc.Commands = nil
	pc.Results = nil
	pc.Status = ""
	pc.Visited = nil
	pc.Notes = nil
	pc.Errors = nil
	pc.Timings = nil
	pc.values = nil
}

func (pc *Context) addTiming(p Phase, d time.Duration) {
	if pc.Timings == nil {
		pc.Timings = map[Phase]time.Duration{}
	}
	pc.Timings[p] += d
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
