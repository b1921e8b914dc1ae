package server_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/aiptest"
	"github.com/saucerhq/saucer/server"
)

const transcriptDir = "../testdata/aip/transcripts"

// transcriptRounds is a session that sends the command rounds of the
// transcript's UFO server, as they are.
func transcriptRounds(t *testing.T, lines []aiptest.Line) func(server.SessionSpec) (server.Runner, error) {
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
	lines := aiptest.Transcript(t, filepath.Join(transcriptDir, name))
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
	catalog := transcriptTools(t, lines)
	first, err := aip.DecodeClient(lines[0].Frame)
	if err != nil || first.Type != aip.TypeRegister {
		t.Fatalf("the transcript does not begin with a registration: %v", err)
	}
	clientID := first.ClientID
	var lastCommand *aip.ServerMessage
	var kept []int // which of UFO's server's actions the last command frame holds
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
				// client would have: the results of the actions it sent.
				m.PrevResponseID, m.SessionID = lastCommand.ResponseID, lastCommand.SessionID
				var results []command.Result
				for j, k := range kept {
					r := m.ActionResults[k]
					r.CallID = lastCommand.Actions[j].CallID
					results = append(results, r)
				}
				m.ActionResults = results
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
		if want.Type == aip.TypeCommand && isToolQuestion(got) {
			// The one question that is not in UFO's server's frames: the
			// server asks a UFO client for its tools once.
			answerToolListWith(t, c, clientID, got, got.AgentName, catalog)
			got = next(want.Type)
		}
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
			// The server answers discovery itself from what the client
			// listed (UFO's client may not route it): the rest goes out.
			kept = kept[:0]
			for k, a := range want.Actions {
				if !isDiscovery(a.ToolName) {
					kept = append(kept, k)
				}
			}
			if len(got.Actions) != len(kept) {
				t.Fatalf("line %d: %d actions, UFO %d of which %d are not discovery", i+1, len(got.Actions), len(want.Actions), len(kept))
			}
			for j, a := range got.Actions {
				w := want.Actions[kept[j]]
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
	if len(tasks) != 1 || tasks[0].Status != server.StatusCompleted || len(tasks[0].Commands) != 3 {
		t.Fatalf("tasks after the replay: %+v", tasks)
	}
	// The server shows the tools the client listed.
	dt, ok := f.srv.DeviceTools(tasks[0].ClientID)
	if !ok || dt.Source != server.ToolsFromDevice || len(dt.Tools) != len(catalog) ||
		dt.Tools[0].Namespace != "peer_echo" || dt.Tools[0].Name != "echo" || dt.Tools[0].Type != command.Action {
		t.Errorf("the UFO client's tools: %+v", dt)
	}
}

// transcriptTools are the tools the transcript's client ran, as its
// list_tools would list them: each tool of a command frame that is not
// discovery, in the namespace its results name.
func transcriptTools(t *testing.T, lines []aiptest.Line) []command.ToolInfo {
	var tools []command.ToolInfo
	seen := map[string]bool{}
	for _, l := range lines {
		m, err := aip.DecodeServer(l.Frame)
		if l.Dir != "s2c" || err != nil || m.Type != aip.TypeCommand {
			continue
		}
		for _, a := range m.Actions {
			if !isDiscovery(a.ToolName) && !seen[a.ToolName] {
				seen[a.ToolName] = true
				tools = append(tools, command.ToolInfo{Name: a.ToolName, Namespace: "peer_echo", ToolType: a.ToolType, Description: a.ToolName})
			}
		}
	}
	if len(tools) == 0 {
		t.Fatal("the transcript runs no tools")
	}
	return tools
}

func isDiscovery(tool string) bool {
	return tool == command.ListTools || tool == command.GetMCPTools || tool == command.GetDeviceInfo
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
