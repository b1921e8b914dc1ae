package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools"
)

// Every model call and every dispatch (discovery and parallel observations
// included) reaches the observer, one event at a time.
func TestObserverSeesModelCallsAndDispatches(t *testing.T) {
	dev := toolDevice(t, "obs", client.Options{}, tools.New("look", "Looks.", tools.Annotations{}, func(ctx context.Context, in noopIn) (noopOut, error) {
		time.Sleep(5 * time.Millisecond) // long enough for parallel observations to overlap
		return noopOut{OK: true}, nil
	}))
	set, _ := prompts.Load("")
	m := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{Error: "rate_limit"},
		{ToolCalls: []scripted.ToolCall{{Name: "look", Arguments: map[string]any{"note": "x"}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "seen"}}}},
	}})
	var inFlight, overlaps atomic.Int32
	var calls, dispatches, observations int
	observer := func(e agent.Event) {
		if inFlight.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer inFlight.Add(-1)
		time.Sleep(time.Millisecond)
		switch e.Kind {
		case agent.EventModelCall:
			calls++
			if e.Request == nil || len(e.Request.Messages) < 2 || e.Phase != strategy.LLMInteraction || e.Agent != "app:obs#1" {
				t.Errorf("model call event %+v", e)
			}
			if calls == 1 && e.Err == nil {
				t.Error("the rate-limited call was reported without its error")
			}
		case agent.EventDispatch:
			dispatches++
			if len(e.Commands) != len(e.Results) {
				t.Errorf("dispatch %+v", e)
			}
			if e.Phase == strategy.DataCollection && e.Commands[0].ToolName == "look" {
				observations++
			}
		}
	}
	observe := strategy.Spec{Name: strategy.Observe, Params: map[string]any{"commands": []any{
		map[string]any{"tool": "look", "arguments": map[string]any{"note": "a"}},
		map[string]any{"tool": "look", "arguments": map[string]any{"note": "b"}},
	}}}
	s, err := agent.New(agent.Options{Model: m, Dispatcher: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), Prompts: set, Observer: observer,
		AppPipeline: []strategy.Spec{{Name: strategy.Discover}, observe, {Name: strategy.Ask}, {Name: strategy.Execute}, {Name: strategy.Remember}},
		Limits:      strategy.Limits{RetryBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	note := s.NewApp("obs", "look around").Run(context.Background(), "look around")
	if note.Status != "FINISH" || note.Result != "seen" {
		t.Fatalf("%+v", note)
	}
	// 3 model calls; dispatches: discovery, 2 observations per step for 2
	// steps, the look action.
	if calls != 3 || dispatches != 6 || observations != 4 {
		t.Errorf("%d model calls, %d dispatches, %d observations", calls, dispatches, observations)
	}
	if overlaps.Load() != 0 {
		t.Errorf("the observer was called concurrently %d times", overlaps.Load())
	}
}
