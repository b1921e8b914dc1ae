package server_test

import (
	"context"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
)

// A device connected as `saucer client` connects (the configured tools
// over AIP, on loopback) registers where its tools run; the server shows
// it, and a task's agents, the host's and the app's, are told it with the
// device's id, which its host name does not give.
func TestRemoteDeviceTellsWhereItsToolsRun(t *testing.T) {
	s, err := scripted.Parse([]byte(`
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Say which folder the shell starts in."}}]
  - tool_calls: [{name: execute_command, arguments: {command: pwd}}]
  - tool_calls: [{name: finish_task, arguments: {result: "here"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "here"}}]
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(*s)
	cfg := config.Default()
	f := newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{Model: model})})
	dir := t.TempDir()
	dev, err := local.NewDevice(context.Background(), cfg, dir, local.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	connect(t, f.wsURL, "linux2", dev, nil)
	me, err := user.Current()
	if err != nil {
		t.Skip(err)
	}

	var clients struct{ Clients []server.ClientInfo }
	f.api(t, "GET", "/api/clients", nil, &clients)
	if len(clients.Clients) != 1 {
		t.Fatalf("%+v", clients)
	}
	if d := clients.Clients[0].Device; d.DeviceID != "linux2" || d.User != me.Username || d.UID != me.Uid || d.WorkDir != dir || d.Home == "" {
		t.Errorf("the server holds %+v", d)
	}

	var d server.DispatchResponse
	if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "linux2", Request: "Which folder does the shell start in?"}, &d); code != 200 {
		t.Fatalf("dispatch: %d %+v", code, d)
	}
	if info := f.waitTask(t, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task ended %s: %s", info.Status, info.Error)
	}
	calls := model.Calls()
	if len(calls) < 2 {
		t.Fatalf("%d model calls", len(calls))
	}
	want := []string{"- Device: linux2\n", "- User: " + me.Username + " (uid " + me.Uid + ")", "- Working directory: " + dir + "\n"}
	for i, who := range []string{"host", "app"} {
		system := calls[i].Messages[0].Content
		for _, w := range want {
			if !strings.Contains(system, w) {
				t.Errorf("the %s agent's prompt lacks %q:\n%s", who, w, system)
			}
		}
	}
}

// A UFO device client registers a system_info that need not name the
// device: a task's agents still know it by the id the server (and a
// constellation) uses.
func TestTaskKnowsItsDeviceByTheServersID(t *testing.T) {
	got := make(chan command.DeviceInfo, 1)
	f := newFixture(t, server.Options{NewSession: func(spec server.SessionSpec) (server.Runner, error) {
		got <- spec.Device
		return runnerFunc(func(context.Context, string) *agent.Outcome { return &agent.Outcome{Status: fsm.Finish, Answer: "ok"} }), nil
	}})
	c := f.rawConn(t)
	register(t, c, "ufo-linux") // system_info: platform and hostname only
	var d server.DispatchResponse
	if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "ufo-linux", Request: "Say hello."}, &d); code != 200 {
		t.Fatalf("dispatch: %d %+v", code, d)
	}
	select {
	case dev := <-got:
		if dev.DeviceID != "ufo-linux" || dev.Hostname != "h" {
			t.Errorf("the task's agents are told %+v", dev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task did not start")
	}
}
