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

// Under the append-only presets the newest result goes whole and stays
// as it was sent, when it fits the seen form, so that every request but a
// fold's starts with the whole of the one before (its status turn
// aside). A fold, when the seen history passes fold_bytes, appends a note
// after the anchor and the notes before, so that even then the request
// repeats them; and the notes, when they crowd, are folded again into
// one.
func TestAppendOnlyHistoryFoldsRarelyKeepingThePrefix(t *testing.T) {
	pol := memory.Policy{Preset: memory.Balanced}
	pc, mem := shellAgent(t, pol, nil)
	limit := pol.WithDefaults().FoldBytes
	var prev *llm.Request
	folds, merges, firstAnchor := 0, 0, -1
	for i := 1; i <= 60; i++ {
		mem.Add(listingStep(i))
		msgs, err := Conversation(pc)
		if err != nil {
			t.Fatal(err)
		}
		req := &llm.Request{Messages: msgs, Tools: NativeTools(pc)}
		// The newest result whole, never a stand-in.
		if res := msgs[len(msgs)-2].Content; !strings.Contains(res, fmt.Sprintf("d%d-entry-%02d", i, 19+i%25)) || strings.Contains(res, "[artifact ") {
			t.Fatalf("step %d's result as sent: %s", i, res)
		}
		if i == 1 && !slices.ContainsFunc(req.Tools, func(t llm.Tool) bool { return t.Name == prompts.ReadArtifactTool }) {
			t.Fatal("read_artifact is not offered")
		}
		if prev != nil {
			grown := len(msgs) > len(prev.Messages) && slices.EqualFunc(prev.Messages[:len(prev.Messages)-1], msgs[:len(prev.Messages)-1], sameMessage)
			if !grown {
				folds++
				f := pc.folded
				if firstAnchor < 0 {
					firstAnchor = f.anchor
				}
				if f.anchor != firstAnchor {
					t.Errorf("step %d: a fold moved the anchor from %d to %d steps", i, firstAnchor, f.anchor)
				}
				last := f.notes[len(f.notes)-1]
				if last.upTo != i-1 || !strings.Contains(last.summary.Content, fmt.Sprintf(" to %d are folded", i-1)) {
					t.Errorf("step %d: the last note ends at %d: %q", i, last.upTo, last.summary.Content)
				}
				// The request repeats the one before up to the new note.
				keep := len(pc.intro) + 2*f.anchor + len(f.notes) - 1
				if len(f.notes) == 1 {
					merges++
					keep = len(pc.intro) + 2*f.anchor
				}
				if !slices.EqualFunc(prev.Messages[:keep], msgs[:keep], sameMessage) {
					t.Errorf("step %d: the fold rewrote the request before its new note", i)
				}
			}
		}
		seen := historyBytes(msgs[:len(msgs)-2]) - historyBytes(pc.intro)
		if seen > limit+2<<10 {
			t.Errorf("step %d: %d bytes of seen history, past fold_bytes", i, seen)
		}
		prev = req
	}
	// Folds leave room for a step or two; the notes are merged rarely.
	if folds == 0 || folds > 60/2 || merges > folds/2 {
		t.Errorf("%d folds in 60 steps, %d of them merges: want some, at most one in 2 steps, most of them a note appended", folds, merges)
	}
	// A folded step's result is still there to read, by the handle its
	// note gives.
	note := pc.folded.notes[len(pc.folded.notes)-1].summary.Content
	_, after, _ := strings.Cut(note, "artifact ")
	got, err := pc.artifacts.Read(memory.ReadArgs{Handle: strings.Fields(after + " ")[0], Grep: "entry-00"})
	if err != nil || !strings.Contains(got, "entry-00") {
		t.Errorf("reading a folded step's whole result: %q %v", got, err)
	}
}

// A seen result longer than the policy's head keeps its first and last
// lines, the middle an artifact, while the newest goes whole.
func TestSeenResultKeepsHeadAndTail(t *testing.T) {
	pc, mem := shellAgent(t, memory.Policy{Preset: memory.Economy}, nil)
	mem.Add(listingStep(20))
	mem.Add(listingStep(21))
	msgs, err := Conversation(pc)
	if err != nil {
		t.Fatal(err)
	}
	results := toolResults(msgs)
	if len(results) != 2 {
		t.Fatalf("%d results", len(results))
	}
	seen, newest := results[0], results[1]
	if !strings.Contains(seen, "d20-entry-00") || !strings.Contains(seen, "d20-entry-39") || strings.Contains(seen, "d20-entry-20") || !strings.Contains(seen, "are left out here") {
		t.Errorf("seen result: %s", seen)
	}
	if !strings.Contains(newest, "d21-entry-20") || strings.Contains(newest, "[artifact") {
		t.Errorf("newest result: %s", newest)
	}
}

// toolResults are the contents of msgs' tool results, in order.
func toolResults(msgs []llm.Message) []string {
	var results []string
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			results = append(results, m.Content)
		}
	}
	return results
}

func sameMessage(a, b llm.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.EqualFunc(a.ToolCalls, b.ToolCalls, llm.ToolCall.Equal)
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
	if !strings.Contains(f.notes[0].summary.Content, "which you wrote:\nListed /d1 to /d12; nothing unusual so far.") {
		t.Errorf("summary turn %q", f.notes[0].summary.Content)
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
	if s := pc.folded.notes[len(pc.folded.notes)-1].summary.Content; !strings.Contains(s, "are folded into this note to keep the requests short") {
		t.Errorf("after a reply that is no summary, summary turn %q, want the deterministic one", s)
	}
}
