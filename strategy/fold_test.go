package strategy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
)

// lsOutput is an `ls -la`-like listing of n entries (about 55 bytes each).
func lsOutput(dir string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total %d\n", 4*n)
	for i := range n {
		fmt.Fprintf(&b, "-rw-r--r--  1 root root %5d Aug 24  2025 %s-entry-%02d\n", 37*i+11, dir, i)
	}
	return b.String()
}

// listingStep is step i of a shell agent that lists a folder.
func listingStep(i int) memory.Step {
	id := fmt.Sprintf("call_%d", i)
	line := fmt.Sprintf("ls -la /d%d | head -50", i)
	args, _ := json.Marshal(map[string]string{"command": line})
	out, _ := json.Marshal(map[string]any{"stdout": lsOutput(fmt.Sprintf("d%d", i), 20+i%25), "stderr": "", "exit_code": 0})
	return memory.Step{Agent: "app:shell#1", Step: i, Status: "CONTINUE",
		Reply:    llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("Listing /d%d.", i), ToolCalls: []llm.ToolCall{{ID: id, Name: "execute_command", Arguments: string(args)}}},
		Commands: []command.Command{{ToolName: "execute_command", Parameters: map[string]any{"command": line}}}, CallIDs: []string{id},
		Results: []command.Result{{Status: command.Success, Result: out}}}
}

func shellAgent(t *testing.T, pol memory.Policy, model llm.Model) (*Context, *memory.Memory) {
	t.Helper()
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	mem := &memory.Memory{}
	pc := NewContext(Setup{Agent: Agent{Name: "app:shell#1", Role: fsm.App, App: "shell"}, Mode: ModeTools, Prompts: set, Model: model,
		Memory: mem, Limits: Limits{MaxResultChars: 16000, Context: pol}, MaxSteps: 100, Artifacts: &memory.Artifacts{Threshold: 16000}})
	return pc, mem
}

// Under the append-only presets every request starts with the whole of
// the one before (its status turn aside), results go in by their head
// with the rest an artifact, and a fold, when the history passes
// fold_bytes, keeps the prompt, the tools and an anchor of the first
// steps: most of the request before.
func TestAppendOnlyHistoryFoldsRarelyKeepingThePrefix(t *testing.T) {
	pc, mem := shellAgent(t, memory.Policy{Preset: memory.Balanced}, nil)
	var prev *llm.Request
	folds, firstAnchor := 0, -1
	for i := 1; i <= 60; i++ {
		mem.Add(listingStep(i))
		msgs, err := Conversation(pc)
		if err != nil {
			t.Fatal(err)
		}
		req := &llm.Request{Messages: msgs, Tools: NativeTools(pc)}
		if i == 1 {
			// The result's head, and read_artifact offered from the start.
			res := msgs[len(msgs)-2].Content
			if !strings.Contains(res, "d1-entry-06") || strings.Contains(res, "d1-entry-08") || !strings.Contains(res, "read_artifact reads the rest") {
				t.Fatalf("step 1's result as sent: %s", res)
			}
			if !slices.ContainsFunc(req.Tools, func(t llm.Tool) bool { return t.Name == prompts.ReadArtifactTool }) {
				t.Fatal("read_artifact is not offered")
			}
		}
		if prev != nil {
			grown := len(msgs) > len(prev.Messages) && slices.EqualFunc(prev.Messages[:len(prev.Messages)-1], msgs[:len(prev.Messages)-1], sameMessage)
			if !grown {
				folds++
				anchor := pc.folded.anchor
				if firstAnchor < 0 {
					firstAnchor = anchor
				}
				if anchor != firstAnchor {
					t.Errorf("step %d: a fold moved the anchor from %d to %d steps", i, firstAnchor, anchor)
				}
				if !strings.HasPrefix(pc.folded.summary.Content, fmt.Sprintf("Steps %d to %d are folded", anchor+1, i-1)) {
					t.Errorf("step %d: summary %q", i, pc.folded.summary.Content)
				}
			}
			shared, total := llm.SharedPrefix(prev, req)
			if float64(shared) < 0.8*float64(total) {
				t.Errorf("step %d: %d of %d bytes repeat the request before (%.0f%%), want 80%%", i, shared, total, 100*float64(shared)/float64(total))
			}
		}
		if hist := historyBytes(msgs) - historyBytes(pc.intro); hist > 8<<10+4<<10 {
			t.Errorf("step %d: %d bytes of history, past fold_bytes", i, hist)
		}
		prev = req
	}
	// Folds are rare: each leaves room for several steps.
	if folds == 0 || folds > 60/4 {
		t.Errorf("%d folds in 60 steps, want some, at most one in 4 steps", folds)
	}
	// A folded step's result is still there to read.
	got, err := pc.artifacts.Read(memory.ReadArgs{Handle: handleIn(t, stepTurns(pc, 2, headForm).msgs[1].Content), Grep: "d3-entry-21"})
	if err != nil || !strings.Contains(got, "d3-entry-21") {
		t.Errorf("reading step 3's whole result: %q %v", got, err)
	}
}

func sameMessage(a, b llm.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls)
}

func handleIn(t *testing.T, s string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, "[artifact ")
	if !ok {
		t.Fatalf("no artifact in %q", s)
	}
	h, _, _ := strings.Cut(rest, ":")
	return h
}

// With summary: model, a fold asks the model for the summary with the
// request the agent would have sent and the ask, and the summary turn holds
// its words; a reply that is no summary falls back to the deterministic one.
func TestModelWrittenSummary(t *testing.T) {
	model := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{Text: "Listed /d1 to /d12; nothing unusual so far."},
		{ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": "ls"}}}},
	}})
	pc, mem := shellAgent(t, memory.Policy{Preset: memory.Balanced, Summary: memory.SummaryModel, FoldBytes: 3000}, model)
	ctx := context.Background()
	var prev []llm.Message
	for i := 1; pc.folded == nil; i++ {
		if i > 100 {
			t.Fatal("no fold in 100 steps")
		}
		mem.Add(listingStep(i))
		msgs, err := conversation(ctx, pc, true)
		if err != nil {
			t.Fatal(err)
		}
		if pc.folded == nil {
			prev = msgs
		}
	}
	calls := model.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d model calls for one fold, want 1", len(calls))
	}
	ask := calls[0].Messages
	if !strings.Contains(ask[len(ask)-1].Content, "Write that note now") || !slices.EqualFunc(prev[:len(prev)-1], ask[:len(prev)-1], sameMessage) || len(calls[0].Tools) == 0 {
		t.Errorf("the summary was asked with %d messages ending %q, want the request before, its tools and the ask", len(ask), ask[len(ask)-1].Content)
	}
	f := pc.folded
	if !strings.Contains(f.summary.Content, "which you wrote:\nListed /d1 to /d12; nothing unusual so far.") {
		t.Errorf("summary turn %q", f.summary.Content)
	}
	// The next fold: the model calls a tool instead of writing.
	for n := pc.memory.Len() + 1; f == pc.folded; n++ {
		if n > 200 {
			t.Fatal("no second fold")
		}
		mem.Add(listingStep(n))
		if _, err := conversation(ctx, pc, true); err != nil {
			t.Fatal(err)
		}
	}
	if s := pc.folded.summary.Content; !strings.Contains(s, "are folded into this note to keep the requests short") {
		t.Errorf("after a reply that is no summary, summary turn %q, want the deterministic one", s)
	}
}
