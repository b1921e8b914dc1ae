package evals_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
	"github.com/saucerhq/saucer/trajectory/record"
)

const demoTask = "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder"

// recordDemo runs the README's demo for real (scripted model, real shell
// and files tools in a temp dir) and records it.
func recordDemo(t testing.TB) string {
	t.Helper()
	cfg := config.Default()
	cfg.Model = "scripted:../examples/demo.yaml"
	ctx := context.Background()
	dev, err := local.Device(ctx, cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	y, _ := cfg.YAML()
	apps := map[string]string{}
	for _, ns := range dev.Namespaces() {
		apps[ns.Name] = ns.Description
	}
	device := dev.Device()
	dir := filepath.Join(t.TempDir(), "run")
	rec, err := record.Start(dir, trajectory.Session{Task: demoTask, Model: cfg.Model, Mode: "tools", Config: string(y), Device: &device, Apps: apps}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.New(cfg, session.Options{Device: dev, Observers: []func(agent.Event){rec.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, demoTask)
	if err := rec.Finish(out); err != nil || !out.OK() {
		t.Fatalf("demo: %s %q %v", out.Status, out.Answer, err)
	}
	return dir
}

func TestReplayIsIdentical(t *testing.T) {
	orig := recordDemo(t)
	tr, err := trajectory.Read(orig)
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(t.TempDir(), "replay")
	res, err := evals.Replay(context.Background(), tr, evals.ReplayOptions{RecordTo: again})
	if err != nil {
		t.Fatal(err)
	}
	if res.Diverged() {
		t.Fatalf("replay diverged:\n%s", res.Report())
	}
	if !res.Outcome.OK() || res.Outcome.Answer != tr.End().Answer {
		t.Fatalf("outcome %s %q", res.Outcome.Status, res.Outcome.Answer)
	}
	tr2, err := trajectory.Read(again)
	if err != nil {
		t.Fatal(err)
	}
	if d := trajectory.Diff(tr.Events, tr2.Events); d != "" {
		t.Fatalf("the replayed trajectory differs from the recorded one:\n%s", d)
	}
	// Every type of event was recorded, and the model calls hold full
	// requests and raw replies.
	for _, typ := range trajectory.Types {
		if typ == trajectory.TypeProgress {
			continue // only a command that runs a while reports progress; the demo's do not
		}
		if len(tr.Of(typ)) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	if c := tr.Calls()[0]; len(c.Request.Messages) < 2 || len(c.Request.Tools) == 0 || c.Response == nil || c.Response.Usage.PromptTokens == 0 {
		t.Errorf("first call: %+v", c)
	}
}

// tamper rewrites the first line containing old.
func tamper(t *testing.T, dir, old, new string) {
	t.Helper()
	p := filepath.Join(dir, trajectory.EventsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"type":"dispatch"`) && strings.Contains(l, old) {
			lines[i] = strings.Replace(l, old, new, 1)
			os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
			return
		}
	}
	t.Fatalf("no dispatch line contains %q", old)
}

func TestReplayTamperedResultDiverges(t *testing.T) {
	dir := recordDemo(t)
	// The device now "said" another byte count: the next prompt, which
	// shows the result to the model, is not the recorded one.
	tamper(t, dir, `"bytes_written":18`, `"bytes_written":99`)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := evals.Replay(context.Background(), tr, evals.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Diverged() || len(res.ModelDivergences) == 0 {
		t.Fatalf("no model divergence: %s", res.Report())
	}
	d := res.ModelDivergences[0]
	if d.Call != 3 || !strings.Contains(d.Diff, `bytes_written\":18`) || !strings.Contains(d.Diff, `bytes_written\":99`) {
		t.Errorf("divergence %s", d)
	}
	if res.Outcome.OK() {
		t.Error("a diverging replay finished")
	}
}

func TestReplayTamperedCommandDiverges(t *testing.T) {
	dir := recordDemo(t)
	tamper(t, dir, `"command":"ls -l notes"`, `"command":"ls -la notes"`)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := evals.Replay(context.Background(), tr, evals.ReplayOptions{})
	if len(res.DeviceDivergences) == 0 {
		t.Fatalf("no device divergence: %s", res.Report())
	}
	d := res.DeviceDivergences[0]
	if !strings.Contains(d.Diff, `-       "command": "ls -la notes"`) || !strings.Contains(d.Diff, `+       "command": "ls -l notes"`) {
		t.Errorf("diff:\n%s", d.Diff)
	}
}

func TestReplayLiveModelOnRecordedDevice(t *testing.T) {
	dir := recordDemo(t)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Another "model": it skips the file write and goes straight to the
	// shell, whose recorded listing it gets; then it finishes.
	m := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "assign_subtask", Arguments: map[string]any{"app": "shell", "subtask": "List the notes folder with sizes (ls -l notes)."}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": "ls -l notes"}}}},
		{Expect: "hello.txt", ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "one file"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "listed"}}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := evals.Replay(ctx, tr, evals.ReplayOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Outcome.OK() || res.Outcome.Answer != "listed" || len(res.DeviceDivergences) != 0 {
		t.Fatalf("%s %q %s", res.Outcome.Status, res.Outcome.Answer, res.Report())
	}
}

func readTrajectory(t *testing.T, dir string) *trajectory.Trajectory {
	t.Helper()
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func trajectoryDiff(a, b string) string { return trajectory.TextDiff(a, b) }

func usage(p, c int) llm.Usage { return llm.Usage{PromptTokens: p, CompletionTokens: c} }
