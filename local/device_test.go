package local_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/sandboxtest"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/sandbox"
	"github.com/saucerhq/saucer/session"
)

// whereTheShellIs asks the device's own shell who it runs as, its home, the
// folder it starts in and the host name.
func whereTheShellIs(t *testing.T, dev *client.Client) (user, uid, home, pwd, host string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := dev.Execute(ctx, command.Command{Namespace: "shell", ToolName: "execute_command", ToolType: command.Action,
		Parameters: map[string]any{"command": `id -un; id -u; printf '%s\n' "$HOME"; pwd; uname -n`}})
	if !res.OK() {
		t.Fatal(res.Error)
	}
	var out struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	if len(lines) != 5 {
		t.Fatalf("the shell said %q", out.Stdout)
	}
	return lines[0], lines[1], lines[2], lines[3], lines[4]
}

// checkFacts: what the device says of itself, to the host agent's
// get_device_info too, is what its shell finds.
func checkFacts(t *testing.T, dev *client.Client) command.DeviceInfo {
	t.Helper()
	res := dev.Execute(context.Background(), command.Command{ToolName: command.GetDeviceInfo, ToolType: command.DataCollection})
	var d command.DeviceInfo
	if err := json.Unmarshal(res.Result, &d); !res.OK() || err != nil {
		t.Fatalf("get_device_info: %s %v", res.Error, err)
	}
	user, uid, home, pwd, host := whereTheShellIs(t, dev)
	if d.User != user || d.UID != uid || d.Home != home || d.WorkDir != pwd || d.Hostname != host {
		t.Errorf("the device says user %q uid %q home %q workdir %q host %q; its shell says %q %q %q %q %q",
			d.User, d.UID, d.Home, d.WorkDir, d.Hostname, user, uid, home, pwd, host)
	}
	return d
}

func TestLocalDeviceSaysWhereTheToolsRun(t *testing.T) {
	dir := t.TempDir()
	dev, err := local.Device(context.Background(), config.Default(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if d := checkFacts(t, dev); d.WorkDir != dir {
		t.Errorf("workdir %q, want %q", d.WorkDir, dir)
	}
}

// In a sandbox the tools run as root in the sandbox's working folder
// (/root, where the work folder is bound), under its host name: the
// device says so, not where Saucer runs.
func TestSandboxedDeviceSaysWhereTheToolsRun(t *testing.T) {
	sandboxtest.Require(t)
	cfg := config.Default()
	cfg.Device = config.DeviceSandbox
	dev, err := local.NewDevice(context.Background(), cfg, t.TempDir(), local.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	d := checkFacts(t, dev)
	if d.User != "root" || d.UID != "0" || d.WorkDir != sandbox.DefaultWorkDir || d.Hostname != sandbox.DefaultHostname {
		t.Errorf("%+v", d)
	}
}

// The agents' prompts, the host's and the app's, say who the tools run as
// and where they start.
func TestPromptsSayWhereTheToolsRun(t *testing.T) {
	cfg, dir := setup(t, "tools")
	r := runTask(t, context.Background(), cfg, dir, script(t, demoTools), "Write 'Saucer was here' to out/proof.txt and list out/", session.Options{})
	if r.out.Answer == "" {
		t.Fatalf("%+v", r.out)
	}
	user, uid, home, _, _ := whereTheShellIs(t, mustDevice(t, cfg, dir))
	want := []string{"- User: " + user + " (uid " + uid + "), home " + home + "\n", "- Working directory: " + dir + "\n"}
	for i, call := range r.model.Calls() {
		system := call.Messages[0].Content
		for _, w := range want {
			if !strings.Contains(system, w) {
				t.Errorf("call %d's system prompt lacks %q:\n%s", i, w, system)
			}
		}
	}
}

func mustDevice(t *testing.T, cfg *config.Config, dir string) *client.Client {
	t.Helper()
	dev, err := local.Device(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}
