package strategy

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
)

// What a strategy may read and do, by what it concerns. Slices and maps
// that the methods return are the caller's (Messages aside): changing them
// changes nothing in the context.

// The agent and its work.

// Agent is who the context belongs to.
func (pc *Context) Agent() Agent { return pc.agent }

// Request is the user's request.
func (pc *Context) Request() string { return pc.request }

// Subtask is an app agent's subtask ("" for the host agent).
func (pc *Context) Subtask() string { return pc.subtask }

// Mode is how the model acts: native tool calls or one JSON reply.
func (pc *Context) Mode() Mode { return pc.mode }

// Limits bound the agent's work.
func (pc *Context) Limits() Limits { return pc.limits }

// MaxSteps is the agent's step budget (rounds, for the host agent).
func (pc *Context) MaxSteps() int { return pc.maxSteps }

// Round is the host agent's round (0 for an app agent).
func (pc *Context) Round() int { return pc.round }

// Step is the number of the step under way, from 1.
func (pc *Context) Step() int { return pc.step }

// Running names the strategy being run, and Phase its phase: for
// middleware.
func (pc *Context) Running() string { return pc.running }

// Phase is the phase of the strategy being run.
func (pc *Context) Phase() Phase { return pc.phase }

// What the agent works with.

// Model is the model the agent asks. Complete asks it with the retry
// policy and counts the call in the step.
func (pc *Context) Model() llm.Model { return pc.model }

// Dispatcher sends commands to the device.
func (pc *Context) Dispatcher() dispatcher.Dispatcher { return pc.dispatcher }

// Prompts are the agent's templates.
func (pc *Context) Prompts() *prompts.Set { return pc.prompts }

// Memory is the agent's history of steps.
func (pc *Context) Memory() *memory.Memory { return pc.memory }

// Board is the blackboard the session's agents share.
func (pc *Context) Board() *memory.Blackboard { return pc.board }

// Complete asks the model, retrying provider errors that may pass (the
// one retry policy, within Limits), streaming the reply when the session
// streams, and counts each call and its usage in the step. The request's
// messages and the reply are the step's record of the call.
func (pc *Context) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	pc.messages = req.Messages
	resp, err := complete(ctx, pc, req)
	if resp != nil {
		pc.response = resp
	}
	return resp, err
}

// Confirm asks the user to approve commands before they run; without
// anyone to ask, the answer is no.
func (pc *Context) Confirm(ctx context.Context, cmds []command.Command, reason string) (bool, error) {
	return confirm(ctx, pc, cmds, reason)
}

// ErrNoSubtasks is RunSubtask's error in a context that cannot run
// subtasks (an app agent's).
var ErrNoSubtasks = errors.New("strategy: this agent cannot run subtasks (only a host agent can)")

// RunSubtask runs an app agent on a subtask, for a host agent's
// assignment, and returns how it ended.
func (pc *Context) RunSubtask(ctx context.Context, app, subtask string) (memory.Note, error) {
	if pc.runSubtask == nil {
		return memory.Note{}, ErrNoSubtasks
	}
	return pc.runSubtask(ctx, app, subtask), nil
}

// The device.

// Device is what the agent knows of the device.
func (pc *Context) Device() command.DeviceInfo { return pc.device }

// Tools are the tools the agent sees: its app's for an app agent, every
// app's for the host agent; nil until discovery.
func (pc *Context) Tools() []command.ToolInfo { return slices.Clone(pc.tools) }

// Apps are the apps (tool namespaces) the host agent can assign.
func (pc *Context) Apps() []prompts.App { return slices.Clone(pc.apps) }

// Learn records what discovery found: the device (unless zero) and the
// tools the agent sees; a host agent's apps are the tools' namespaces,
// with the descriptions it was configured with.
func (pc *Context) Learn(device command.DeviceInfo, tools []command.ToolInfo) {
	pc.learn(device, slices.Clone(tools))
}

// learn is Learn with a list of tools the context may keep: no one
// changes it (discovery's lists are shared, read-only).
func (pc *Context) learn(device command.DeviceInfo, tools []command.ToolInfo) {
	if !reflect.ValueOf(device).IsZero() {
		pc.device = device
	}
	if tools == nil {
		tools = []command.ToolInfo{}
	}
	pc.tools = tools
	pc.native = nil
	if pc.agent.Role == fsm.Host {
		pc.apps = groupApps(pc.tools, pc.apps)
	}
}

// The step so far.

// Observations are what data collection found this step.
func (pc *Context) Observations() []prompts.Observation { return slices.Clone(pc.observations) }

// Messages are the last request sent to the model, as it was sent: the
// slice is the request's (the context never changes it), not a copy,
// since it holds the whole conversation.
func (pc *Context) Messages() []llm.Message { return pc.messages }

// Response is the model's last reply, or nil.
func (pc *Context) Response() *llm.Response {
	if pc.response == nil {
		return nil
	}
	r := *pc.response
	return &r
}

// Decided reports whether the step has a decision, without copying it.
func (pc *Context) Decided() bool { return pc.decision != nil }

// Decision is what the model decided this step, or nil before it has.
// Change it with Decide.
func (pc *Context) Decision() *Decision {
	if pc.decision == nil {
		return nil
	}
	d := *pc.decision
	return &d
}

// Attempts counts the model calls of this step, re-asks included.
func (pc *Context) Attempts() int { return pc.attempts }

// Usage is the tokens of this step's model calls.
func (pc *Context) Usage() llm.Usage { return pc.usage }

// Commands are the commands this step ran or tried, in order; Results[i]
// is the result of Commands[i].
func (pc *Context) Commands() []command.Command { return slices.Clone(pc.commands) }

// Results are the results of Commands.
func (pc *Context) Results() []command.Result { return slices.Clone(pc.results) }

// Status is where the step leaves the agent.
func (pc *Context) Status() fsm.State { return pc.status }

// Visited are the states the step passed through before Status (CONFIRM
// before a confirmed action ran, for example), in order.
func (pc *Context) Visited() []fsm.State { return slices.Clone(pc.visited) }

// Notes are the user turns remembered after this step.
func (pc *Context) Notes() []string { return slices.Clone(pc.notes) }

// Errors are the failures of the strategies that do not stop the step.
func (pc *Context) Errors() []error { return slices.Clone(pc.errs) }

// Timings are how long each phase has taken this step.
func (pc *Context) Timings() map[Phase]time.Duration { return pc.timings.asMap() }

// What a strategy adds to the step.

// Observe adds observations for the model's next request.
func (pc *Context) Observe(obs ...prompts.Observation) {
	pc.observations = append(pc.observations, obs...)
}

// Attach adds images to this step's request (its status turn).
func (pc *Context) Attach(images ...llm.Image) { pc.images = append(pc.images, images...) }

// Decide records the model's decision; its status becomes the step's.
func (pc *Context) Decide(d Decision) {
	pc.decision = &d
	pc.status = d.Status
}

// SetStatus says where the step leaves the agent.
func (pc *Context) SetStatus(s fsm.State) { pc.status = s }

// Pass records a state the step passed through before its status, such as
// CONFIRM before the user approved what then ran.
func (pc *Context) Pass(s fsm.State) { pc.visited = append(pc.visited, s) }

// Record adds a command the step ran, or tried, and its result.
func (pc *Context) Record(cmd command.Command, result command.Result) {
	pc.commands = append(pc.commands, cmd)
	pc.results = append(pc.results, result)
}

// AddNote adds a user turn to remember after this step.
func (pc *Context) AddNote(note string) { pc.notes = append(pc.notes, note) }
