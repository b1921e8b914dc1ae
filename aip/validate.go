package aip

import (
	"fmt"

	"github.com/saucerhq/saucer/command"
)

// Validate applies PROTOCOL.md's per-type rules to a decoded client frame:
// a register names its client (and a constellation its target device), a
// task carries a request, command results answer a response id with valid
// result statuses. The error says what is missing; it wraps ErrBadFrame.
func (m *ClientMessage) Validate() error {
	switch m.Type {
	case TypeRegister:
		if m.ClientID == "" {
			return badFrame("register needs a non-empty client_id")
		}
		if m.ClientType == ClientConstellation && m.TargetID == "" {
			return badFrame("a constellation registers with the target_id of the device it drives")
		}
	case TypeTask:
		if m.Request == "" {
			return badFrame("a task frame needs the request text in request")
		}
	case TypeCommandResults:
		if m.PrevResponseID == "" {
			return badFrame("command_results needs prev_response_id, the response_id of the command frame it answers")
		}
		if m.ActionResults == nil {
			return badFrame("command_results needs action_results (a list, one result per action)")
		}
		for i, r := range m.ActionResults {
			if !validResultStatus(r.Status) {
				return badFrame("action_results[%d] has status %q; want success, failure, skipped or none", i, r.Status)
			}
		}
	}
	return nil
}

// Validate applies PROTOCOL.md's per-type rules to a decoded server frame:
// a command frame has a response id and actions with known tool types, a
// task carries the request and its session, a task_end is completed or
// failed.
func (m *ServerMessage) Validate() error {
	switch m.Type {
	case TypeCommand:
		if m.ResponseID == "" {
			return badFrame("a command frame needs a response_id for the results to answer")
		}
		if m.Actions == nil {
			return badFrame("a command frame needs actions (a list of commands)")
		}
		for i, a := range m.Actions {
			if a.ToolType != "" && !a.ToolType.Valid() {
				return badFrame("actions[%d] (%s) has tool_type %q; want %s or %s", i, a.ToolName, a.ToolType, command.Action, command.DataCollection)
			}
		}
	case TypeTask:
		if m.UserRequest == "" {
			return badFrame("a task frame needs user_request")
		}
	case TypeTaskEnd:
		if m.Status != StatusCompleted && m.Status != StatusFailed {
			return badFrame("task_end has status %q; want completed or failed", m.Status)
		}
	}
	return nil
}

func validResultStatus(s command.ResultStatus) bool {
	switch s {
	case command.Success, command.Failure, command.Skipped, command.None:
		return true
	}
	return false
}

// String is a short description for logs: type/status and the ids set.
func (m *ClientMessage) String() string {
	return fmt.Sprintf("%s/%s from %s (session %q, prev_response_id %q)", m.Type, m.Status, m.ClientID, m.SessionID, m.PrevResponseID)
}

// String is a short description for logs.
func (m *ServerMessage) String() string {
	return fmt.Sprintf("%s/%s (session %q, response_id %q, %d actions)", m.Type, m.Status, m.SessionID, m.ResponseID, len(m.Actions))
}
