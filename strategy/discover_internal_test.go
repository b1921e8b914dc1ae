package strategy

import (
	"context"
	"slices"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
)

// answers is a device that answers discovery.
type answers map[string]any

func (a answers) Execute(_ context.Context, cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	for i, c := range cmds {
		out[i] = command.Succeeded(c.CallID, a[c.ToolName])
	}
	return out
}

// Discovery adds the device's answer to what was known of it without
// writing into the known info's slices and maps, which its giver (the
// server's device registry) shares and reads meanwhile.
func TestDiscoverLeavesTheKnownDeviceAlone(t *testing.T) {
	features := make([]string, 2, 8) // room to decode into
	features[0], features[1] = "cli", "gui"
	custom := map[string]any{"rack": "4"}
	known := command.DeviceInfo{Hostname: "lab", Features: features, Custom: custom}
	pc := NewContext(Setup{Agent: Agent{Name: "host", Role: fsm.Host}, Device: known,
		Dispatcher: answers{command.GetMCPTools: []command.ToolInfo{{Name: "run", Namespace: "shell"}},
			command.GetDeviceInfo: map[string]any{"supported_features": []string{"office", "browser"}, "custom_metadata": map[string]any{"rack": "9"}}}})
	if err := (discoverStrategy{}).Execute(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	if got := pc.Device().Features; !slices.Equal(got, []string{"office", "browser"}) {
		t.Errorf("discovered features %v", got)
	}
	if !slices.Equal(features[:2], []string{"cli", "gui"}) || custom["rack"] != "4" {
		t.Errorf("discovery wrote into the known device's info: features %v, custom %v", features[:2], custom)
	}
}

// A device's answer is decoded once for every session that meets it (the
// cases of a replayed suite), but each session gets a list and a map of
// its own: one changing its device info changes no other's.
func TestDiscoverSharesNoDeviceInfo(t *testing.T) {
	dev := answers{command.GetMCPTools: []command.ToolInfo{{Name: "run", Namespace: "shell"}},
		command.GetDeviceInfo: map[string]any{"hostname": "vm", "supported_features": []string{"cli"}, "custom_metadata": map[string]any{"rack": "9"}}}
	discover := func() command.DeviceInfo {
		pc := NewContext(Setup{Agent: Agent{Name: "host", Role: fsm.Host}, Dispatcher: dev})
		if err := (discoverStrategy{}).Execute(context.Background(), pc); err != nil {
			t.Fatal(err)
		}
		return pc.Device()
	}
	first := discover()
	first.Features[0], first.Custom["rack"] = "changed", "changed"
	second := discover()
	if second.Hostname != "vm" || !slices.Equal(second.Features, []string{"cli"}) || second.Custom["rack"] != "9" {
		t.Errorf("the second session's device info %+v", second)
	}
}
