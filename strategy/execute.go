package strategy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy/internal/computeruse"
)

// executeStrategy runs the decided actions: an app agent's through the
// dispatcher, in order, stopping at the first failure; a host agent's
// assignments by running an app agent for each.
//
// Actions that need the user's approval (the model said CONFIRM, or the
// tool is destructive and the limits ask for it) are put to the Confirmer
// before they run. Commands[i] and Results[i] belong to Decision.Actions[i].
type executeStrategy struct{}

// declined starts the result of a command the user did not approve.
const declined = "not run: the user declined to approve it"

func (executeStrategy) Name() string { return Execute }
func (executeStrategy) Phase() Phase { return ActionExecution }

func (executeStrategy) Execute(ctx context.Context, pc *Context) error {
	d := pc.decision
	if d == nil || len(d.Actions) == 0 {
		return nil
	}
	switch d.Status {
	case fsm.Continue, fsm.Finish, fsm.Confirm, fsm.Assign:
	default:
		// FAIL, PENDING, SCREENSHOT: nothing runs this step.
		return nil
	}
	if pc.agent.Role == fsm.Host {
		runAssignments(ctx, pc)
		return nil
	}
	pc.commands = make([]command.Command, len(d.Actions))
	for i, a := range d.Actions {
		pc.commands[i] = command.Command{ToolName: a.Function, Parameters: a.Arguments, ToolType: toolType(pc, a.Function), Namespace: pc.agent.App}
	}
	if reason, ask := needsConfirmation(pc); ask {
		pc.visited = append(pc.visited, fsm.Confirm)
		ok, err := confirm(ctx, pc, pc.commands, reason)
		if err != nil {
			return err
		}
		if !ok {
			pc.results = make([]command.Result, len(pc.commands))
			for i := range pc.commands {
				pc.results[i] = command.Failed("", declined+"; choose a safer way or FAIL")
			}
			pc.status = fsm.Continue
			return nil
		}
		pc.notes = append(pc.notes, "The user approved the commands of the previous step before they ran.")
		if pc.status == fsm.Confirm {
			pc.status = fsm.Continue
		}
	}
	pc.results = runInOrder(command.WithDetach(ctx, pc.limits.DetachAfter), pc, pc.commands, d.Actions)
	offerBackgroundTools(pc)
	if pc.status == fsm.Finish && !allOK(pc.results) {
		// The model finished in the same breath as acting, but the action
		// failed: let it see the failure instead of ending on it.
		pc.status = fsm.Continue
	}
	return nil
}

// runInOrder dispatches device actions in runs, answering in place the
// ones the agent answers itself (an invalid action fails without being
// sent; read_artifact reads the agent's store), and skips everything
// after the first failure.
func runInOrder(ctx context.Context, pc *Context, cmds []command.Command, actions []Action) []command.Result {
	results := make([]command.Result, 0, len(cmds))
	for start := 0; start < len(cmds); {
		end := start
		for end < len(cmds) && actions[end].Invalid == "" && actions[end].Function != prompts.ReadArtifactTool && actions[end].Function != computeruse.Wait {
			end++
		}
		if end > start {
			batch := pc.dispatcher.Execute(ctx, cmds[start:end])
			for i := range batch {
				cmds[start+i].CallID = batch[i].CallID
			}
			results = append(results, batch...)
			if !allOK(batch) {
				start = end
				break
			}
		}
		if end < len(cmds) && actions[end].Function == computeruse.Wait && actions[end].Invalid == "" {
			results = append(results, waitHere(ctx, actions[end]))
			end++
		} else if end < len(cmds) {
			results = append(results, answerHere(pc, actions[end]))
			end++
		}
		start = end
		if !allOK(results) {
			break
		}
	}
	why := "skipped: an earlier action in this step failed"
	if slices.ContainsFunc(results, command.Result.Running) {
		why = "skipped: an earlier action in this step is still running in the background"
	}
	for i := len(results); i < len(cmds); i++ {
		results = append(results, command.SkippedResult("", why))
	}
	return results
}

// answerHere answers an action that never reaches the device.
func answerHere(pc *Context, a Action) command.Result {
	if a.Invalid != "" {
		return command.Failed("", a.Invalid)
	}
	if pc.artifacts == nil {
		return command.Failed("", "there are no artifacts to read: nothing was shortened")
	}
	b, _ := json.Marshal(a.Arguments)
	var args memory.ReadArgs
	if err := json.Unmarshal(b, &args); err != nil {
		return command.Failed("", fmt.Sprintf("%s: bad arguments (%v): give handle, and offset and length or grep", prompts.ReadArtifactTool, err))
	}
	text, err := pc.artifacts.Read(args)
	if err != nil {
		return command.Failed("", fmt.Sprintf("%s: %v", prompts.ReadArtifactTool, err))
	}
	return command.Succeeded("", text)
}

func allOK(rs []command.Result) bool {
	for _, r := range rs {
		if r.Status != command.Success {
			return false
		}
	}
	return true
}

func toolType(pc *Context, name string) command.ToolType {
	for _, t := range pc.tools {
		if t.Name == name && t.Namespace == pc.agent.App {
			return t.ToolType
		}
	}
	return command.Action
}

func needsConfirmation(pc *Context) (string, bool) {
	if pc.decision.Status == fsm.Confirm {
		reason := pc.decision.Comment
		if reason == "" {
			reason = pc.decision.Thought
		}
		return reason, true
	}
	return approvalNeeded(pc)
}

func confirm(ctx context.Context, pc *Context, cmds []command.Command, reason string) (bool, error) {
	if pc.confirmer == nil {
		return false, nil
	}
	// A copy: the confirmer may keep it (to show it later) while the
	// commands run and get their call ids.
	ok, err := pc.confirmer.Confirm(ctx, pc.agent.Name, slices.Clone(cmds), reason)
	if err != nil {
		return false, fmt.Errorf("asking for confirmation: %w", err)
	}
	return ok, nil
}

// runAssignments runs an app agent for each assign_subtask action, in order,
// stopping at the first subtask that does not finish (later subtasks usually
// build on it).
func runAssignments(ctx context.Context, pc *Context) {
	d := pc.decision
	pc.commands = make([]command.Command, len(d.Actions))
	pc.results = make([]command.Result, len(d.Actions))
	failed := false
	for i, a := range d.Actions {
		app, subtask := argString(a.Arguments, "app"), argString(a.Arguments, "subtask")
		pc.commands[i] = command.Command{ToolName: prompts.AssignTool, Parameters: a.Arguments, ToolType: command.Action, CallID: a.CallID}
		switch {
		case failed:
			pc.results[i] = command.SkippedResult(a.CallID, "skipped: an earlier subtask did not finish")
			continue
		case a.Invalid != "":
			pc.results[i] = command.Failed(a.CallID, a.Invalid)
		case ctx.Err() != nil:
			pc.results[i] = command.SkippedResult(a.CallID, "cancelled before it ran: "+context.Cause(ctx).Error())
		case subtask == "" || !hasApp(pc, app):
			pc.results[i] = command.Failed(a.CallID, fmt.Sprintf("%s needs an app (one of %s) and a subtask; got app %q, subtask %q", prompts.AssignTool, appNames(pc), app, subtask))
		case pc.runSubtask == nil:
			return
		default:
			final := argBool(a.Arguments, "final") && i == len(d.Actions)-1
			if final {
				subtask += finalSubtask
			}
			note := pc.runSubtask(ctx, app, subtask)
			// The host wrote the subtask: its result is the outcome alone.
			r := command.Succeeded(a.CallID, subtaskOutcome{App: note.App, Status: note.Status, Result: note.Result})
			if note.Status != string(fsm.Finish) {
				r.Status, r.Error = command.Failure, fmt.Sprintf("subtask ended %s: %s", note.Status, note.Result)
			}
			r.Namespace = app
			pc.results[i] = r
			if final && note.Status == string(fsm.Finish) {
				// The host said this subtask's result is the answer: the
				// task ends with it, without a round that only repeats it.
				pc.visited = append(pc.visited, fsm.Assign)
				pc.status, d.Result = fsm.Finish, note.Result
			}
		}
		failed = pc.results[i].Status != command.Success
	}
}

// finalSubtask tells the app agent of a final subtask that its result is
// the task's answer.
const finalSubtask = "\n\nYour result is the final answer to the user's request and ends the task: write it for the user (in the answer format, when the request gives one)."

// argBool reads a boolean argument; models write true, "true" and 1.
func argBool(args map[string]any, key string) bool {
	switch v := args[key].(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(strings.TrimSpace(v), "true")
	case float64:
		return v == 1
	}
	return false
}

// subtaskOutcome is the result of an assign_subtask call: the note of the
// finished subtask without the subtask, which the host's own call holds.
type subtaskOutcome struct {
	App    string `json:"app"`
	Status string `json:"status"`
	Result string `json:"result"`
}

func hasApp(pc *Context, name string) bool {
	for _, a := range pc.apps {
		if a.Name == name {
			return true
		}
	}
	return false
}

func appNames(pc *Context) string {
	s := ""
	for i, a := range pc.apps {
		if i > 0 {
			s += ", "
		}
		s += a.Name
	}
	return s
}

// rememberStrategy writes the step into the agent's memory.
type rememberStrategy struct{}

func (rememberStrategy) Name() string { return Remember }
func (rememberStrategy) Phase() Phase { return MemoryUpdate }

func (rememberStrategy) Execute(_ context.Context, pc *Context) error {
	st := memory.Step{Agent: pc.agent.Name, Round: pc.round, Step: pc.step, Status: string(pc.status),
		Commands: pc.commands, Results: pc.results, Notes: pc.notes, Usage: pc.usage}
	if pc.response != nil {
		st.Reply = pc.response.Message
	}
	if pc.decision != nil {
		st.Thought = pc.decision.Thought
		for _, a := range pc.decision.Actions {
			st.CallIDs = append(st.CallIDs, a.CallID)
		}
	}
	pc.memory.Add(st)
	return nil
}
