package server_test

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/server"
)

// UFO's rules for results and sessions, on the wire: results are taken
// only from the device that runs the round, never start a session, and a
// session id of another client's task gives a client nothing of it.
func TestResultsOnlyFromTheExecutingDevice(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: rounds([]string{"count"})})
	dev := f.rawConn(t)
	register(t, dev, "dev")
	thief := f.rawConn(t)
	register(t, thief, "thief")

	d, code := dispatch(t, f, "dev", "count things")
	if code != 200 {
		t.Fatalf("dispatch: %d", code)
	}
	var round *aip.ServerMessage
	for round == nil {
		if m := readServer(t, dev); m.Type == aip.TypeCommand {
			round = m
		}
	}
	callID := round.Actions[0].CallID

	// Another device answers the round: refused, and the round still waits.
	send(t, thief, &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientID: "thief",
		SessionID: d.SessionID, PrevResponseID: round.ResponseID,
		ActionResults: []command.Result{{Status: command.Success, Result: []byte(`"forged"`), CallID: callID}}})
	if m := readServer(t, thief); m.Type != aip.TypeError || !strings.Contains(m.Error, "command_results not accepted") {
		t.Errorf("results from another device: %v %q", m, m.Error)
	}
	// Results for no round at all start nothing.
	send(t, thief, &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientID: "thief",
		SessionID: "made-up-session", PrevResponseID: "made-up-response",
		ActionResults: []command.Result{{Status: command.Success, CallID: "x"}}})
	if m := readServer(t, thief); m.Type != aip.TypeError {
		t.Errorf("results for no round: %v", m)
	}
	// The other client reusing the task's session id gets its own new task,
	// not a handle on this one.
	send(t, thief, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientID: "thief",
		SessionID: d.SessionID, Request: "count things", TaskName: "t"})
	if m := readServer(t, thief); m.Type != aip.TypeHeartbeat || m.SessionID == "" || m.SessionID == d.SessionID {
		t.Errorf("a reused session id: %v (session %q, the dispatched one is %q)", m, m.SessionID, d.SessionID)
	}

	// The device that runs the round answers it: that counts.
	send(t, dev, &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientID: "dev",
		SessionID: d.SessionID, PrevResponseID: round.ResponseID,
		ActionResults: []command.Result{{Status: command.Success, Result: []byte(`"3 things"`), CallID: callID}}})
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted || !strings.Contains(info.Result, "3 things") || strings.Contains(info.Result, "forged") {
		t.Errorf("task %s %q", info.Status, info.Result)
	}
	var list struct{ Tasks []server.TaskInfo }
	f.api(t, "GET", "/api/tasks", nil, &list)
	for _, ti := range list.Tasks {
		if ti.ID == "made-up-session" {
			t.Errorf("results created a session: %+v", ti)
		}
	}
}
