package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server"
)

// ufoClient plays UFO's device client over a real socket, as its code
// does (ufo/client/websocket.py, computer.py): it connects with the key
// in ?token=, registers with UFO's own registration frame (which says
// nothing of re-sent frames), and runs each command frame's actions as
// it reads the frame, then sends their results. It keeps no journal and
// no cache of rounds: a frame it gets again runs again. Its agent has
// two tools, "count" (an action: it appends the call id to a file, which
// tells how often it ran) and "look" (data collection), and the meta
// tool list_tools under each tool type. As UFO's router does, it answers
// NOTHING to a frame it cannot route: an agent not in its mcp.yaml, a
// tool it does not have under the frame's tool_type. After a failure the
// rest of a frame is skipped.
type ufoClient struct {
	t        *testing.T
	id       string
	platform string // registered as; empty: UFO's frame's (linux)
	counter  string
	conn     *aip.Conn
	// lists counts the list_tools it answered.
	lists int
}

// ufoTools are the tools of the ufoClient's agent, as its list_tools
// answers them.
var ufoTools = []command.ToolInfo{
	{Name: "count", Namespace: "Device", ToolType: command.Action, Description: "Count once.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "look", Namespace: "Device", ToolType: command.DataCollection, Description: "Look at the device.", InputSchema: json.RawMessage(`{"type":"object"}`)},
}

func newUFOClient(t *testing.T, id string) *ufoClient {
	return &ufoClient{t: t, id: id, counter: filepath.Join(t.TempDir(), "count")}
}

// register dials f and registers with UFO's frame; it returns the ack.
// On a platform whose agent the server knows (linux, mobile), the server
// then lists the agent's tools: the client answers that as it reads it.
func (u *ufoClient) register(f *fixture) *aip.ServerMessage {
	u.t.Helper()
	b, err := os.ReadFile("../testdata/aip/c2s_register_device.json")
	if err != nil {
		u.t.Fatal(err)
	}
	var frame map[string]any
	if err := json.Unmarshal(b, &frame); err != nil {
		u.t.Fatal(err)
	}
	frame["client_id"] = u.id
	frame["metadata"].(map[string]any)["system_info"].(map[string]any)["device_id"] = u.id
	if u.platform != "" {
		frame["metadata"].(map[string]any)["platform"] = u.platform
		frame["metadata"].(map[string]any)["system_info"].(map[string]any)["platform"] = u.platform
	}
	b, _ = json.Marshal(frame)
	u.conn = f.rawConn(u.t)
	if err := u.conn.SendRaw(context.Background(), b); err != nil {
		u.t.Fatal(err)
	}
	ack := readServer(u.t, u.conn)
	if ack.Type != aip.TypeHeartbeat || ack.Status != aip.StatusOK || ack.SessionID != "" {
		u.t.Fatalf("%s: registration answered with %v %q", u.id, ack, ack.Error)
	}
	return ack
}

// nextCommand reads frames until a command frame, answering the
// server's listings of its tools on the way.
func (u *ufoClient) nextCommand() *aip.ServerMessage {
	u.t.Helper()
	for {
		m := readServer(u.t, u.conn)
		if m.Type != aip.TypeCommand {
			continue
		}
		if !isToolQuestion(m) {
			return m
		}
		if res := u.run(m); res != nil {
			send(u.t, u.conn, res)
		}
	}
}

// run runs a command frame's actions, as UFO's client does: nil, no
// answer at all, when it cannot route the frame or one of its commands.
func (u *ufoClient) run(m *aip.ServerMessage) *aip.ClientMessage {
	u.t.Helper()
	if err := ufoRoute(m); err != nil {
		u.t.Log(err)
		return nil
	}
	res := make([]command.Result, len(m.Actions))
	for _, a := range m.Actions {
		if err := ufoTool(a); err != nil {
			u.t.Logf("UFO's client: %v (no answer to the frame)", err)
			return nil
		}
	}
	for i, a := range m.Actions {
		switch a.ToolName {
		case command.ListTools:
			u.lists++
			tt, _ := a.Parameters["tool_type"].(string)
			some := []command.ToolInfo{}
			for _, t := range ufoTools {
				if tt == "" || string(t.ToolType) == tt {
					some = append(some, t)
				}
			}
			b, _ := json.Marshal(some)
			res[i] = command.Result{Status: command.Success, Result: b, CallID: a.CallID}
			continue
		case "count":
			f, err := os.OpenFile(u.counter, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				u.t.Fatal(err)
			}
			fmt.Fprintln(f, a.CallID)
			f.Close()
		}
		res[i] = command.Succeeded(a.CallID, "ran "+a.ToolName)
	}
	return &aip.ClientMessage{Type: aip.TypeCommandResults, Status: m.Status, ClientType: aip.ClientDevice, ClientID: u.id,
		SessionID: m.SessionID, PrevResponseID: m.ResponseID, ActionResults: res}
}

// ufoTool is what UFO's router says of a command it cannot look up as
// tool_type::tool_name (computer.py's command2tool raises).
func ufoTool(a command.Command) error {
	if a.ToolName == "" || a.ToolName == command.ListTools && (a.ToolType == "" || a.ToolType.Valid()) {
		return nil
	}
	for _, t := range ufoTools {
		if t.Name == a.ToolName && (a.ToolType == "" || a.ToolType == t.ToolType) {
			return nil
		}
	}
	return fmt.Errorf("Tool %s is not registered in current computer", command.ToolKey(a.ToolType, a.ToolName))
}

// serve answers command frames until the task ends, and returns the
// response ids of the task's frames it ran (not the listings).
func (u *ufoClient) serve() []string {
	u.t.Helper()
	var ran []string
	for {
		m := readServer(u.t, u.conn)
		switch m.Type {
		case aip.TypeCommand:
			if res := u.run(m); res != nil {
				if !isToolQuestion(m) {
					ran = append(ran, m.ResponseID)
				}
				send(u.t, u.conn, res)
			}
		case aip.TypeTaskEnd:
			return ran
		}
	}
}

// runs is how often "count" ran on the device.
func (u *ufoClient) runs() int {
	b, err := os.ReadFile(u.counter)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		u.t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// countThenLook is a session that counts once, then looks at the device
// and finishes with what the count's result said.
func countThenLook(spec server.SessionSpec) (server.Runner, error) {
	return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
		first := spec.Dispatcher.Execute(ctx, []command.Command{{ToolName: "count", ToolType: command.Action}})
		spec.Dispatcher.Execute(ctx, []command.Command{{ToolName: "look", ToolType: command.DataCollection}})
		return &agent.Outcome{Status: fsm.Finish, Answer: first[0].Error}
	}), nil
}

// checkUnknown checks that a task whose count may have run when its
// device dropped ended as the agent decided, with its count unknown and
// the agent told so, and the device counted once.
func checkUnknown(t *testing.T, u *ufoClient, info server.TaskInfo, first *aip.ServerMessage, ran []string) {
	t.Helper()
	for _, id := range ran {
		if id == first.ResponseID {
			t.Errorf("the frame that may have run was sent again after the reconnection")
		}
	}
	if n := u.runs(); n != 1 {
		t.Errorf("count ran %d times on the device; want once", n)
	}
	if info.Status != server.StatusCompleted || !strings.Contains(info.Result, dispatcher.UnknownOutcome) {
		t.Errorf("task %s, the agent was told %q; want it told %q", info.Status, info.Result, dispatcher.UnknownOutcome)
	}
	if len(info.Commands) != 2 || info.Commands[0].ToolName != "count" || info.Commands[0].State != command.StateUnknown ||
		info.Commands[1].State != command.StateCompleted {
		t.Fatalf("commands %+v; want count unknown, look completed", info.Commands)
	}
	if !strings.Contains(info.Commands[0].Error, "its outcome is unknown") {
		t.Errorf("count's record says %q", info.Commands[0].Error)
	}
}

// TestUFOClientRoundNotRunTwice: UFO's device client drops its connection
// while it runs a round, and comes back. It would run a re-sent frame
// again, so the server does not send it: the round's command ends
// unknown, the agent is told to observe before retrying, and its next
// round goes out.
func TestUFOClientRoundNotRunTwice(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: countThenLook})
	u := newUFOClient(t, "ufo")
	u.register(f)
	d, code := dispatch(t, f, "ufo", "count once")
	if code != 200 {
		t.Fatalf("dispatch %d", code)
	}
	first := u.nextCommand()
	u.run(first)      // it ran ...
	u.conn.CloseNow() // ... and the connection dropped before its results went out
	f.logs.waitFor(t, 1, "device ufo disconnected")
	u.register(f)
	ran := u.serve()
	info, err := f.srv.Wait(context.Background(), d.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	checkUnknown(t, u, info, first, ran)
}

// TestUFOClientRoundNotRunTwiceAfterARestart: the same across a restart
// of the server: the round its journal holds without results is not sent
// again to UFO's client.
func TestUFOClientRoundNotRunTwiceAfterARestart(t *testing.T) {
	st := sqliteStore(t)
	a := newFixture(t, server.Options{NewSession: countThenLook, Store: st, CancelGrace: 10 * time.Millisecond})
	u := newUFOClient(t, "ufo")
	u.register(a)
	d, code := dispatch(t, a, "ufo", "count once")
	if code != 200 {
		t.Fatalf("dispatch %d", code)
	}
	first := u.nextCommand()
	u.run(first)
	suspended := make(chan error, 1)
	go func() { suspended <- a.srv.Suspend(context.Background()) }()
	expectClosed(t, u.conn) // it reads on, as UFO's client does, and sees the server go
	if err := <-suspended; err != nil {
		t.Fatal(err)
	}
	b := newFixture(t, server.Options{NewSession: countThenLook, Store: st})
	u.register(b)
	ran := u.serve()
	info, err := b.srv.Wait(context.Background(), d.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	checkUnknown(t, u, info, first, ran)
	rec, err := st.Task(context.Background(), d.TaskID) // Wait returns once the end is stored
	if err != nil {
		t.Fatal(err)
	}
	var stored server.TaskInfo
	if err := json.Unmarshal(rec.Data, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Commands) != 2 || stored.Commands[0].State != command.StateUnknown {
		t.Errorf("the task's record in the store: %+v", stored.Commands)
	}
}

// dropDevice is a device whose first command blocks until the test has
// cut its connection, and counts its runs.
type dropDevice struct {
	noopDevice
	started chan struct{}
	cut     chan struct{}
	runs    chan string
}

func (d *dropDevice) Execute(ctx context.Context, cmd command.Command) command.Result {
	d.runs <- cmd.ToolName
	if cmd.ToolName == "count" {
		close(d.started)
		<-d.cut
	}
	return command.Succeeded(cmd.CallID, "ran "+cmd.ToolName)
}

// TestSaucerClientRoundAnsweredAfterARestart: Saucer's client without a
// journal answers a round it ran from its memory when its server comes
// back as a new process: the server re-sends it (the client registers as
// the same run), and the result reaches the agent; nothing runs twice.
func TestSaucerClientRoundAnsweredAfterARestart(t *testing.T) {
	st := sqliteStore(t)
	a := newFixture(t, server.Options{NewSession: countThenLook, Store: st, CancelGrace: 10 * time.Millisecond})
	// One address for both servers, as after a restart: a's until it
	// stops, then b's.
	var h atomic.Pointer[http.Handler]
	ah := a.srv.Handler()
	h.Store(&ah)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	defer hs.Close()
	dev := &dropDevice{started: make(chan struct{}), cut: make(chan struct{}), runs: make(chan string, 10)}
	connect(t, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws", "dev", dev, nil)
	d, err := a.srv.Dispatch("dev", "count once", "t", "test")
	if err != nil {
		t.Fatal(err)
	}
	<-dev.started
	if err := a.srv.Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(dev.cut) // it finishes with no server to tell
	b := newFixture(t, server.Options{NewSession: countThenLook, Store: st})
	bh := b.srv.Handler()
	h.Store(&bh)
	info, err := b.srv.Wait(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != server.StatusCompleted || info.Result != "" || len(info.Commands) != 2 ||
		info.Commands[0].State != command.StateCompleted {
		t.Errorf("task %s %q, commands %+v; want the count completed, its result given to the agent", info.Status, info.Result, info.Commands)
	}
	close(dev.runs)
	var ran []string
	for n := range dev.runs {
		ran = append(ran, n)
	}
	if strings.Join(ran, ",") != "count,look" {
		t.Errorf("the device ran %v", ran)
	}
}

// TestDeviceThatNeverComesBack: a device that drops in the middle of a
// round and never returns ends its task failed, saying so, one
// AwayTimeout after it left: the round's command ends unknown at that
// moment, and the agents, which would have gone on (and finished the
// task as completed), are stopped.
func TestDeviceThatNeverComesBack(t *testing.T) {
	session := func(spec server.SessionSpec) (server.Runner, error) {
		return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
			for i := 0; i < 3 && ctx.Err() == nil; i++ {
				spec.Dispatcher.Execute(ctx, []command.Command{{ToolName: "count", ToolType: command.Action}})
			}
			return &agent.Outcome{Status: fsm.Finish, Answer: "finished anyway"}
		}), nil
	}
	f := newFixture(t, server.Options{NewSession: session, AwayTimeout: 300 * time.Millisecond})
	u := newUFOClient(t, "gone")
	u.register(f)
	d, code := dispatch(t, f, "gone", "count")
	if code != 200 {
		t.Fatalf("dispatch %d", code)
	}
	u.nextCommand()
	u.conn.CloseNow()
	info, err := f.srv.Wait(context.Background(), d.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != server.StatusFailed || info.Error != "device gone did not come back within 300ms" {
		t.Errorf("task %s %q; want failed: device gone did not come back within 300ms", info.Status, info.Error)
	}
	if len(info.Commands) != 1 || info.Commands[0].State != command.StateUnknown {
		t.Errorf("commands %+v; want the one sent, unknown, and no other round", info.Commands)
	}
	f.logs.waitFor(t, 1, "device gone did not come back within 300ms; forgotten")
	if cs := f.srv.Clients(); len(cs) != 0 {
		t.Errorf("the device that never came back is still registered: %+v", cs)
	}
}

// TestNothingBeforeTheAck: a frame sent to a device the moment it is
// registered (here, a task dispatched to it) reaches it after its
// registration acknowledgement, never before; 200 registrations in a row.
func TestNothingBeforeTheAck(t *testing.T) {
	f := newFixture(t, server.Options{MaxTasks: 1000})
	for i := range 200 {
		id := fmt.Sprintf("dev-%d", i)
		dispatched := make(chan error, 1)
		go func() {
			for {
				_, err := f.srv.Dispatch(id, "hello", "t", "test")
				if !errors.Is(err, server.ErrNoDevice) {
					dispatched <- err
					return
				}
			}
		}()
		c := f.rawConn(t)
		send(t, c, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientID: id,
			Metadata: map[string]any{"platform": "linux"}})
		first := readServer(t, c)
		if err := <-dispatched; err != nil {
			t.Fatalf("registration %d: dispatch: %v", i, err)
		}
		if first.Type != aip.TypeHeartbeat || first.SessionID != "" {
			t.Fatalf("registration %d: the first frame is %v, not the registration ack", i, first)
		}
		// Between the ack and the task, only the one question a UFO
		// client is asked when it registers: its tools.
		m := readServer(t, c)
		if m.Type == aip.TypeCommand {
			answerToolList(t, c, id, m, "LinuxAgent")
			m = readServer(t, c)
		}
		if m.Type != aip.TypeTask {
			t.Fatalf("registration %d: after the ack came %v, not the task", i, m)
		}
		c.CloseNow()
	}
}
