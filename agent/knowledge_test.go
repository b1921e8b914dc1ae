package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

// An agent asks its Retriever once, with its own request, subtask and
// app; what it gets is in the first user turn of every request (so the
// prompt's cacheable prefix holds it) and on its first step's event. A
// Retriever that fails costs the agent its knowledge, not its task.
func TestAgentsAreGivenWhatWasLearned(t *testing.T) {
	const learned = "## What was learned before\n### 1. experience: count lines\nSource: runs/r1 events 3-9\nwc -l counts them."
	for _, failing := range []bool{false, true} {
		dev := toolDevice(t, "shell", client.Options{}, noopTool())
		set, _ := prompts.Load("")
		m := scripted.New(scripted.Script{Replies: []scripted.Reply{
			{When: "wc -l counts them", ToolCalls: []scripted.ToolCall{{Name: "noop"}}},
			{Unless: "wc -l counts them", ToolCalls: []scripted.ToolCall{{Name: "noop"}}},
			{Unless: "wc -l counts them", ToolCalls: []scripted.ToolCall{{Name: "noop"}}},
			{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "12"}}}},
		}})
		var asked []strategy.Query
		retriever := strategy.RetrieverFunc(func(_ context.Context, q strategy.Query) (strategy.Retrieved, error) {
			asked = append(asked, q)
			if failing {
				return strategy.Retrieved{}, errors.New("the store is locked")
			}
			return strategy.Retrieved{Text: learned, Sources: []string{"runs/r1 events 3-9"}}, nil
		})
		var mu sync.Mutex
		var steps []agent.Event
		s, err := agent.New(agent.Options{Model: m, Dispatcher: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), Prompts: set,
			Retriever: retriever, Limits: strategy.Limits{RetryBackoff: time.Millisecond},
			Observer: func(e agent.Event) {
				if e.Kind == agent.EventStep {
					mu.Lock()
					steps = append(steps, e)
					mu.Unlock()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		note := s.NewApp("shell", "count the lines of a.csv").Run(context.Background(), "how long is a.csv?")
		if note.Status != "FINISH" || note.Result != "12" {
			t.Fatalf("failing=%v: %+v", failing, note)
		}
		if len(asked) != 1 || asked[0].App != "shell" || asked[0].Subtask != "count the lines of a.csv" || asked[0].Request != "how long is a.csv?" || asked[0].Agent != "app:shell#1" {
			t.Fatalf("failing=%v: the retriever was asked %+v; want once, with the agent's request, subtask and app", failing, asked)
		}
		calls := m.Calls()
		for i, c := range calls {
			first := c.Messages[1]
			if has := strings.Contains(first.Content, "wc -l counts them"); has == failing || first.Role != llm.RoleUser {
				t.Fatalf("failing=%v: call %d's first user turn %q", failing, i+1, first.Content)
			}
		}
		mu.Lock()
		first := steps[0]
		mu.Unlock()
		if failing {
			if first.Knowledge != nil || len(first.Errors) == 0 || !strings.Contains(first.Errors[0].Error(), "the store is locked") {
				t.Fatalf("a failed retrieval: step event knowledge %+v, errors %v", first.Knowledge, first.Errors)
			}
			if len(calls) != 3 {
				t.Fatalf("without knowledge the script takes its longer way: %d calls, want 3", len(calls))
			}
			continue
		}
		if first.Knowledge == nil || first.Knowledge.Sources[0] != "runs/r1 events 3-9" {
			t.Fatalf("the first step's event carries %+v", first.Knowledge)
		}
		for _, e := range steps[1:] {
			if e.Knowledge != nil {
				t.Fatalf("step %d's event carries the knowledge again", e.Step)
			}
		}
		if len(calls) != 2 {
			t.Fatalf("with knowledge the script takes its shorter way: %d calls, want 2", len(calls))
		}
	}
}
