package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
)

var (
	// ErrCommandEnded: the command asked about has already ended.
	ErrCommandEnded = errors.New("the command has already ended")
	// ErrNotCancelled: the device did not cancel the command (it does not
	// know it, or did not answer).
	ErrNotCancelled = errors.New("the device did not cancel the command")
)

// CancelCommand asks the device of task id to stop its running command
// callID, with the device's built-in cancel_command (a Saucer device
// answers it beside its queue, while the command runs). The task goes on:
// the agent that ran the command gets its result, which says it was
// cancelled. It returns the device's answer: the command's status.
// Errors: ErrNoTask, ErrNotRunning (the task ended), ErrUnknownCommand
// (the task never ran callID), ErrCommandEnded (it ended here already),
// ErrNotCancelled (the device does not know it, or did not answer).
func (s *Server) CancelCommand(ctx context.Context, id, callID string) (command.Status, error) {
	s.mu.Lock()
	t := s.tasks[id]
	s.mu.Unlock()
	if t == nil {
		return command.Status{}, fmt.Errorf("%w: %q", ErrNoTask, id)
	}
	if t.ended() {
		return command.Status{}, fmt.Errorf("%w: task %s", ErrNotRunning, id)
	}
	t.mu.Lock()
	i, ok := t.cmdIndex[callID]
	var cs dispatcher.CommandState
	if ok {
		cs = t.info.Commands[i]
	}
	t.mu.Unlock()
	if !ok {
		return command.Status{}, fmt.Errorf("%w: task %s ran no command %q (GET /api/tasks/%s lists its commands)", ErrUnknownCommand, id, callID, id)
	}
	if cs.State.Terminal() {
		return command.Status{}, fmt.Errorf("%w: %s (%s) ended %s; nothing to cancel", ErrCommandEnded, callID, cs.ToolName, cs.State)
	}
	cancel := command.Command{ToolName: command.CancelCommand, Parameters: map[string]any{"call_id": callID}}
	s.mu.Lock()
	agentName, _ := s.agentNameLocked(t.target) // the task started, so it has one
	s.mu.Unlock()
	// No agent asks for it: the one that runs the device's commands (the
	// host's, on a device that runs each agent's by its own).
	agentName = cmp.Or(agentName, command.HostAgentName)
	res := t.target.disp.Session(dispatcher.Round{SessionID: t.info.ID, TaskName: t.info.TaskName, AgentName: agentName, QueuedBy: s.queuedBy()}).
		Execute(ctx, []command.Command{cancel})
	if len(res) != 1 || !res[0].OK() {
		why := "no answer"
		if len(res) == 1 {
			why = res[0].Error
		}
		return command.Status{}, fmt.Errorf("%w %s: %s", ErrNotCancelled, callID, why)
	}
	var st command.Status
	if err := json.Unmarshal(res[0].Result, &st); err != nil {
		return command.Status{}, fmt.Errorf("the device's answer to cancel_command %s: %w", callID, err)
	}
	return st, nil
}

// cancelCommand answers POST /api/tasks/{id}/commands/{call_id}/cancel.
func (s *Server) cancelCommand(w http.ResponseWriter, r *http.Request) {
	st, err := s.CancelCommand(r.Context(), r.PathValue("id"), r.PathValue("call_id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
