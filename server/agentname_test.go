package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server"
)

// askedBy is a session whose host agent, then app agent, asks for one
// command each, as Saucer's agents do (command.WithAgent).
func askedBy(spec server.SessionSpec) (server.Runner, error) {
	return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
		for _, who := range []string{command.HostAgentName, command.AppAgentName} {
			res := spec.Dispatcher.Execute(command.WithAgent(ctx, who), []command.Command{{ToolName: "look", ToolType: command.DataCollection}})
			if !res[0].OK() {
				return &agent.Outcome{Status: fsm.Fail, Answer: res[0].Error}
			}
		}
		return &agent.Outcome{Status: fsm.Finish, Answer: "done"}
	}), nil
}

// TestCommandFramesNameTheAgentUFORoutesBy: UFO's device client runs a
// command frame through the agent its agent_name names, so each frame
// names the one UFO's server would: on Windows the agent that asks, on
// Linux and mobile the platform's agent, or the device's configured one.
func TestCommandFramesNameTheAgentUFORoutesBy(t *testing.T) {
	for _, tc := range []struct {
		platform  string
		configure string // remote.device_agents entry for the device
		want      []string
	}{
		{platform: "windows", want: []string{"HostAgent", "AppAgent"}},
		{platform: "linux", want: []string{"LinuxAgent", "LinuxAgent"}},
		{platform: "mobile", want: []string{"MobileAgent", "MobileAgent"}},
		{platform: "macos", configure: "HardwareAgent", want: []string{"HardwareAgent", "HardwareAgent"}},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			opts := server.Options{NewSession: askedBy}
			if tc.configure != "" {
				opts.DeviceAgents = map[string]string{"ufo": tc.configure}
			}
			f := newFixture(t, opts)
			u := newUFOClient(t, "ufo")
			u.platform = tc.platform
			u.register(f)
			d, code := dispatch(t, f, "ufo", "look twice")
			if code != 200 {
				t.Fatalf("dispatch %d", code)
			}
			var got []string
			for range tc.want {
				m := u.nextCommand()
				got = append(got, m.AgentName)
				if res := u.run(m); res != nil {
					send(t, u.conn, res)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("agent_name %v, want %v", got, tc.want)
			}
			info, err := f.srv.Wait(context.Background(), d.TaskID)
			if err != nil || info.Status != server.StatusCompleted {
				t.Errorf("task %v %v", info.Status, err)
			}
		})
	}
}

// TestUnaddressableUFODeviceRefused: a UFO client on a platform UFO's
// server has no agent for cannot run Saucer's commands; a task for it is
// refused in words that say what to configure, not sent frames it would
// never answer.
func TestUnaddressableUFODeviceRefused(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: askedBy})
	u := newUFOClient(t, "ufo")
	u.platform = "macos"
	u.register(f)
	var body map[string]string
	code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "ufo", Request: "look", TaskName: "t"}, &body)
	if code != 400 || !strings.Contains(body["error"], `platform "macos"`) || !strings.Contains(body["error"], "remote.device_agents.ufo") {
		t.Fatalf("dispatch %d %q; want 400 naming the platform and the setting", code, body["error"])
	}
}
