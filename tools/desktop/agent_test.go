package desktop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/tools/desktop"
	"github.com/saucerhq/saucer/trajectory"
)

// runDesktopTask runs task with the scripted replies on a device
// configured as a user would: app is a named desktop application (kind
// desktop, "calculator" for galculator, "editor" for mousepad), whose
// agent observes its window each step without being told to. It returns
// the outcome, the model (to read what it was asked) and the recording;
// the device is closed, and the applications it launched with it.
func runDesktopTask(t *testing.T, s *desktoptest.Session, app, task string, replies []scripted.Reply) (*agent.Outcome, *scripted.Model, string) {
	t.Helper()
	for _, kv := range s.Env { // the applications' settings stay in the session's folder
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "GSETTINGS_BACKEND" {
			t.Setenv(k, v)
		}
	}
	return runTask(t, `{display: "`+s.Display+`", bus: "`+s.BusAddr+`"}`, task, replies)
}

// runTask is runDesktopTask with tools.desktop set to desktopYAML.
func runTask(t *testing.T, desktopYAML, task string, replies []scripted.Reply) (*agent.Outcome, *scripted.Model, string) {
	t.Helper()
	workdir := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	cfgYAML := `
mcp:
  use: [shell, calculator, editor]
  servers:
    calculator: {kind: desktop, command: galculator, description: "The calculator (galculator)."}
    editor: {kind: desktop, command: mousepad, description: "The text editor (mousepad)."}
tools:
  desktop: ` + desktopYAML + `
`
	if err := os.WriteFile(cfgFile, []byte(cfgYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dev, err := local.NewDevice(ctx, cfg, workdir, local.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(t.TempDir(), "run")
	apps := map[string]string{}
	for _, ns := range dev.Namespaces() {
		apps[ns.Name] = ns.Description
	}
	rec, err := record.Start(runDir, trajectory.Session{Task: task, Model: "scripted", Config: cfgYAML, Apps: apps}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(scripted.Script{Replies: replies})
	sess, err := session.New(cfg, session.Options{Device: dev, Model: model, Observers: []func(agent.Event){rec.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, task)
	if err := rec.Finish(out); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	return out, model, runDir
}

func call(name string, args map[string]any) []scripted.ToolCall {
	return []scripted.ToolCall{{Name: name, Arguments: args}}
}

func click(ids ...int) []scripted.ToolCall {
	var out []scripted.ToolCall
	for _, id := range ids {
		out = append(out, scripted.ToolCall{Name: "click", Arguments: map[string]any{"id": id}})
	}
	return out
}

func TestAgentComputesInCalculator(t *testing.T) {
	desktoptest.Require(t, "galculator")
	s := desktoptest.Start(t)
	task := "What is 12 × 7? Use the calculator and answer with the value on its display."
	out, model, runDir := runDesktopTask(t, s, "calculator", task, []scripted.Reply{
		{Expect: "calculator", ToolCalls: call("assign_subtask", map[string]any{"app": "calculator",
			"subtask": "Compute 12 × 7 with the calculator and report the value on its display."})},
		// No window yet: the observation says so, and the agent launches one.
		{Expect: "galculator has no window open: launch it with launch_app", ToolCalls: call("launch_app", map[string]any{})},
		// The observation lists the keypad; the ids come from it.
		{Expect: `[14] toggle button "1"`, Text: "Press 1 and 2.", ToolCalls: click(14, 13)},
		{Expect: `[33] toggle button "7"`, Text: "Now times 7, equals.", ToolCalls: click(22, 33, 12)},
		// The display now reads 84, in the observation and in the effect.
		{Expect: `text="84"`, ToolCalls: call("finish_task", map[string]any{"result": "84"})},
		{Expect: "84", ToolCalls: call("finish_task", map[string]any{"result": "12 × 7 = 84, read from the calculator's display."})},
	})
	if out.Status != fsm.Finish || !strings.Contains(out.Answer, "84") {
		t.Fatalf("outcome %s %q (%v)", out.Status, out.Answer, out.Err)
	}
	calls := model.Calls()
	// From its second step on, the app agent's request carries the
	// annotated screenshot, as a PNG image on its last turn.
	req := calls[2]
	last := req.Messages[len(req.Messages)-1]
	if len(last.Images) != 1 || !strings.HasPrefix(string(last.Images[0].Data), "\x89PNG") {
		t.Fatalf("the step's request carries %d images on its last turn", len(last.Images))
	}
	if !strings.Contains(last.Content, "id written at the box's top-left corner") {
		t.Errorf("the observation does not explain the ids:\n%s", last.Content)
	}
	for _, m := range req.Messages {
		if strings.Contains(m.Content, "iVBORw0KGgo") {
			t.Fatalf("a screenshot went to the model as base64 text in %s turn", m.Role)
		}
	}
	// The answer came from the display: the effect of "=" showed it turn 84.
	if !strings.Contains(calls[4].Messages[len(calls[4].Messages)-2].Content, `"after":"84"`) {
		t.Errorf("the model was not shown the display turning 84")
	}
	// The device closed, and the calculator it launched with it.
	d := desktop.New(desktop.Options{Display: s.Display, Bus: s.BusAddr})
	defer d.Close()
	if ws, err := d.Windows(context.Background()); err != nil || len(ws) != 0 {
		t.Fatalf("windows after the device closed: %+v (%v)", ws, err)
	}
	// The recording replays offline, with the desktop gone: the recorded
	// results (screenshots included) stand in for it.
	s.Close()
	tr, err := trajectory.Read(runDir)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := evals.Replay(context.Background(), tr, evals.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Outcome.Status != fsm.Finish || !strings.Contains(rr.Outcome.Answer, "84") || len(rr.ModelDivergences)+len(rr.DeviceDivergences) > 0 {
		t.Fatalf("replay: %s %q, %d model and %d device divergences: %+v %+v", rr.Outcome.Status, rr.Outcome.Answer,
			len(rr.ModelDivergences), len(rr.DeviceDivergences), rr.ModelDivergences, rr.DeviceDivergences)
	}
	// Screenshots are in the recording as PNG files.
	pngs, _ := filepath.Glob(filepath.Join(runDir, trajectory.ArtifactsDir, "*.png"))
	if len(pngs) == 0 {
		entries, _ := os.ReadDir(filepath.Join(runDir, trajectory.ArtifactsDir))
		t.Fatalf("no screenshot artifacts in the recording: %v", entries)
	}
}

func TestAgentWritesAndSavesInEditor(t *testing.T) {
	desktoptest.Require(t, "mousepad")
	s := desktoptest.Start(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	task := "Write two lines, 'first line' and 'second line', in the editor and save them as " + file
	out, model, _ := runDesktopTask(t, s, "editor", task, []scripted.Reply{
		{Expect: "editor", ToolCalls: call("assign_subtask", map[string]any{"app": "editor",
			"subtask": "Type 'first line' and 'second line' on two lines in the editor and save them as " + file + "."})},
		{Expect: "mousepad has no window open: launch it with launch_app", ToolCalls: call("launch_app", map[string]any{})},
		// launch_app gave the window the focus: its text is focused.
		{Expect: `[8] text {editable, focused}`, ToolCalls: call("type_text", map[string]any{"id": 8, "text": "first line\nsecond line"})},
		{Expect: `[8] text text="first line\nsecond line"`, ToolCalls: call("press_keys", map[string]any{"keys": []string{"ctrl+s"}})},
		// The effect names the dialog; the next observation is of it.
		{Expect: `"title":"Save As"`, ToolCalls: call("set_value", map[string]any{"id": 9, "value": file})},
		// Return in the name field saves: the Save button's id depends on
		// how much of the dialog (places, recent files) has filled in.
		{Expect: `] push button "Save"`, ToolCalls: call("press_keys", map[string]any{"keys": []string{"Return"}})},
		{Expect: `"closed_windows"`, ToolCalls: call("finish_task", map[string]any{"result": "Saved the two lines as " + file + "."})},
		{Expect: "Saved the two lines", ToolCalls: call("finish_task", map[string]any{"result": "Done: " + file + " holds the two lines."})},
	})
	if out.Status != fsm.Finish {
		calls := model.Calls()
		last := calls[len(calls)-1]
		t.Fatalf("outcome %s %q (%v); last request ends:\n%s", out.Status, out.Answer, out.Err, last.Messages[len(last.Messages)-1].Content)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSuffix(string(got), "\n") != "first line\nsecond line" {
		t.Fatalf("the saved file holds %q", got)
	}
}
