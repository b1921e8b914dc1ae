package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/server"
)

// cancelledScript runs waitingCommand, which the test cancels, and
// finishes once it sees that it was.
const cancelledScript = `
replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "Run the build"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "` + waitingCommand + `"}
  - expect: "cancel"
    tool_calls:
      - name: finish_task
        arguments: {result: "The build was cancelled."}
  - tool_calls:
      - name: finish_task
        arguments: {result: "Cancelled."}
`

// A person cancels one running command of a task (POST
// /api/tasks/{id}/commands/{call_id}/cancel): the server sends
// cancel_command over the real WebSocket to the device, whose real shell
// stops the command; the agent gets a result that says it was cancelled
// and the task goes on to complete. An unknown call id is a 404; a
// command of an ended task, a 409.
func TestCancelOneCommand(t *testing.T) {
	progress := make(chan server.ProgressInfo, 64)
	f := newFixture(t, server.Options{NewSession: progressSessions(t, cancelledScript, 0, func(agent.Event) {}),
		OnProgress: func(_ string, p server.ProgressInfo) {
			select {
			case progress <- p:
			default:
			}
		}})
	dir := t.TempDir()
	connect(t, f.wsURL, "dev1", realDevice(t, dir), nil)
	d, code := dispatch(t, f, "dev1", "run the build")
	if code != 200 {
		t.Fatalf("dispatch: %d", code)
	}
	// The command runs once its output streams.
	var p server.ProgressInfo
	timeout := time.After(20 * time.Second)
	for !slices.Contains(p.Lines, "line 3") {
		select {
		case p = <-progress:
		case <-timeout:
			t.Fatalf("the command's output never showed; last %+v", p)
		}
	}
	callID := p.CallID

	var refusal map[string]string
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/commands/nope/cancel", nil, &refusal); code != 404 ||
		!strings.Contains(refusal["error"], `"nope"`) {
		t.Errorf("an unknown call id: %d %v", code, refusal)
	}

	var st command.Status
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/commands/"+callID+"/cancel", nil, &st); code != 200 {
		t.Fatalf("cancel: %d %+v", code, st)
	}
	if st.State != command.StateCancelled || !strings.Contains(st.Note, "cancelled") {
		t.Errorf("the device's answer: %+v", st)
	}
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted || info.Result != "Cancelled." {
		t.Fatalf("the task ended %s (%s): %s", info.Status, info.Result, info.Error)
	}
	if i := slices.IndexFunc(info.Commands, func(c dispatcher.CommandState) bool { return c.CallID == callID }); i < 0 ||
		!info.Commands[i].State.Terminal() || info.Commands[i].State == command.StateCompleted {
		t.Errorf("the cancelled command's state: %+v", info.Commands)
	}
	refusal = nil
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/commands/"+callID+"/cancel", nil, &refusal); code != 409 || refusal["error"] == "" {
		t.Errorf("a command of an ended task: %d %v", code, refusal)
	}
}
