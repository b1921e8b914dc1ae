package prompts

import (
	"fmt"

	"github.com/saucerhq/saucer/command"
)

// The two ways a model can act, chosen per model.
const (
	// ModeTools is native tool calling: the model calls the app's tools and
	// the control tools, so the prompt need not describe their schemas.
	ModeTools = "tools"
	// ModeJSON is the JSON reply: the model answers with one Reply object,
	// so the prompt lists the tools, their input schemas and the reply schema.
	ModeJSON = "json"
)

// App is one tool namespace on the device (an MCP server), as the host
// agent sees it when choosing who does a subtask.
type App struct {
	Name        string
	Description string
	Tools       []command.ToolInfo
}

// Note is a finished subtask's outcome on the shared blackboard. Both
// agents see the notes, so later subtasks can build on earlier results.
type Note struct {
	Subtask string
	App     string
	// Status is the final status of the subtask, e.g. FINISH or FAIL.
	Status string
	// Result is the subtask's answer (FINISH) or the reason it failed (FAIL).
	Result string
}

// Observation is one piece of what the agent saw since its last reply:
// a tool's result or a data-collection reading, named by its source.
type Observation struct {
	Name    string
	Content string
}

// HostData is what the host templates (host_system, host_user,
// host_examples, host_status) are rendered with.
type HostData struct {
	Request string
	// AnswerFormat is the rule the task's final answer must follow (a
	// single integer, digits only, say), when the task states one. It is
	// fixed for the task, so the first user turn carries it, and the
	// system prompt's finishing rule refers to it.
	AnswerFormat string
	Device       command.DeviceInfo
	Apps         []App
	Notes        []Note
	// Mode is ModeTools or ModeJSON.
	Mode string
	// Round counts from 1; MaxRounds 0 means no limit is shown.
	Round, MaxRounds int
	// Knowledge is what was learned before that fits the request
	// (experience, demonstrations, help, each with its source), in the
	// first user turn; "" for none.
	Knowledge string
}

// AppData is what the app templates (app_system, app_user, app_examples,
// app_status) are rendered with.
type AppData struct {
	// Request is the user's whole request, so that the app agent understands
	// the purpose of its subtask.
	Request string
	// AnswerFormat is the task's answer rule (see HostData.AnswerFormat):
	// the subtask that yields the final answer reports it that way.
	AnswerFormat string
	Subtask      string
	// App is the name of the app (tool namespace) the agent works with.
	App string
	// Alone: no host agent; the agent works the whole request.
	Alone        bool
	Tools        []command.ToolInfo
	Device       command.DeviceInfo
	Observations []Observation
	// EarlierNotes are the notes of the subtasks that finished before the
	// agent started, in its first user turn; Notes, in the status turn,
	// those that finished since (subtasks running beside it).
	EarlierNotes []Note
	Notes        []Note
	// Mode is ModeTools or ModeJSON.
	Mode string
	// Step counts from 1; MaxSteps 0 means no limit is shown.
	Step, MaxSteps int
	// Knowledge is what was learned before that fits the subtask (see
	// HostData.Knowledge).
	Knowledge string
}

// Validate reports a mode the templates do not know, which would otherwise
// silently render the wrong instructions.
func (d HostData) Validate() error { return validMode(d.Mode) }

// Validate reports a mode the templates do not know, which would otherwise
// silently render the wrong instructions.
func (d AppData) Validate() error { return validMode(d.Mode) }

func validMode(mode string) error {
	if mode != ModeTools && mode != ModeJSON {
		return fmt.Errorf("prompts: mode %q is not known; use %q or %q", mode, ModeTools, ModeJSON)
	}
	return nil
}

// ConstellationData is what the constellation agent's templates
// (constellation_system, constellation_status) are rendered with: the
// request, the devices it may use, the graph as it stands and what
// happened since the planner's last step.
type ConstellationData struct {
	Request string
	Devices []ConstellationDevice
	// Graph is the graph's summary, one node a line; Events say what
	// ended or changed since the last step.
	Graph  string
	Events []string
	// Step counts the planner's steps from 1; MaxSteps 0 means no limit
	// is shown.
	Step, MaxSteps int
}

// ConstellationDevice is a device the constellation may put tasks on.
type ConstellationDevice struct {
	ID       string
	Platform string
	Apps     []string
	// Sandbox is the root image its tools run in, empty on the host;
	// Labels what the deployment says of it.
	Sandbox string
	Labels  []string
}
