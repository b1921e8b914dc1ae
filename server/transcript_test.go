package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server"
)

const transcriptDir = "../testdata/aip/transcripts"

type tline struct {
	Dir   string          `json:"dir"`
	Frame json.RawMessage `json:"frame"`
}

func transcript(t *testing.T, name string) []tline {
	t.Helper()
	f, err := os.Open(filepath.Join(transcriptDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tline
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l tline
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// transcriptRounds is a session that sends the command rounds of the
// transcript's UFO server, as they are.
func transcriptRounds(t *testing.T, lines []tline) func(server.SessionSpec) (server.Runner, error) {
	var batches [][]command.Command
	for _, l := range lines {
		if l.Dir != "s2c" {
			continue
		}
		m, err := aip.DecodeServer(l.Frame)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == aip.TypeCommand {
			cmds := append([]command.Command{}, m.Actions...)
			for i := range cmds {
				cmds[i].CallID = "" // the server makes its own
			}
			batches = append(batches, cmds)
		}
	}
	return func(spec server.SessionSpec) (server.Runner, error) {
		return runnerFunc(func(ctx context.Context, request string) *agent.Outcome {
			for _, b := range batches {
				spec.Dispatcher.Execute(ctx, b)
			}
			return &agent.Outcome{Status: fsm.Finish, Answer: "replayed"}
		}), nil
	}
}

// replayAgainstServer plays UFO's device client's side of a transcript to
// a Saucer server and checks each server frame against UFO's server's:
// same types and statuses in the same order per type, the same commands,
// one session id throughout, results answered by the server's ids.
func replayAgainstServer(t *testing.T, name string, dispatchFirst bool) {
	lines := transcript(t, name)
	f := newFixture(t, server.Options{NewSession: transcriptRounds(t, lines)})
	c := f.rawConn(t)
	var pending []*aip.ServerMessage // frames read ahead of the transcript
	next := func(typ aip.Type) *aip.ServerMessage {
		for i, m := range pending {
			if m.Type == typ {
				pending = append(pending[:i], pending[i+1:]...)
				return m
			}
		}
		for {
			m := readServer(t, c)
			if m.Type == typ {
				return m
			}
			pending = append(pending, m)
		}
	}
	var lastCommand *aip.ServerMessage
	session := ""
	dispatched := false
	for i, l := range lines {
		if l.Dir == "c2s" {
			m, err := aip.DecodeClient(l.Frame)
			if err != nil {
				t.Fatal(err)
			}
			if m.Type == aip.TypeCommandResults {
				// Answer the server's frame with its own ids, as UFO's
				// client would have.
				m.PrevResponseID, m.SessionID = lastCommand.ResponseID, lastCommand.SessionID
				for j := range m.ActionResults {
					m.ActionResults[j].CallID = lastCommand.Actions[j].CallID
				}
				send(t, c, m)
			} else {
				c.SendRaw(context.Background(), l.Frame)
			}
			continue
		}
		want, _ := aip.DecodeServer(l.Frame)
		if want.Type == aip.TypeTask && dispatchFirst && !dispatched {
			dispatched = true
			var d server.DispatchResponse
			req := server.DispatchRequest{ClientID: "dev_py_1", Request: want.UserRequest, TaskName: want.TaskName}
			if code := f.api(t, "POST", "/api/dispatch", req, &d); code != 200 {
				t.Fatalf("dispatch: %d", code)
			}
		}
		got := next(want.Type)
		if got.Status != want.Status || (got.ResponseID == "") {
			t.Errorf("line %d: %s/%s (response_id %q), UFO %s/%s", i+1, got.Type, got.Status, got.ResponseID, want.Type, want.Status)
		}
		switch want.Type {
		case aip.TypeTask:
			if got.UserRequest != want.UserRequest || got.SessionID == "" {
				t.Errorf("line %d: task %q session %q", i+1, got.UserRequest, got.SessionID)
			}
		case aip.TypeHeartbeat:
			if (want.SessionID != "") != (got.SessionID != "") {
				t.Errorf("line %d: heartbeat session %q, UFO %q", i+1, got.SessionID, want.SessionID)
			}
			if got.SessionID != "" {
				session = got.SessionID
			}
		case aip.TypeCommand:
			lastCommand = got
			if err := ufoRoute(got); err != nil {
				t.Fatalf("line %d: %v (it would answer nothing)", i+1, err)
			}
			if got.SessionID != session || got.TaskName != want.TaskName {
				t.Errorf("line %d: command in session %q task %q; the task was accepted as %q", i+1, got.SessionID, got.TaskName, session)
			}
			if len(got.Actions) != len(want.Actions) {
				t.Fatalf("line %d: %d actions, UFO %d", i+1, len(got.Actions), len(want.Actions))
			}
			for j, a := range got.Actions {
				w := want.Actions[j]
				if a.ToolName != w.ToolName || a.ToolType != w.ToolType || !reflect.DeepEqual(a.Parameters, w.Parameters) || a.CallID == "" {
					t.Errorf("line %d action %d: %+v, UFO %+v", i+1, j, a, w)
				}
			}
		case aip.TypeTaskEnd:
			if got.SessionID != session || len(got.Result) == 0 {
				t.Errorf("line %d: task_end session %q result %s", i+1, got.SessionID, got.Result)
			}
		}
	}
	tasks := f.srv.Tasks()
	if len(tasks) != 1 || tasks[0].Status != server.StatusCompleted || len(tasks[0].Commands) != 4 {
		t.Fatalf("tasks after the replay: %+v", tasks)
	}
	// UFO's client was never asked for its tools outside the task (the
	// frames above are all UFO's server's); the server shows those its
	// task listed, and says so.
	dt, ok := f.srv.DeviceTools(tasks[0].ClientID)
	if !ok || dt.Source != server.ToolsFromTask || dt.TaskID != tasks[0].ID || !strings.Contains(dt.Note, "does not list its tools outside a task") ||
		len(dt.Tools) == 0 || dt.Tools[0].Namespace != "peer_echo" || dt.Tools[0].Name != "echo" || dt.Tools[0].Type != command.Action {
		t.Errorf("the UFO client's tools: %+v", dt)
	}
}

// TestTranscriptServerDispatchFlow: UFO's device client, answering a task
// pushed by POST /api/dispatch with its own task request, gets one session.
func TestTranscriptServerDispatchFlow(t *testing.T) {
	replayAgainstServer(t, "server_dispatch_flow.jsonl", true)
}

// TestTranscriptClientRequestFlow: UFO's device client asking for a task.
func TestTranscriptClientRequestFlow(t *testing.T) {
	replayAgainstServer(t, "client_request_flow.jsonl", false)
}
