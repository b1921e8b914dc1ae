package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server"
)

// markScript runs one command that leaves a mark, so that a second run
// would show.
const markScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Leave a mark."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo ran >> marks.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "marked"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Notepad opened"}}]
`

// TestUFOConstellationClient: UFO's Galaxy registers as a constellation
// client and sends a task with a session_id of its own, then waits for a
// task_end with that session_id. Its frames, as UFO's code writes them,
// get the ack and the task_end under its session_id; the same task frame
// again joins the task (its end is told again) and runs nothing twice;
// another client may not use that session_id.
func TestUFOConstellationClient(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: scriptedSessions(t, markScript)})
	dir := t.TempDir()
	connect(t, f.wsURL, "device_001", realDevice(t, dir), nil)

	golden := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("../testdata/aip", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	galaxy := f.rawConn(t)
	if err := galaxy.SendRaw(context.Background(), golden("c2s_register_constellation.json")); err != nil {
		t.Fatal(err)
	}
	if m := readServer(t, galaxy); m.Type != aip.TypeHeartbeat || m.Status != aip.StatusOK {
		t.Fatalf("registration: %s/%s %q", m.Type, m.Status, m.Error)
	}
	task := golden("c2s_task_request_constellation.json")
	if err := galaxy.SendRaw(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	const session = "task1@t1" // the golden frame's own
	if m := readServer(t, galaxy); m.Type != aip.TypeHeartbeat || m.SessionID != session {
		t.Fatalf("the task's ack: %s/%s session %q, want session %q", m.Type, m.Status, m.SessionID, session)
	}
	end := readServer(t, galaxy)
	var result struct {
		Answer string `json:"answer"`
	}
	json.Unmarshal(end.Result, &result)
	if end.Type != aip.TypeTaskEnd || end.Status != aip.StatusCompleted || end.SessionID != session || result.Answer != "Notepad opened" {
		t.Fatalf("task_end %s/%s session %q result %s, want completed for %q", end.Type, end.Status, end.SessionID, end.Result, session)
	}

	// Asked again (a client that lost the answer): the same task.
	if err := galaxy.SendRaw(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if m := readServer(t, galaxy); m.Type != aip.TypeHeartbeat || m.SessionID != session {
		t.Fatalf("the second ack: %s/%s %q", m.Type, m.Status, m.SessionID)
	}
	if m := readServer(t, galaxy); m.Type != aip.TypeTaskEnd || m.Status != aip.StatusCompleted || m.SessionID != session {
		t.Fatalf("the end told again: %s/%s %q", m.Type, m.Status, m.SessionID)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "marks.txt")); string(b) != "ran\n" {
		t.Errorf("marks.txt = %q: the task ran more than once", b)
	}
	if n := len(f.srv.Tasks()); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
	for _, ti := range f.srv.Tasks() {
		if ti.RequesterID != "task1@device_001" || ti.RequesterSession != session {
			t.Errorf("task %+v", ti)
		}
	}

	// Another constellation may not take over that session_id.
	other := f.rawConn(t)
	send(t, other, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
		ClientID: "intruder@device_001", TargetID: "device_001"})
	readServer(t, other)
	send(t, other, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientType: aip.ClientConstellation,
		ClientID: "intruder@device_001", TargetID: "device_001", SessionID: session, Request: "rm marks.txt"})
	if m := readServer(t, other); m.Type != aip.TypeError || !strings.Contains(m.Error, "owned by another client") {
		t.Errorf("another client's session_id: %s %q", m.Type, m.Error)
	}
}
