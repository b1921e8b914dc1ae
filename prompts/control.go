package prompts

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/saucerhq/saucer/command"
)

// Names of the control tools: in tools mode the agents call these, besides
// the app's own tools, to assign work and to end it.
const (
	AssignTool = "assign_subtask"
	FinishTool = "finish_task"
	FailTool   = "fail_task"
	// AskUserTool puts a question to the user (PENDING); the answer comes
	// back as its result.
	AskUserTool = "ask_user"
	// ApprovalTool, called beside actions, asks the user to approve them
	// before they run (CONFIRM).
	ApprovalTool = "request_approval"
	// ReadArtifactTool reads a value too large to repeat in every request
	// (memory.Artifacts): a byte range or the lines that match. The agent
	// answers it, not the device.
	ReadArtifactTool = "read_artifact"
)

// IsControl reports whether name is a control tool rather than a tool of
// the device.
func IsControl(name string) bool {
	switch name {
	case AssignTool, FinishTool, FailTool, AskUserTool, ApprovalTool, ReadArtifactTool:
		return true
	}
	return false
}

// AskArgs are the arguments of ask_user.
type AskArgs struct {
	Question string `json:"question" jsonschema:"required" jsonschema_description:"The question, complete in itself: what you need to know and why."`
}

// ReadArtifactArgs are the arguments of read_artifact.
type ReadArtifactArgs struct {
	Handle string `json:"handle" jsonschema:"required" jsonschema_description:"The artifact's handle, as a string: the hex digits after 'artifact' in a shortened value, e.g. \"3f9a0c1d2b4e\"."`
	Offset int    `json:"offset,omitempty" jsonschema_description:"The first byte to read, from 0."`
	Length int    `json:"length,omitempty" jsonschema_description:"How many bytes to read."`
	Grep   string `json:"grep,omitempty" jsonschema_description:"A regular expression: the lines that match, with their numbers, instead of a byte range."`
}

// ApprovalArgs are the arguments of request_approval.
type ApprovalArgs struct {
	Reason string `json:"reason" jsonschema:"required" jsonschema_description:"What the other calls of this reply will change, and why it needs the user's approval."`
}

// ControlTool is a control tool offered to the model as a native tool. Its
// fields match llm.Tool, so llm.Tool(ct) converts it.
type ControlTool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments: self-contained, with
	// no $ref, $defs, $id or $schema.
	Parameters json.RawMessage
}

// AssignArgs are the arguments of assign_subtask.
type AssignArgs struct {
	App     string `json:"app" jsonschema:"required" jsonschema_description:"Name of the app that does the subtask, exactly as listed."`
	Subtask string `json:"subtask" jsonschema:"required" jsonschema_description:"The subtask, complete in itself: what to do, with the exact names, paths and values it needs, and what to report back."`
	Final   bool   `json:"final,omitempty" jsonschema_description:"true when this subtask's result will be by itself the final answer to the user's request: the task ends with it as soon as the subtask finishes, without another round (if it fails, its note comes back as usual). Only on the last subtask of a reply."`
}

// FinishArgs are the arguments of finish_task.
type FinishArgs struct {
	Result string `json:"result" jsonschema:"required" jsonschema_description:"The answer, complete: the facts, values or paths that were asked for."`
}

// FailArgs are the arguments of fail_task.
type FailArgs struct {
	Reason string `json:"reason" jsonschema:"required" jsonschema_description:"Why it cannot be done, and what was tried."`
}

// HostControlTools are the host agent's tools in tools mode. The slice is
// shared: callers must not change it.
func HostControlTools() []ControlTool { return hostControl() }

// The control tools' schemas are reflected from Go types once per process:
// reflecting them at every step cost about half a step.
var hostControl = sync.OnceValue(func() []ControlTool {
	return []ControlTool{
		{
			Name: AssignTool,
			Description: "Give one subtask to the agent of one app. That agent sees the user's request and the notes of finished subtasks, " +
				"but not your plan, so write the subtask so that it can be done from its text alone. " +
				"Several calls in one reply run one after another, in order.",
			Parameters: schemaOf(&AssignArgs{}),
		},
		{
			Name: FinishTool,
			Description: "End the task because the notes show the request is done. " +
				"result is the final answer for the user, with the facts they asked for. Call it alone.",
			Parameters: schemaOf(&FinishArgs{}),
		},
		{
			Name:        FailTool,
			Description: "End the task because it cannot be done with the available apps. Call it alone.",
			Parameters:  schemaOf(&FailArgs{}),
		},
		{
			Name: AskUserTool,
			Description: "Ask the user a question when the request is ambiguous and only the user can settle it. " +
				"Call it alone; the answer comes back as its result.",
			Parameters: schemaOf(&AskArgs{}),
		},
	}
})

// AppControlTools are the app agent's control tools in tools mode, offered
// beside the app's own tools. The slice is shared: callers must not change
// it.
func AppControlTools() []ControlTool { return appControl() }

// AloneControlTools are the control tools of an app agent that works a
// whole request alone, with no host (agent.direct_app): the app agent's,
// with finish_task and fail_task speaking of the request, whose answer
// the result is. The slice is shared: callers must not change it.
func AloneControlTools() []ControlTool { return aloneControl() }

var aloneControl = sync.OnceValue(func() []ControlTool {
	out := slices.Clone(appControl())
	for i := range out {
		switch out[i].Name {
		case FinishTool:
			out[i].Description = "Finish the request. Call it only after tool results have shown that it is done, and call it alone. " +
				"result is the final answer for the user: the facts, values or paths that were asked for."
		case FailTool:
			out[i].Description = "Give up the request because it cannot be done with these tools. Call it alone."
		}
	}
	return out
})

var appControl = sync.OnceValue(func() []ControlTool {
	return []ControlTool{
		{
			Name: FinishTool,
			Description: "Finish your subtask. Call it only after tool results have shown that the subtask is done, and call it alone. " +
				"result is the subtask's answer: the facts, values or paths that were asked for.",
			Parameters: schemaOf(&FinishArgs{}),
		},
		{
			Name:        FailTool,
			Description: "Give up your subtask because it cannot be done with these tools. Call it alone.",
			Parameters:  schemaOf(&FailArgs{}),
		},
		{
			Name: AskUserTool,
			Description: "Ask the user something only they can tell you (a name, a choice, a missing value). " +
				"Call it alone; the answer comes back as its result.",
			Parameters: schemaOf(&AskArgs{}),
		},
		{
			Name: ApprovalTool,
			Description: "Call it in the same reply as actions that are risky or destructive (delete, overwrite, kill, install, send): " +
				"they run only if the user approves, and its result says what the user decided.",
			Parameters: schemaOf(&ApprovalArgs{}),
		},
		{
			Name: ReadArtifactTool,
			Description: "Read what was left out of a value too long to show whole (a result shortened around a line that names an artifact handle " +
				"and the bytes left out): bytes from offset, or with grep the lines that match.",
			Parameters: schemaOf(&ReadArtifactArgs{}),
		},
	}
})

// ConstellationControlTools are the constellation planner's ways to end,
// offered beside its graph tools (add_node, ...): finish_task and
// fail_task, under the app agent's names, but for the whole request,
// which the planner plans and never carries out itself. The slice is
// shared: callers must not change it.
func ConstellationControlTools() []ControlTool { return constellationControl() }

var constellationControl = sync.OnceValue(func() []ControlTool {
	return []ControlTool{
		{
			Name: FinishTool,
			Description: "End the whole request as done, once the tasks it needs have completed and their results answer it. " +
				"result is the final answer for the user, with the values they asked for, taken from the tasks' results. " +
				"Call it alone. (finish_when_done ends it by itself when the last task's result is the answer.)",
			Parameters: schemaOf(&FinishArgs{}),
		},
		{
			Name: FailTool,
			Description: "End the whole request as failed, when it cannot be done with these devices, " +
				"even by moving or changing the tasks that failed. Call it alone.",
			Parameters: schemaOf(&ConstellationFailArgs{}),
		},
	}
})

// ConstellationFailArgs are the arguments of the planner's fail_task.
type ConstellationFailArgs struct {
	Reason string `json:"reason" jsonschema:"required" jsonschema_description:"Why the request cannot be done: which tasks failed, on which devices, and what was tried."`
}

// StatusArgs are the arguments of command_status.
type StatusArgs struct {
	CallID string  `json:"call_id" jsonschema:"required" jsonschema_description:"The call_id of the command, as its result gave it."`
	Wait   float64 `json:"wait,omitempty" jsonschema_description:"Seconds to wait for the command to end before answering (at most 60); 0 answers at once."`
}

// CancelArgs are the arguments of cancel_command.
type CancelArgs struct {
	CallID string `json:"call_id" jsonschema:"required" jsonschema_description:"The call_id of the command to stop."`
}

// BackgroundTools look after a command left running in the background
// (its result says "running" with a call_id): they are offered to an app
// agent beside the app's tools once one of its commands was left so
// (agent.detach_after), and run on the device, which answers them itself
// (command.CommandStatus, command.CancelCommand). The slice is shared:
// callers must not change it.
func BackgroundTools() []ControlTool { return background() }

var background = sync.OnceValue(func() []ControlTool {
	return []ControlTool{
		{
			Name: command.CommandStatus,
			Description: "See how a command that is still running in the background is doing: its latest output or progress, " +
				"and its result once it has ended. Set wait to wait for its end a while instead of asking again and again.",
			Parameters: schemaOf(&StatusArgs{}),
		},
		{
			Name: command.CancelCommand,
			Description: "Stop a command that is still running in the background (a shell command is killed with every process it started) " +
				"and see how it ended. Use it when its output shows it is stuck or doing the wrong thing.",
			Parameters: schemaOf(&CancelArgs{}),
		},
	}
})

func schemaOf(v any) json.RawMessage {
	b, err := json.Marshal(reflectSchema(v))
	if err != nil {
		// The schemas are built from our own types; failing here is a bug.
		panic(fmt.Sprintf("prompts: encode control tool schema: %v", err))
	}
	// Written canonically, as a recording keeps them: a replay finds the
	// recorded schemas equal byte for byte, at every call, instead of
	// writing both canonically to compare them.
	return CanonicalJSON(b)
}
