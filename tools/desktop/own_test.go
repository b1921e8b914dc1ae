package desktop_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/tools/desktop"
)

// calculatorReplies compute 12 × 7 in galculator, launched by the agent.
func calculatorReplies() []scripted.Reply {
	return []scripted.Reply{
		{Expect: "calculator", ToolCalls: call("assign_subtask", map[string]any{"app": "calculator",
			"subtask": "Compute 12 × 7 with the calculator and report the value on its display."})},
		{Expect: "galculator has no window open: launch it with launch_app", ToolCalls: call("launch_app", map[string]any{})},
		{Expect: `[14] toggle button "1"`, ToolCalls: click(14, 13)},
		{Expect: `[33] toggle button "7"`, ToolCalls: click(22, 33, 12)},
		{Expect: `text="84"`, ToolCalls: call("finish_task", map[string]any{"result": "84"})},
		{Expect: "84", ToolCalls: call("finish_task", map[string]any{"result": "12 × 7 = 84, read from the calculator's display."})},
	}
}

// existingDisplays are the desktops of their own this test process runs
// already (the package's shared desktop): not the test's leftovers.
func existingDisplays() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("saucer-display-%d.*", os.Getpid())))
	return dirs
}

// displayLeftovers lists the folders and processes of desktops of their
// own that this test process started, but for the one in keep.
func displayLeftovers(keep ...string) []string {
	prefix := fmt.Sprintf("saucer-display-%d.", os.Getpid())
	kept := map[string]bool{}
	for _, k := range keep {
		kept[filepath.Base(k)] = true
	}
	var out []string
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range dirs {
		if !kept[filepath.Base(d)] {
			out = append(out, d)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			v, ok := bytes.CutPrefix(kv, []byte("SAUCER_DISPLAY="))
			if ok && strings.HasPrefix(string(v), prefix) && !kept[string(v)] {
				stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
				if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
					continue
				}
				cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	return out
}

// A desktop app agent on a desktop of its own (tools.desktop.display:
// own) computes in a calculator it launched there, while the person's
// display (an Xvfb standing in for it, named by DISPLAY and with its own
// session bus, as a logged-in desktop has) gets no window, no
// application and no input; after the session nothing of the agent's
// desktop is left.
func TestAgentOnADesktopOfItsOwnLeavesThePersonAlone(t *testing.T) {
	desktoptest.Require(t, "galculator", "mousepad")
	running := existingDisplays()
	person := desktoptest.Start(t)
	t.Setenv("DISPLAY", person.Display)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", person.BusAddr)
	t.Setenv("WAYLAND_DISPLAY", "")
	// The person is writing in an editor on their own display.
	pd := desktop.New(desktop.Options{Display: person.Display, Bus: person.BusAddr, Env: person.Env})
	defer pd.Close()
	ctx := context.Background()
	eff, err := pd.Launch(ctx, []string{"mousepad"}, "")
	if err != nil {
		t.Fatal(err)
	}
	editor := eff.NewWindows[0]
	if _, err := pd.Type(ctx, desktop.Target{}, editor.ID, "my own notes", false); err != nil {
		t.Fatal(err)
	}
	before, err := pd.Observe(ctx, editor.ID, desktop.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}

	out, _, _ := runTask(t, "{display: own}", "What is 12 × 7? Use the calculator and answer with the value on its display.", calculatorReplies())
	if out.Status != fsm.Finish || !strings.Contains(out.Answer, "84") {
		t.Fatalf("outcome %s %q (%v)", out.Status, out.Answer, out.Err)
	}

	ws, err := pd.Windows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].App != "mousepad" {
		t.Fatalf("the person's display has windows %+v; want only their editor", ws)
	}
	after, err := pd.Observe(ctx, editor.ID, desktop.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Text() != before.Text() {
		t.Fatalf("the person's editor changed while the agent worked:\nbefore:\n%s\nafter:\n%s", before.Text(), after.Text())
	}
	if left := displayLeftovers(append(running, person.Dir())...); len(left) > 0 {
		t.Fatalf("the agent's desktop left %v", left)
	}
}

// The same task under a headless sway started for the session
// (tools.desktop.display: sway): the agent sees and acts on Wayland.
func TestAgentComputesUnderSway(t *testing.T) {
	desktoptest.RequireKind(t, display.Sway, "galculator")
	running := existingDisplays()
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	out, model, _ := runTask(t, "{display: sway}", "What is 12 × 7? Use the calculator and answer with the value on its display.", calculatorReplies())
	if out.Status != fsm.Finish || !strings.Contains(out.Answer, "84") {
		t.Fatalf("outcome %s %q (%v)", out.Status, out.Answer, out.Err)
	}
	// The agent saw the window's screenshot, taken through wlr-screencopy.
	req := model.Calls()[2]
	last := req.Messages[len(req.Messages)-1]
	if len(last.Images) != 1 || !strings.HasPrefix(string(last.Images[0].Data), "\x89PNG") {
		t.Fatalf("the step's request carries %d images on its last turn", len(last.Images))
	}
	if left := displayLeftovers(running...); len(left) > 0 {
		t.Fatalf("the agent's desktop left %v", left)
	}
}

// An application the agent starts from the shell, on a desktop of its
// own, shows there too: the shell's commands get the agent's display and
// bus, not the person's (an Xvfb standing in for it). It is stopped with
// the session.
func TestShellOnADesktopOfItsOwnStartsAppsThere(t *testing.T) {
	desktoptest.Require(t, "galculator")
	running := existingDisplays()
	person := desktoptest.Start(t)
	t.Setenv("DISPLAY", person.Display)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", person.BusAddr)
	t.Setenv("WAYLAND_DISPLAY", "")
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcp: {use: [shell, desktop]}\ntools: {desktop: {display: own}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dev, err := local.NewDevice(ctx, cfg, t.TempDir(), local.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	r := dev.Execute(ctx, command.Command{Namespace: "shell", ToolName: "execute_command", CallID: "1",
		Parameters: map[string]any{"command": "setsid galculator </dev/null >/dev/null 2>&1 &"}})
	if !r.OK() {
		t.Fatalf("the shell: %s %s", r.Error, r.Result)
	}
	// The agent's desktop tools see the calculator (with a deadline).
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := dev.Execute(ctx, command.Command{Namespace: "desktop", ToolName: desktop.ToolListWindows, CallID: "2"})
		if !r.OK() {
			t.Fatalf("list_windows: %s", r.Error)
		}
		if strings.Contains(string(r.Result), "galculator") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's desktop shows no calculator started from its shell: %s", r.Result)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pd := desktop.New(desktop.Options{Display: person.Display, Bus: person.BusAddr, Env: person.Env})
	defer pd.Close()
	if ws, err := pd.Windows(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("the person's display has windows %+v (%v); want none", ws, err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if left := displayLeftovers(append(running, person.Dir())...); len(left) > 0 {
		t.Fatalf("the agent's desktop left %v", left)
	}
}
