package strategy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
)

// hostAgent is a host agent in tools mode whose assignments run no app:
// each subtask finishes with a result of size bytes, on the board.
func hostAgent(t *testing.T, pol memory.Policy, size int) (*Context, *memory.Blackboard) {
	t.Helper()
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	board := &memory.Blackboard{}
	run := func(_ context.Context, app, subtask string) memory.Note {
		n := memory.Note{Subtask: subtask, App: app, Status: string(fsm.Finish), Result: fmt.Sprintf("%s done: %s", subtask, strings.Repeat("x", size))}
		board.AddNote(n)
		return n
	}
	pc := NewContext(Setup{Agent: Agent{Name: "host", Role: fsm.Host}, Mode: ModeTools, Prompts: set, Memory: &memory.Memory{}, Board: board,
		Apps: []prompts.App{{Name: "shell", Description: "Run commands."}}, RunSubtask: run,
		Limits: Limits{MaxResultChars: 16000, Context: pol}, MaxSteps: 100, Artifacts: &memory.Artifacts{Threshold: 16000}})
	return pc, board
}

// assign runs one round of the host: one assign_subtask call.
func assign(t *testing.T, pc *Context, round int) {
	t.Helper()
	args := map[string]any{"app": "shell", "subtask": fmt.Sprintf("Subtask number %d, with all it needs to be done from its text alone.", round)}
	b, _ := json.Marshal(args)
	id := fmt.Sprintf("call_%d", round)
	pc.round, pc.step = round, round
	pc.response = &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: prompts.AssignTool, Arguments: string(b)}}}}
	pc.decision = &Decision{Status: fsm.Assign, Actions: []Action{{Function: prompts.AssignTool, Arguments: args, CallID: id}}}
	pc.status = fsm.Assign
	runAssignments(context.Background(), pc)
	if err := (rememberStrategy{}).Execute(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
}

// A finished subtask reaches the host once: as the result of its
// assign_subtask call, without the subtask the host wrote; the status turn
// repeats only the notes a fold took out of the history.
func TestHostSeesEachNoteOnce(t *testing.T) {
	pc, _ := hostAgent(t, memory.Policy{Preset: memory.Balanced}, 20)
	for round := 1; round <= 3; round++ {
		assign(t, pc, round)
	}
	msgs, err := Conversation(pc)
	if err != nil {
		t.Fatal(err)
	}
	status := msgs[len(msgs)-1].Content
	if strings.Contains(status, "Notes from") || strings.Contains(status, "Subtask number") {
		t.Errorf("the status turn repeats the notes:\n%s", status)
	}
	results := toolResults(msgs)
	if len(results) != 3 {
		t.Fatalf("%d tool results, want 3", len(results))
	}
	for i, r := range results {
		var out struct{ App, Status, Result, Subtask string }
		if err := json.Unmarshal([]byte(r), &out); err != nil || out.App != "shell" || out.Status != "FINISH" ||
			!strings.HasPrefix(out.Result, fmt.Sprintf("Subtask number %d, ", i+1)) || strings.Contains(r, `"subtask"`) {
			t.Errorf("result %d: %s (%v): want the app, status and result, not the subtask", i+1, r, err)
		}
	}

	// Folded: the notes of the folded rounds come back in the status
	// turn, the others stay results.
	pc, _ = hostAgent(t, memory.Policy{Preset: memory.Balanced, FoldBytes: 2000}, 600)
	for round := 1; round <= 6; round++ {
		assign(t, pc, round)
	}
	if msgs, err = Conversation(pc); err != nil {
		t.Fatal(err)
	}
	if pc.folded == nil {
		t.Fatal("no fold")
	}
	status = msgs[len(msgs)-1].Content
	from, to := pc.folded.anchor, pc.folded.upTo()
	for round := 1; round <= 6; round++ {
		folded := round > from && round <= to
		shown := strings.Contains(status, fmt.Sprintf("Subtask number %d, ", round))
		if folded != shown {
			t.Errorf("round %d (folded %v): in the status turn %v:\n%s", round, folded, shown, status)
		}
	}
}

// A subtask the host marks final ends the task with its result when it
// finishes, without another round; its app agent is told so. One that
// fails comes back as a note, and final on a subtask before the last of a
// reply does not end the task.
func TestFinalSubtaskEndsTheTask(t *testing.T) {
	var got []string
	run := func(_ context.Context, app, subtask string) memory.Note {
		got = append(got, subtask)
		status := fsm.Finish
		if strings.HasPrefix(subtask, "fail") {
			status = fsm.Fail
		}
		return memory.Note{Subtask: subtask, App: app, Status: string(status), Result: "42"}
	}
	for _, c := range []struct {
		name  string
		calls []map[string]any
		want  fsm.State
	}{
		{"final", []map[string]any{{"app": "shell", "subtask": "count", "final": true}}, fsm.Finish},
		{"final as a string", []map[string]any{{"app": "shell", "subtask": "count", "final": "true"}}, fsm.Finish},
		{"not final", []map[string]any{{"app": "shell", "subtask": "count"}}, fsm.Assign},
		{"final that fails", []map[string]any{{"app": "shell", "subtask": "fail to count", "final": true}}, fsm.Assign},
		{"final before the last", []map[string]any{{"app": "shell", "subtask": "count", "final": true}, {"app": "shell", "subtask": "more"}}, fsm.Assign},
	} {
		got = nil
		pc, _ := hostAgent(t, memory.Policy{}, 0)
		pc.runSubtask = run
		var actions []Action
		for i, args := range c.calls {
			actions = append(actions, Action{Function: prompts.AssignTool, Arguments: args, CallID: fmt.Sprintf("c%d", i)})
		}
		pc.decision = &Decision{Status: fsm.Assign, Actions: actions}
		pc.status = fsm.Assign
		runAssignments(context.Background(), pc)
		if pc.status != c.want {
			t.Errorf("%s: status %s, want %s", c.name, pc.status, c.want)
		}
		told := strings.Contains(got[0], "Your result is the final answer")
		if wantTold := c.calls[0]["final"] != nil && len(c.calls) == 1; told != wantTold {
			t.Errorf("%s: the app agent was told it is final: %v (subtask %q)", c.name, told, got[0])
		}
		if c.want == fsm.Finish && (pc.decision.Result != "42" || !slices.Contains(pc.visited, fsm.Assign)) {
			t.Errorf("%s: answer %q, visited %v", c.name, pc.decision.Result, pc.visited)
		}
	}
}
