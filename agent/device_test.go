package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools"
)

// An app agent is told the device its host learnt: which device (of a
// constellation's) it works on, as whom and in which folder, so that it
// need not ask the shell; the hardware stays in the host's prompt.
func TestAppAgentKnowsWhereItWorks(t *testing.T) {
	info := command.DeviceInfo{Platform: "linux", OSVersion: "Debian GNU/Linux 12 (bookworm)", Hostname: "vm", CPUCount: 2, MemoryTotalGB: 23.5,
		Features: []string{"cli"}, User: "alice", UID: "1000", Home: "/home/alice", WorkDir: "/srv/reports"}
	dev := toolDevice(t, "obs", client.Options{Device: info}, tools.New("look", "Looks.", tools.Annotations{}, func(ctx context.Context, in noopIn) (noopOut, error) {
		return noopOut{OK: true}, nil
	}))
	set, _ := prompts.Load("")
	m := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: prompts.AssignTool, Arguments: map[string]any{"app": "obs", "subtask": "Look around."}}}},
		{ToolCalls: []scripted.ToolCall{{Name: prompts.FinishTool, Arguments: map[string]any{"result": "seen"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: prompts.FinishTool, Arguments: map[string]any{"result": "seen"}}}},
	}})
	// What a remote device's registration said (its id on the server)
	// comes first; the device's own answer adds the rest.
	s, err := agent.New(agent.Options{Model: m, Dispatcher: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), Prompts: set,
		Device: command.DeviceInfo{DeviceID: "linux2", Platform: "linux", Hostname: "vm"}, Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if out := s.Run(context.Background(), "Look around."); out.Answer != "seen" {
		t.Fatalf("%+v", out)
	}
	calls := m.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d model calls, want 3", len(calls))
	}
	where := []string{"- Device: linux2\n", "- User: alice (uid 1000), home /home/alice\n", "- Working directory: /srv/reports\n"}
	for i, who := range []string{"host", "app"} {
		system := calls[i].Messages[0].Content
		for _, w := range where {
			if !strings.Contains(system, w) {
				t.Errorf("the %s agent's prompt lacks %q:\n%s", who, w, system)
			}
		}
		if hw := strings.Contains(system, "- CPUs: 2"); hw != (who == "host") {
			t.Errorf("the %s agent's prompt shows the CPUs: %v:\n%s", who, hw, system)
		}
	}

	// An app agent driven directly is told what was known up front.
	m2 := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: prompts.FinishTool, Arguments: map[string]any{"result": "seen"}}}},
	}})
	s2, err := agent.New(agent.Options{Model: m2, Dispatcher: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), Prompts: set, Device: info})
	if err != nil {
		t.Fatal(err)
	}
	s2.NewApp("obs", "Look around.").Run(context.Background(), "Look around.")
	if system := m2.Calls()[0].Messages[0].Content; !strings.Contains(system, "- Working directory: /srv/reports\n") {
		t.Errorf("the app agent's prompt lacks the working directory:\n%s", system)
	}
}
