package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools"
)

// A command that runs past Limits.DetachAfter is left in the background:
// the model gets its latest progress at once, and from then on the tools
// command_status and cancel_command, which reach it on the device. Its
// progress reaches the observer as events of the step that started it.
func TestBackgroundCommandIsLookedAfter(t *testing.T) {
	var stopped atomic.Bool
	dev := toolDevice(t, "build", client.Options{}, tools.New("compile", "Compiles for a long time.", tools.Annotations{Risk: tools.RiskWrite, Streams: []string{tools.StreamProgress}},
		func(ctx context.Context, in noopIn) (noopOut, error) {
			for i := 1; ; i++ {
				tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Message: fmt.Sprintf("compiling unit %d", i)})
				select {
				case <-ctx.Done():
					stopped.Store(true)
					return noopOut{}, ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
		}))
	var n atomic.Int32
	disp := dispatcher.NewLocal(dev, dispatcher.LocalOptions{NewID: func() string { return fmt.Sprintf("call-%d", n.Add(1)) }})
	set, _ := prompts.Load("")
	// call-1 is discovery; call-2 the compile.
	m := scripted.New(scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "compile"}}},
		{Expect: "still running", ToolCalls: []scripted.ToolCall{{Name: "command_status", Arguments: map[string]any{"call_id": "call-2"}}}},
		{Expect: "compiling unit", ToolCalls: []scripted.ToolCall{{Name: "cancel_command", Arguments: map[string]any{"call_id": "call-2"}}}},
		{Expect: "cancelled", ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "stopped the build"}}}},
	}})
	m.SetRecord(true)
	var mu sync.Mutex
	var reports []agent.Event
	observer := func(e agent.Event) {
		if e.Kind == agent.EventProgress {
			mu.Lock()
			reports = append(reports, e)
			mu.Unlock()
		}
	}
	s, err := agent.New(agent.Options{Model: m, Dispatcher: disp, Prompts: set, Observer: observer,
		Limits: strategy.Limits{RetryBackoff: time.Millisecond, DetachAfter: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	note := s.NewApp("build", "build it").Run(context.Background(), "build it")
	if note.Status != "FINISH" || note.Result != "stopped the build" {
		t.Fatalf("%+v", note)
	}
	if !stopped.Load() {
		t.Error("cancel_command did not stop the tool")
	}
	calls := m.Calls()
	offered := func(req llm.Request) (names []string) {
		for _, tl := range req.Tools {
			if command.IsBackgroundControl(tl.Name) {
				names = append(names, tl.Name)
			}
		}
		return names
	}
	if got := offered(calls[0]); len(got) != 0 {
		t.Errorf("offered before any command ran in the background: %v", got)
	}
	for _, c := range calls[1:] {
		if got := offered(c); !slices.Equal(got, []string{command.CommandStatus, command.CancelCommand}) {
			t.Errorf("offered after a command was left running: %v", got)
		}
	}
	var seen string
	for _, msg := range calls[1].Messages {
		if msg.Role == llm.RoleTool {
			seen = msg.Content
		}
	}
	if !strings.Contains(seen, "still running") || !strings.Contains(seen, "compiling unit") || !strings.Contains(seen, "call-2") {
		t.Errorf("the model saw %q", seen)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) == 0 {
		t.Fatal("no progress events")
	}
	for _, e := range reports {
		if e.Step != 1 || e.Agent != "app:build#1" || e.Progress.CallID != "call-2" || e.Progress.Tool != "compile" {
			t.Errorf("progress event %+v %+v", e, e.Progress)
			break
		}
	}
}
