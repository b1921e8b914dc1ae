package session_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/llm/tokens"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/tools/shell"
)

// longStep is one step of the long task: a command and its real output
// (testdata/longtask/steps.jsonl, made by make_steps.py there).
type longStep struct {
	Command string `json:"command"`
	Output  string `json:"output"`
}

func loadLongTask(tb testing.TB) []longStep {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "longtask", "steps.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var steps []longStep
	sc := bufio.NewScanner(f)
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

func (d *recordedShell) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	out := make([]command.Result, 0, len(cmds))
	for _, c := range cmds {
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

// longTaskStep is what the shell agent's request at one step of the long
// task weighs.
type longTaskStep struct {
	Tokens   int // prompt tokens
	Repeated int // tokens that repeat the agent's previous request from the start
}

func (s longTaskStep) share() float64 { return float64(s.Repeated) / float64(s.Tokens) }
func (s longTaskStep) uncached() int  { return s.Tokens - s.Repeated }

// runLongTask runs the long task with cfg: the host agent gives the shell
// app the task; its agent runs the 100 commands, one a step, and
// finishes. It returns the shell agent's request at each step, counted.
func runLongTask(tb testing.TB, cfg *config.Config) []longTaskStep {
	tb.Helper()
	steps := loadLongTask(tb)
	outputs := map[string]string{}
	replies := []scripted.Reply{{
		Text: "The shell app lists the folders.",
		ToolCalls: []scripted.ToolCall{{Name: "assign_subtask", Arguments: map[string]any{
			"app": "shell", "subtask": "List each of the system folders the user named, one at a time, with ls -la DIR | head -50."}}},
	}}
	for i, s := range steps {
		outputs[s.Command] = s.Output
		dir := strings.TrimSuffix(strings.TrimPrefix(s.Command, "ls -la "), " | head -50")
		replies = append(replies, scripted.Reply{
			Text:      fmt.Sprintf("Listing folder %d of %d, %s.", i+1, len(steps), dir),
			ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": s.Command}}},
		})
	}
	replies = append(replies,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "Listed all 100 folders."}}}},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "Listed all 100 folders."}}}},
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
	if out := sess.Run(context.Background(), "List these 100 system folders, one at a time."); !out.OK() {
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
		got = append(got, longTaskStep{Tokens: count.Request(&req), Repeated: count.Repeated(prev, &req)})
		prev = &req
	}
	if len(got) != len(steps)+1 {
		tb.Fatalf("the shell agent made %d requests, want %d", len(got), len(steps)+1)
	}
	return got[:len(steps)]
}

func longTaskConfig() *config.Config {
	cfg := config.Default()
	cfg.Agent.MaxSteps = 110
	return cfg
}

// ufoPrompt is UFO's LinuxAgent prompt, in o200k tokens, on the same long
// task (issue 21: rendered from UFO's own templates for the same steps):
// 3,847 at step 1; 5,262, 5,205 and 5,488 at steps 10, 50 and 100. A step
// between is held to the lowest figure that applies: step 1's up to step
// 9, the least of the later ones from step 10.
func ufoPrompt(step int) int {
	if step < 10 {
		return 3847
	}
	return 5205
}

// longTaskFigures are the goals' measures over the steps: the worst
// prompt against UFO's, the worst uncached part against UFO's prompt,
// and the largest share not repeated from the request before (step 2 on).
type longTaskFigures struct {
	ufoRatio, uncachedUFORatio, uncachedShare float64
}

func figures(steps []longTaskStep) longTaskFigures {
	var f longTaskFigures
	for i, s := range steps {
		ufo := float64(ufoPrompt(i + 1))
		f.ufoRatio = max(f.ufoRatio, float64(s.Tokens)/ufo)
		f.uncachedUFORatio = max(f.uncachedUFORatio, float64(s.uncached())/ufo)
		if i > 0 {
			f.uncachedShare = max(f.uncachedShare, 1-s.share())
		}
	}
	return f
}

// The long task meets issue 21's goals at every step under the default
// preset (balanced) and under economy: prompt tokens at most UFO's,
// uncached tokens at most half UFO's prompt, and from step 2 at least 80%
// of each request repeating the one before.
func TestLongTaskTokens(t *testing.T) {
	for _, preset := range []string{"", memory.Economy} {
		cfg := longTaskConfig()
		cfg.Agent.Context.Preset = preset
		steps := runLongTask(t, cfg)
		for i, s := range steps {
			step, ufo := i+1, ufoPrompt(i+1)
			if s.Tokens > ufo {
				t.Errorf("preset %q, step %d: %d prompt tokens, over UFO's %d", preset, step, s.Tokens, ufo)
			}
			if 2*s.uncached() > ufo {
				t.Errorf("preset %q, step %d: %d tokens uncached, over half UFO's prompt (%d)", preset, step, s.uncached(), ufo)
			}
			if step > 1 && s.share() < 0.8 {
				t.Errorf("preset %q, step %d: %.1f%% repeats the request before, want 80%%", preset, step, 100*s.share())
			}
		}
	}
}

// BenchmarkLongTaskTokens is the shell agent on the long task (100 steps
// of real `ls -la DIR | head -50` outputs, 0.5 to 3.5 KB) under each
// context preset, and under the window policy of earlier releases. It
// reports the prompt tokens (o200k) at steps 1, 2, 10, 50 and 100, the
// share of each repeating the request before, and their uncached
// tokens; and over all the steps the worst ratios to UFO's LinuxAgent
// prompt (ufoPrompt) and the largest share not repeated, which
// .ci/benchcheck holds to the goals, and how many requests were shorter
// than the one before (folds). -v logs every step.
func BenchmarkLongTaskTokens(b *testing.B) {
	for _, preset := range []string{memory.Economy, memory.Balanced, memory.Full, memory.Window} {
		b.Run(preset, func(b *testing.B) {
			cfg := longTaskConfig()
			cfg.Agent.Context = memory.Policy{Preset: preset}
			var steps []longTaskStep
			for b.Loop() {
				steps = runLongTask(b, cfg)
			}
			for _, n := range []int{1, 2, 10, 50, 100} {
				s := steps[n-1]
				b.ReportMetric(float64(s.Tokens), fmt.Sprintf("step%d-tokens", n))
				b.ReportMetric(100*s.share(), fmt.Sprintf("step%d-repeated-%%", n))
				b.ReportMetric(float64(s.uncached()), fmt.Sprintf("step%d-uncached", n))
			}
			f := figures(steps)
			b.ReportMetric(f.ufoRatio, "max-ufo-ratio")
			b.ReportMetric(f.uncachedUFORatio, "max-uncached-ufo-ratio")
			b.ReportMetric(f.uncachedShare, "max-uncached-share")
			folds := 0
			for i := 1; i < len(steps); i++ {
				if steps[i].Tokens < steps[i-1].Tokens {
					folds++
				}
			}
			b.ReportMetric(float64(folds), "folds")
			b.ReportMetric(0, "ns/op")
			if testing.Verbose() {
				for i, s := range steps {
					b.Logf("step %3d: %6d tokens (%.2f× UFO), %5.1f%% repeated, %6d uncached", i+1, s.Tokens,
						float64(s.Tokens)/float64(ufoPrompt(i+1)), 100*s.share(), s.uncached())
				}
			}
		})
	}
}
