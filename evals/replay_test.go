package evals_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/replay"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

const demoTask = "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder"

// recordDemo runs the README's demo for real (scripted model, real shell
// and files tools in a temp dir) and records it.
func recordDemo(t testing.TB) string {
	t.Helper()
	cfg := config.Default()
	cfg.Model = "scripted:../examples/demo.yaml"
	dir, out := recordRun(t, cfg, t.TempDir(), demoTask, session.Options{})
	if !out.OK() {
		t.Fatalf("demo: %s %q %v", out.Status, out.Answer, out.Err)
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
	d := firstModelDivergence(t, dir)
	if d.Call != 3 || !strings.Contains(d.Diff, `bytes_written\":18`) || !strings.Contains(d.Diff, `bytes_written\":99`) {
		t.Errorf("divergence %s", d)
	}
}

// firstModelDivergence replays the recording in dir offline, which must
// diverge at a model call and not finish; it returns the first such
// divergence.
func firstModelDivergence(t *testing.T, dir string) replay.Divergence {
	t.Helper()
	res, err := evals.Replay(context.Background(), readTrajectory(t, dir), evals.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Diverged() || len(res.ModelDivergences) == 0 {
		t.Fatalf("no model divergence: %s", res.Report())
	}
	if res.Outcome.OK() {
		t.Error("a diverging replay finished")
	}
	return res.ModelDivergences[0]
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

// mutateRecording copies the committed recording of the demo and changes
// one byte in the event line of the given type whose text holds at: the
// byte at offset off within the first occurrence of at becomes to.
func mutateRecording(t *testing.T, typ string, n int, at string, off int, to byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.CopyFS(dir, os.DirFS("suites/recordings/hello")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, trajectory.EventsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	seen := 0
	for i, l := range lines {
		if !strings.Contains(l, `"type":"`+typ+`"`) {
			continue
		}
		if seen++; seen != n {
			continue
		}
		k := strings.Index(l, at)
		if k < 0 {
			t.Fatalf("%s event %d does not hold %q", typ, n, at)
		}
		line := []byte(l)
		if line[k+off] == to {
			t.Fatalf("byte %d of %q is already %q", off, at, to)
		}
		line[k+off] = to
		lines[i] = string(line)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Fatalf("no %s event %d", typ, n)
	return ""
}

// One byte changed anywhere the replay checks (a recorded prompt, early
// or late in a request, a tool's description or schema, a command's
// result) makes the replay report a divergence at the model call that
// first differs, with the byte in its diff.
func TestReplayFindsOneChangedByte(t *testing.T) {
	for _, tc := range []struct {
		name string
		// the n-th event of type typ; the byte at off in at becomes to
		typ    string
		n      int
		at     string
		off    int
		to     byte
		call   int    // the model call that must diverge first
		reason string // what its reason names
		was    string // the diff shows the recorded text ("-") and the live one ("+")
		is     string
	}{
		{"system prompt of an app's first call", "model_call", 5, `the \"shell\" app`, 10, 'L', 5, "message 1 (system)", `shelL`, `shell`},
		{"status turn of a late call", "model_call", 7, `Round 3 of 4`, 11, '5', 7, "message 7 (user)", `Round 3 of 5`, `Round 3 of 4`},
		{"a message later calls carry", "model_call", 4, `Two parts: write`, 0, 't', 4, "message 3 (assistant)", `two parts`, `Two parts`},
		{"a tool's description", "model_call", 5, `Run a command with bash`, 6, 'C', 5, "tool 1 (execute_command)", `Run a Command`, `Run a command`},
		{"a tool's input schema", "model_call", 2, `"description":"Append`, 20, 'f', 2, "tool 4 (write_file)", `Appenf`, `Append`},
		{"a step's result", "dispatch", 3, `"bytes_written":18`, 17, '9', 3, "message 4 (tool)", `bytes_written\":19`, `bytes_written\":18`},
		{"a command's output", "dispatch", 5, `hello.txt\n`, 4, 'p', 6, "message 4 (tool)", `hellp.txt`, `hello.txt`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := firstModelDivergence(t, mutateRecording(t, tc.typ, tc.n, tc.at, tc.off, tc.to))
			if d.Call != tc.call || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("diverged at call %d (%s), want call %d (%s)", d.Call, d.Reason, tc.call, tc.reason)
			}
			if !strings.Contains(d.Diff, tc.was) || !strings.Contains(d.Diff, tc.is) {
				t.Errorf("the diff does not show %q against %q:\n%s", tc.was, tc.is, d.Diff)
			}
		})
	}
}
