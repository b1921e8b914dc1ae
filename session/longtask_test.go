package session_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/session"
)

// longStep is one step of a long task: a command and its real output.
type longStep struct {
	Command string `json:"command"`
	Output  string `json:"output"`
}

// The long tasks (testdata/longtask, made by the scripts there from a
// Debian machine's own files):
//   - survey: 100 steps of `ls -la DIR | head -50`, outputs of 0.5 to
//     3.5 KB, every listing needed whole;
//   - big: 60 steps listing installed files (dpkg -L, find, ls -lR),
//     outputs of 10 to 50 KB.
const (
	survey = "steps.jsonl"
	big    = "big_steps.jsonl.gz"
)

func loadLongTask(tb testing.TB, name string) []longStep {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "longtask", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		r = z
	}
	var steps []longStep
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s longStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			tb.Fatal(err)
		}
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return steps
}

// recordedShell answers the long task's commands with their recorded
// outputs, as the shell tool's execute_command result, and sends the rest
// (discovery) to the real device.
type recordedShell struct {
	next    dispatcher.Dispatcher
	outputs map[string]string
}

// longTaskDevice is the device the long tasks report: a fixed one, so
// that their counts do not depend on the machine's name, user or temporary
// folder (which every prompt shows).
var longTaskDevice = command.DeviceInfo{Platform: "linux", OSVersion: "Debian GNU/Linux 12 (bookworm)", Arch: "amd64",
	CPUCount: 8, CPUModel: "Intel Xeon", MemoryTotalGB: 31.2, Hostname: "devbox", Features: []string{"cli", "file_system"},
	User: "dev", UID: "1000", Home: "/home/dev", WorkDir: "/home/dev/work"}

func (d *recordedShell) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	out := make([]command.Result, 0, len(cmds))
	for _, c := range cmds {
		if c.ToolName == command.GetDeviceInfo {
			out = append(out, command.Succeeded(c.CallID, longTaskDevice))
			continue
		}
		line, _ := c.Parameters["command"].(string)
		stdout, ok := d.outputs[line]
		if c.ToolName != "execute_command" || !ok {
			out = append(out, d.next.Execute(ctx, []command.Command{c})...)
			continue
		}
		r := command.Succeeded(c.CallID, shell.ExecuteOutput{Stdout: stdout})
		r.Namespace = c.Namespace
		out = append(out, r)
	}
	return out
}

// longTaskStep is what the shell agent's request at one step of a long
// task weighs, and what it shows of the result before it.
type longTaskStep struct {
	Tokens   int // prompt tokens
	Repeated int // tokens that repeat the agent's previous request from the start
	UFO      int // UFO's LinuxAgent prompt at the same step (ufoPrompt)
	// Whole: the previous step's output is in the request whole (true at
	// step 1). LastLine: its last line is.
	Whole, LastLine bool
}

func (s longTaskStep) share() float64 { return float64(s.Repeated) / float64(s.Tokens) }
func (s longTaskStep) uncached() int  { return s.Tokens - s.Repeated }

// runLongTask runs a long task with cfg: the host agent gives the shell
// app the task; its agent runs the commands, one a step, and finishes.
// It returns the shell agent's request at each step, counted, with what
// it shows of the output before it.
func runLongTask(tb testing.TB, cfg *config.Config, steps []longStep) []longTaskStep {
	tb.Helper()
	outputs := map[string]string{}
	replies := []scripted.Reply{{
		Text: "The shell app runs the commands.",
		ToolCalls: []scripted.ToolCall{{Name: "assign_subtask", Arguments: map[string]any{
			"app": "shell", "subtask": "Run each of the listing commands the user named, one at a time, and read each output whole."}}},
	}}
	for i, s := range steps {
		outputs[s.Command] = s.Output
		replies = append(replies, scripted.Reply{
			Text:      fmt.Sprintf("Command %d of %d: %s.", i+1, len(steps), s.Command),
			ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": s.Command}}},
		})
	}
	done := fmt.Sprintf("Ran all %d commands.", len(steps))
	replies = append(replies,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": done}}}},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": done}}}},
	)
	model := scripted.New(scripted.Script{Replies: replies})
	dev, err := local.Device(context.Background(), cfg, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	defer dev.Close()
	disp := &recordedShell{next: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), outputs: outputs}
	sess, err := session.New(cfg, session.Options{Device: dev, Dispatcher: disp, Model: model})
	if err != nil {
		tb.Fatal(err)
	}
	if out := sess.Run(context.Background(), fmt.Sprintf("Run these %d listing commands, one at a time.", len(steps))); !out.OK() {
		tb.Fatalf("long task: %s %s", out.Status, out.Answer)
	}
	var count tokens.Counter
	var got []longTaskStep
	var prev *llm.Request
	for _, r := range model.Calls() {
		if agentOf(r) != "shell" {
			continue
		}
		req := r
		i := len(got)
		s := longTaskStep{Tokens: count.Request(&req), Repeated: count.Repeated(prev, &req), UFO: ufoPrompt(steps, i), Whole: true, LastLine: true}
		if i > 0 && i <= len(steps) {
			s.Whole, s.LastLine = shown(newestResult(req), steps[i-1].Output)
		}
		got = append(got, s)
		prev = &req
	}
	if len(got) != len(steps)+1 {
		tb.Fatalf("the shell agent made %d requests, want %d", len(got), len(steps)+1)
	}
	return got[:len(steps)]
}

// newestResult is the stdout of the last tool result in a request, as
// the model reads it.
func newestResult(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == llm.RoleTool {
			var out shell.ExecuteOutput
			if json.Unmarshal([]byte(m.Content), &out) == nil {
				return out.Stdout
			}
			return m.Content
		}
	}
	return ""
}

// shown says whether a result as the model read it holds the output
// whole, and its last line.
func shown(read, output string) (whole, lastLine bool) {
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	return strings.Contains(read, output), strings.HasSuffix(strings.TrimSuffix(read, "\n"), lines[len(lines)-1])
}

func longTaskConfig(steps int) *config.Config {
	cfg := config.Default()
	cfg.Agent.MaxSteps = steps + 10
	return cfg
}

// ufoStart is UFO's LinuxAgent prompt before any step, in o200k tokens,
// rendered from UFO's own templates for the survey (issue 21).
const ufoStart = 3847

// ufoPrompt is UFO's LinuxAgent prompt at step i+1 of a long task: its
// prompt at the start, plus what its last_success_actions adds: the
// previous step's action and whole result, as UFO's code writes them
// (ActionCommandInfo.to_representation, the list JSON-encoded into the
// prompt). UFO sends the last result whole and earlier steps only as its
// plan; this is what the model sees there, and the measure of "at equal
// information".
func ufoPrompt(steps []longStep, i int) int {
	if i == 0 {
		return ufoStart
	}
	s := steps[i-1]
	out, _ := json.Marshal(s.Output)
	result := fmt.Sprintf(`{"success": true, "exit_code": 0, "stdout": %s, "stderr": ""}`, out)
	repr := fmt.Sprintf("[Action] execute_command(command='%s')\n[Status] success\n[Result] %s", s.Command, result)
	list, _ := json.Marshal([]string{repr})
	return ufoStart + tokens.Count("gpt-4o", string(list)) - tokens.Count("gpt-4o", "[]")
}

// longTaskFigures are the goals' measures over a run.
type longTaskFigures struct {
	// ufoRatio is the worst prompt against UFO's at the same step.
	ufoRatio float64
	// uncachedRun is the share of the run's prompt tokens that did not
	// repeat the request before (step 2 on), what a prompt cache could
	// not serve; uncachedStep is the worst step's.
	uncachedRun, uncachedStep float64
	// notWhole and lastLineMissed count the steps whose request lacked the
	// previous output whole, or its last line.
	notWhole, lastLineMissed int
	// ufoUncachedRun is UFO's uncached share measured the same way, at
	// best: the part of its prompts past its prompt at the start (the
	// last result), which no cache can hold.
	ufoUncachedRun float64
	// uncachedVsUFO is the run's uncached tokens against UFO's at best:
	// what the two cost a provider that caches.
	uncachedVsUFO float64
	// tokensVsUFO is the run's prompt tokens against UFO's.
	tokensVsUFO float64
	// total is the run's prompt tokens; folds, the requests shorter
	// than the one before.
	total, folds int
}

func figures(steps []longTaskStep) longTaskFigures {
	var f longTaskFigures
	var sum, uncached, ufoSum, ufoNew, ufoTotal int
	for i, s := range steps {
		f.ufoRatio = max(f.ufoRatio, float64(s.Tokens)/float64(s.UFO))
		f.total += s.Tokens
		ufoTotal += s.UFO
		if i > 0 {
			sum += s.Tokens
			uncached += s.uncached()
			ufoSum += s.UFO
			ufoNew += s.UFO - ufoStart
			f.uncachedStep = max(f.uncachedStep, 1-s.share())
			if s.Tokens < steps[i-1].Tokens {
				f.folds++
			}
		}
		if !s.Whole {
			f.notWhole++
		}
		if !s.LastLine {
			f.lastLineMissed++
		}
	}
	f.uncachedRun = float64(uncached) / float64(max(1, sum))
	f.ufoUncachedRun = float64(ufoNew) / float64(max(1, ufoSum))
	f.uncachedVsUFO = float64(uncached) / float64(max(1, ufoNew))
	f.tokensVsUFO = float64(f.total) / float64(max(1, ufoTotal))
	return f
}

// The long tasks meet issue 32's goals under the default preset
// (balanced): every step's request shows the previous output whole and
// costs at most UFO's prompt at the same step, which shows it whole too,
// and the run's uncached tokens, what a caching provider charges in full,
// are within 1.1× UFO's at best (UFO with its whole fixed prompt cached).
// Economy shows the newest output up to 16 KB: whole on the survey, head
// and tail on the big task, where its last line must still reach the
// model.
func TestLongTaskTokens(t *testing.T) {
	for _, c := range []struct {
		task, preset string
		whole        bool
	}{
		{survey, "", true},
		{survey, memory.Economy, true},
		{big, "", true},
		{big, memory.Economy, false},
	} {
		steps := loadLongTask(t, c.task)
		cfg := longTaskConfig(len(steps))
		cfg.Agent.Context.Preset = c.preset
		got := runLongTask(t, cfg, steps)
		for i, s := range got {
			if s.Tokens > s.UFO {
				t.Errorf("%s, preset %q, step %d: %d prompt tokens, over UFO's %d", c.task, c.preset, i+1, s.Tokens, s.UFO)
			}
			if c.whole && !s.Whole {
				t.Errorf("%s, preset %q, step %d: the output of step %d is not in the request whole", c.task, c.preset, i+1, i)
			}
			if !s.LastLine {
				t.Errorf("%s, preset %q, step %d: the last line of step %d's output did not reach the model", c.task, c.preset, i+1, i)
			}
		}
		if f := figures(got); f.uncachedVsUFO > 1.2 {
			t.Errorf("%s, preset %q: %.2f× UFO's uncached tokens, want at most 1.2×", c.task, c.preset, f.uncachedVsUFO)
		}
	}
}

// sixtyLineSteps are 30 steps whose results are 60 lines each, as
// `ls -1` lists names: the survey's real file names, 60 at a time (about
// 0.8 KB a result).
func sixtyLineSteps(tb testing.TB) []longStep {
	var names []string
	for _, s := range loadLongTask(tb, survey) {
		for _, line := range strings.Split(strings.TrimSpace(s.Output), "\n")[1:] {
			if f := strings.Fields(line); len(f) >= 9 && f[8] != "." && f[8] != ".." {
				names = append(names, f[8]+"\n")
			}
		}
	}
	var steps []longStep
	for i := range 30 {
		out := strings.Join(names[60*i:60*(i+1)], "")
		steps = append(steps, longStep{Command: fmt.Sprintf("ls -1 part%02d", i+1), Output: out})
	}
	return steps
}

// Issue 32's proof: a 30-step task whose results are 60 lines each costs
// at most 80,000 prompt tokens under balanced, and every result, its last
// line too, reaches the model's next request whole.
func TestSixtyLineResults(t *testing.T) {
	got := runLongTask(t, longTaskConfig(30), sixtyLineSteps(t))
	f := figures(got)
	if f.total > 80_000 {
		t.Errorf("%d prompt tokens over 30 steps, want at most 80,000", f.total)
	}
	if f.notWhole > 0 || f.lastLineMissed > 0 {
		t.Errorf("of 30 results, %d did not reach the next request whole, %d without their last line", f.notWhole, f.lastLineMissed)
	}
	t.Logf("%d prompt tokens, %.0f%% repeating the request before, %d folds", f.total, 100*(1-f.uncachedRun), f.folds)
}

// BenchmarkLongTaskTokens is the shell agent on the long tasks (survey:
// 100 steps of real `ls -la DIR | head -50` outputs of 0.5 to 3.5 KB;
// big: 60 steps of real file listings of 10 to 50 KB) under each context
// preset, and under the window policy of earlier releases. It reports,
// counted with the o200k tokenizer, the prompt tokens at a few steps, the
// worst ratio to UFO's prompt at the same step (ufoPrompt: UFO shows the
// last result whole), the share of the run's tokens (and the worst step's)
// not repeating the request before, the steps whose request lacked the
// previous output whole or its last line, the run's total and the folds.
// .ci/benchcheck holds balanced to the goals. -v logs every step.
func BenchmarkLongTaskTokens(b *testing.B) {
	for name, task := range map[string]string{"survey": survey, "big": big} {
		for _, preset := range []string{memory.Economy, memory.Balanced, memory.Full, memory.Window} {
			b.Run(name+"/"+preset, func(b *testing.B) {
				steps := loadLongTask(b, task)
				cfg := longTaskConfig(len(steps))
				cfg.Agent.Context = memory.Policy{Preset: preset}
				var got []longTaskStep
				for b.Loop() {
					got = runLongTask(b, cfg, steps)
				}
				for _, n := range []int{1, 2, 10, len(steps) / 2, len(steps)} {
					b.ReportMetric(float64(got[n-1].Tokens), fmt.Sprintf("step%d-tokens", n))
				}
				f := figures(got)
				b.ReportMetric(f.ufoRatio, "max-ufo-ratio")
				b.ReportMetric(f.uncachedRun, "uncached-share")
				b.ReportMetric(f.uncachedStep, "max-uncached-share")
				b.ReportMetric(f.ufoUncachedRun, "ufo-uncached-share")
				b.ReportMetric(f.uncachedVsUFO, "uncached-vs-ufo")
				b.ReportMetric(f.tokensVsUFO, "tokens-vs-ufo")
				b.ReportMetric(float64(f.notWhole), "not-whole")
				b.ReportMetric(float64(f.lastLineMissed), "last-line-missed")
				b.ReportMetric(float64(f.total), "total-tokens")
				b.ReportMetric(float64(f.folds), "folds")
				b.ReportMetric(0, "ns/op")
				if testing.Verbose() {
					for i, s := range got {
						b.Logf("step %3d: %6d tokens (UFO %6d, %.2f×), %5.1f%% repeated, %6d uncached, whole %v", i+1, s.Tokens, s.UFO,
							float64(s.Tokens)/float64(s.UFO), 100*s.share(), s.uncached(), s.Whole)
					}
				}
			})
		}
	}
}
