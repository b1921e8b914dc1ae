package strategy

import (
	"context"
	"fmt"
	"slices"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
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
	d := pc.Decision
	if d == nil || len(d.Actions) == 0 {
		return nil
	}
	switch d.Status {
	case fsm.Continue, fsm.Finish, fsm.Confirm, fsm.Assign:
	default:
		// FAIL, PENDING, SCREENSHOT: nothing runs this step.
		return nil
	}
	if pc.Agent.Role == fsm.Host {
		runAssignments(ctx, pc)
		return nil
	}
	pc.Commands = make([]command.Command, len(d.Actions))
	for i, a := range d.Actions {
		pc.Commands[i] = command.Command{ToolName: a.Function, Parameters: a.Arguments, ToolType: toolType(pc, a.Function), Namespace: pc.Agent.App}
	}
	if reason, ask := needsConfirmation(pc); ask {
		pc.Visited = append(pc.Visited, fsm.Confirm)
		ok, err := confirm(ctx, pc, reason)
		if err != nil {
			return err
		}
		if !ok {
			pc.Results = make([]command.Result, len(pc.Commands))
			for i := range pc.Commands {
				pc.Results[i] = command.Failed("", declined+"; choose a safer way or FAIL")
			}
			pc.Status = fsm.Continue
			return nil
		}
		pc.Notes = append(pc.Notes, "The user approved the commands of the previous step before they ran.")
		if pc.Status == fsm.Confirm {
			pc.Status = fsm.Continue
		}
	}
	pc.Results = runInOrder(ctx, pc, pc.Commands, d.Actions)
	if pc.Status == fsm.Finish && !allOK(pc.Results) {
		// The model finished in the same breath as acting, but the action
		// failed: let it see the failure instead of ending on it.
		pc.Status = fsm.Continue
	}
	return nil
}

// runInOrder dispatches valid actions in runs, failing an invalid action in
// place without sending it, and skips everything after the first failure.
func runInOrder(ctx context.Context, pc *Context, cmds []command.Command, actions []Action) []command.Result {
	results := make([]command.Result, 0, len(cmds))
	for start := 0; start < len(cmds); {
		end := start
		for end < len(cmds) && actions[end].Invalid == "" {
			end++
		}
		if end > start {
			batch := pc.Dispatcher.Execute(ctx, cmds[start:end])
			for i := range batch {
				cmds[start+i].CallID = batch[i].CallID
			}
			results = append(results, batch...)
			if !allOK(batch) {
				start = end
				break
			}
		}
		if end < len(cmds) {
			results = append(results, command.Failed("", actions[end].Invalid))
			end++
		}
		start = end
		if !allOK(results) {
			break
		}
	}
	for i := len(results); i < len(cmds); i++ {
		results = append(results, command.SkippedResult("", "skipped: an earlier action in this step failed"))
	}
	return results
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
	for _, t := range pc.Tools {
		if t.Name == name && t.Namespace == pc.Agent.App {
			return t.ToolType
		}
	}
	return command.Action
}

func needsConfirmation(pc *Context) (string, bool) {
	if pc.Decision.Status == fsm.Confirm {
		reason := pc.Decision.Comment
		if reason == "" {
			reason = pc.Decision.Thought
		}
		return reason, true
	}
	return approvalNeeded(pc)
}

func confirm(ctx context.Context, pc *Context, reason string) (bool, error) {
	if pc.Confirmer == nil {
		return false, nil
	}
	// A copy: the confirmer may keep it (to show it later) while the
	// commands run and get their call ids.
	ok, err := pc.Confirmer.Confirm(ctx, pc.Agent.Name, slices.Clone(pc.Commands), reason)
	if err != nil {
		return false, fmt.Errorf("asking for confirmation: %w", err)
	}
	return ok, nil
}

// runAssignments runs an app agent for each assign_subtask action, in order,
// stopping at the first subtask that does not finish (later subtasks usually
// build on it).
func runAssignments(ctx context.Context, pc *Context) {
	d := pc.Decision
	pc.Commands = make([]command.Command, len(d.Actions))
	pc.Results = make([]command.Result, len(d.Actions))
	failed := false
	for i, a := range d.Actions {
		app, subtask := argString(a.Arguments, "app"), argString(a.Arguments, "subtask")
		pc.Commands[i] = command.Command{ToolName: prompts.AssignTool, Parameters: a.Arguments, ToolType: command.Action, CallID: a.CallID}
		switch {
		case failed:
			pc.Results[i] = command.SkippedResult(a.CallID, "skipped: an earlier subtask did not finish")
			continue
		case a.Invalid != "":
			pc.Results[i] = command.Failed(a.CallID, a.Invalid)
		case ctx.Err() != nil:
			pc.Results[i] = command.SkippedResult(a.CallID, "cancelled before it ran: "+context.Cause(ctx).Error())
		case subtask == "" || !hasApp(pc, app):
			pc.Results[i] = command.Failed(a.CallID, fmt.Sprintf("%s needs an app (one of %s) and a subtask; got app %q, subtask %q", prompts.AssignTool, appNames(pc), app, subtask))
		case pc.RunSubtask == nil:
			return
		default:
			note := pc.RunSubtask(ctx, app, subtask)
			r := command.Succeeded(a.CallID, note)
			if note.Status != string(fsm.Finish) {
				r.Status, r.Error = command.Failure, fmt.Sprintf("subtask ended %s: %s", note.Status, note.Result)
			}
			r.Namespace = app
			pc.Results[i] = r
		}
		failed = pc.Results[i].Status != command.Success
	}
}

func hasApp(pc *Context, name string) bool {
	for _, a := range pc.Apps {
		if a.Name == name {
			return true
		}
	}
	return false
}

func appNames(pc *Context) string {
	s := ""
	for i, a := range pc.Apps {
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
	st := memory.Step{Agent: pc.Agent.Name, Round: pc.Round, Step: pc.Step, Status: string(pc.Status),
		Commands: pc.Commands, Results: pc.Results, Notes: pc.Notes, Usage: pc.Usage}
	if pc.Response != nil {
		st.Reply = pc.Response.Message
	}
	if pc.Decision != nil {
		st.Thought = pc.Decision.Thought
		for _, a := range pc.Decision.Actions {
			st.CallIDs = append(st.CallIDs, a.CallID)
		}
	}
	pc.Memory.Add(st)
	return nil
}
