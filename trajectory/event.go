package trajectory

import (
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

// Format names this version of the trajectory format. A reader refuses a
// trajectory whose session_start names another major version.
const Format = "saucer.trajectory/v1"

// File and directory names inside a trajectory directory.
const (
	EventsFile   = "trajectory.jsonl"
	ArtifactsDir = "artifacts"
)

// Type says what an event line reports.
type Type string

// The event types, in the order a session produces them.
const (
	TypeSessionStart Type = "session_start"
	TypeAgentStart   Type = "agent_start"
	TypeModelCall    Type = "model_call"
	TypeDispatch     Type = "dispatch"
	TypeDecision     Type = "decision"
	TypeStep         Type = "step"
	TypeTransition   Type = "transition"
	TypeAgentEnd     Type = "agent_end"
	TypeSessionEnd   Type = "session_end"
	// TypeProgress is a running command's progress report, recorded at
	// most once a second per command, plus its last report (seed 004's
	// throttled progress records). Its place among the other events
	// depends on timing: Normalize leaves it out, and a replay neither
	// needs nor produces it.
	TypeProgress Type = "progress"
)

// Types lists every event type.
var Types = []Type{TypeSessionStart, TypeAgentStart, TypeModelCall, TypeDispatch, TypeDecision, TypeStep, TypeTransition, TypeAgentEnd, TypeSessionEnd, TypeProgress}

// Event is one line of trajectory.jsonl. Seq, Time and Type are always set;
// which other fields are set depends on Type (see required and the schema).
type Event struct {
	// Seq numbers the lines from 1 without gaps.
	Seq  int       `json:"seq" jsonschema:"minimum=1"`
	Time time.Time `json:"time"`
	Type Type      `json:"type" jsonschema:"enum=session_start,enum=agent_start,enum=model_call,enum=dispatch,enum=decision,enum=step,enum=transition,enum=agent_end,enum=session_end,enum=progress"`

	// Who: the agent ("host", "app:files#1", or "check" for a checker's
	// commands), its role (host, app), its app and subtask.
	Agent   string `json:"agent,omitempty"`
	Role    string `json:"role,omitempty"`
	App     string `json:"app,omitempty"`
	Subtask string `json:"subtask,omitempty"`
	// Round is the host agent's round, Step the agent's step (from 1).
	Round int `json:"round,omitempty"`
	Step  int `json:"step,omitempty"`
	// Phase is the processing phase a model call or dispatch was made in.
	Phase string `json:"phase,omitempty"`

	// Session is set on session_start.
	Session *Session `json:"session,omitempty"`
	// Call is set on model_call.
	Call *Call `json:"call,omitempty"`
	// Commands and Results are set on dispatch and step events;
	// Results[i] answers Commands[i].
	Commands []command.Command `json:"commands,omitempty"`
	Results  []command.Result  `json:"results,omitempty"`
	// Decision is the model's parsed reply (decision and step events).
	Decision *Decision `json:"decision,omitempty"`
	// Status is the state a decision asked for or a step reached (empty
	// for a step that failed before the model decided).
	Status string `json:"status,omitempty"`
	// From and To are set on transition events.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Observations are what a step's data collection saw.
	Observations []Observation `json:"observations,omitempty"`
	// Knowledge is what was learned before that the agent was given for
	// its prompts, on the step that asked for it (its first); a replay
	// gives the agent the same.
	Knowledge *Knowledge `json:"knowledge,omitempty"`
	Usage     *llm.Usage `json:"usage,omitempty"`
	// Attempts counts a step's model calls, re-asks included.
	Attempts   int     `json:"attempts,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	// TimingsMS is a step's wall time per processing phase.
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
	// Errors are a step's non-fatal strategy errors; Error is the failure
	// that ended a step, an agent or a dispatch.
	Errors []string `json:"errors,omitempty"`
	Error  string   `json:"error,omitempty"`
	// Note is an app agent's outcome (agent_end).
	Note *Note `json:"note,omitempty"`
	// End is set on session_end.
	End *End `json:"end,omitempty"`
	// Progress is set on progress events.
	Progress *command.Progress `json:"progress,omitempty"`
}

// Session describes a recorded session: what was asked, of which model,
// with which configuration and prompts, on which device.
type Session struct {
	ID string `json:"id"`
	// Format is the trajectory format, Format when written by this package.
	Format string `json:"format"`
	Task   string `json:"task"`
	// AnswerFormat is the rule for the final answer given with the task
	// (session.Options.AnswerFormat); a replay gives it again.
	AnswerFormat string `json:"answer_format,omitempty"`
	// Model is the model spec (PROVIDER:MODEL); the provider's own name for
	// the model that answered is in each call's response.
	Model string `json:"model"`
	Mode  string `json:"mode,omitempty"`
	// Version is the Saucer build that recorded the session.
	Version string `json:"version,omitempty"`
	// Config is the effective configuration as YAML, secrets redacted.
	Config  string              `json:"config,omitempty"`
	Prompts *Prompts            `json:"prompts,omitempty"`
	Device  *command.DeviceInfo `json:"device,omitempty"`
	Workdir string              `json:"workdir,omitempty"`
	// Apps are the apps (tool namespaces) the host agent was told about,
	// with their descriptions.
	Apps map[string]string `json:"apps,omitempty"`
	// Labels are free tags: the eval suite, case and trial, for example.
	Labels map[string]string `json:"labels,omitempty"`
}

// Prompts identify the prompt templates a session used.
type Prompts struct {
	// Dir is the override directory, empty for the built-in templates.
	Dir string `json:"dir,omitempty"`
	// Digest is "sha256:<hex>" over the override files (names and
	// contents), empty without overrides. The built-in templates are
	// identified by Session.Version.
	Digest string `json:"digest,omitempty"`
}

// Call is one model call: the full request, the raw reply or the error,
// and the latency.
type Call struct {
	// N numbers the session's model calls from 1.
	N int `json:"n"`
	// Request is the full request, as readers return it. On disk a call
	// whose request repeats the start of an earlier one's carries only the
	// rest, with Base saying where the start is: each message is written
	// once however many requests repeat it.
	Request  llm.Request   `json:"request"`
	Base     *CallBase     `json:"base,omitempty"`
	Response *llm.Response `json:"response,omitempty"`
	Error    *CallError    `json:"error,omitempty"`
	// Fallbacks says, when the model was passed over for a fallback during
	// this call, each switch and why ("openai:gpt-4o is unavailable,
	// asking ollama:qwen2.5 instead: ..."); Response.Model names who
	// answered.
	Fallbacks []string `json:"fallbacks,omitempty"`
	// LatencyMS is the call's wall time in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
}

// CallBase says which earlier call a recorded request builds on: its first
// Messages messages, and its tools when Tools is set, come before this
// call's own.
type CallBase struct {
	Call     int  `json:"call" jsonschema:"minimum=1"`
	Messages int  `json:"messages" jsonschema:"minimum=0"`
	Tools    bool `json:"tools,omitempty"`
}

// CallError is a failed model call.
type CallError struct {
	// Kind is the llm.ErrorKind with underscores (rate_limit, auth,
	// context_length, timeout, server, empty_reply, bad_request, unknown).
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// RetryAfterMS is the wait the provider asked for, when it asked: a
	// replay decides to retry, or not, as the session did.
	RetryAfterMS float64 `json:"retry_after_ms,omitempty"`
}

// Decision is the model's reply as the agent understood it.
type Decision struct {
	Observation string   `json:"observation,omitempty"`
	Thought     string   `json:"thought,omitempty"`
	Status      string   `json:"status"`
	Plan        []string `json:"plan,omitempty"`
	Comment     string   `json:"comment,omitempty"`
	Result      string   `json:"result,omitempty"`
	Actions     []Action `json:"actions,omitempty"`
}

// Action is one thing the model asked to do.
type Action struct {
	Function  string         `json:"function"`
	Arguments map[string]any `json:"arguments"`
	CallID    string         `json:"call_id,omitempty"`
	Invalid   string         `json:"invalid,omitempty"`
}

// Observation is one piece of collected data shown to the model.
type Observation struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// Knowledge is what an agent was given from what was learned before: the
// text its prompts showed and the sources of its entries.
type Knowledge struct {
	Text    string   `json:"text,omitempty"`
	Sources []string `json:"sources,omitempty"`
}

// Note is how an app agent's subtask ended.
type Note struct {
	Subtask string `json:"subtask"`
	App     string `json:"app"`
	Status  string `json:"status"`
	Result  string `json:"result"`
}

// End is how the session ended.
type End struct {
	// Status is FINISH, FAIL or ERROR.
	Status    string    `json:"status"`
	Answer    string    `json:"answer"`
	Cancelled bool      `json:"cancelled,omitempty"`
	Rounds    int       `json:"rounds"`
	Steps     int       `json:"steps"`
	Usage     llm.Usage `json:"usage"`
	// Cost is what the model calls cost as a person reads it: "$0.0123",
	// "~$0.0123 (estimated)" (Usage.Estimated: a server reported no usage
	// and Saucer counted the tokens) or "cost unknown" (a model without a
	// price); CostUSD is the figure, absent when unknown. Recordings made
	// before these fields have neither.
	Cost    string   `json:"cost,omitempty"`
	CostUSD *float64 `json:"cost_usd,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Budget, when set, says which budget stopped the session and what it
	// had spent (the Answer says it too).
	Budget string `json:"budget,omitempty"`
	// DurationMS is the session's wall time.
	DurationMS float64 `json:"duration_ms"`
}

// required lists, per event type, the fields a line of that type must have
// (beyond seq, time and type). The reader checks them and the schema says
// them, from this one table.
var required = map[Type][]string{
	TypeSessionStart: {"session"},
	TypeAgentStart:   {"agent", "role"},
	TypeModelCall:    {"agent", "call"},
	TypeDispatch:     {"agent", "commands", "results"},
	TypeDecision:     {"agent", "step", "status", "decision"},
	TypeStep:         {"agent", "step"},
	TypeTransition:   {"agent", "from", "to"},
	TypeAgentEnd:     {"agent", "role"},
	TypeSessionEnd:   {"end"},
	TypeProgress:     {"agent", "progress"},
}

// MS converts a duration to the milliseconds the format writes.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Duration converts milliseconds back to a duration.
func Duration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// KindName is the recorded name of a model error kind: "rate_limit" for
// llm.KindRateLimit.
func KindName(k llm.ErrorKind) string { return strings.ReplaceAll(k.String(), " ", "_") }

// Kind reads a recorded error kind back; unknown names are KindUnknown.
func Kind(name string) llm.ErrorKind {
	for k := llm.KindUnknown; k <= llm.KindBadRequest; k++ {
		if KindName(k) == name {
			return k
		}
	}
	return llm.KindUnknown
}
