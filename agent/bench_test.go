package agent_test

import (
	"context"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools"
)

type noopIn struct {
	Note string `json:"note,omitempty" jsonschema_description:"ignored"`
}

type noopOut struct {
	OK bool `json:"ok"`
}

// benchSession is a session over a device with one in-process MCP server
// whose only tool does nothing, driven by a zero-latency scripted model
// that always asks for that tool.
func benchSession(b *testing.B, mode strategy.Mode, script scripted.Script) *agent.Session {
	return benchSessionObserved(b, mode, script, nil)
}

// benchSessionObserved is benchSession with an observer of its own.
func benchSessionObserved(b testing.TB, mode strategy.Mode, script scripted.Script, observe func(agent.Event)) *agent.Session {
	b.Helper()
	srv := &tools.Server{Name: "bench"}
	srv.Add(tools.New("noop", "Does nothing.", tools.Annotations{}, func(context.Context, noopIn) (noopOut, error) {
		return noopOut{OK: true}, nil
	}))
	dev, err := client.New(context.Background(), []client.Server{{Namespace: "bench", MCP: srv}}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	set, err := prompts.Load("")
	if err != nil {
		b.Fatal(err)
	}
	m := scripted.New(script)
	m.SetRecord(false)
	// The benchmark must measure steps that work: a failed command fails it.
	check := func(e agent.Event) {
		if e.Kind == agent.EventStep && (len(e.Results) != 1 || !e.Results[0].OK()) {
			b.Fatalf("step %d: results %+v", e.Step, e.Results)
		}
		if observe != nil {
			observe(e)
		}
	}
	s, err := agent.New(agent.Options{Model: m, Mode: mode, Dispatcher: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), Prompts: set, MaxSteps: 1 << 30, Observer: check})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAgentStep measures one full app-agent step: collect (tools are
// discovered once per agent), render the prompt, call the model, parse the
// reply, dispatch the command to a real in-process MCP tool, update memory.
// A fresh agent every 16 steps keeps the conversation at a typical length.
func BenchmarkAgentStep(b *testing.B) {
	for _, c := range []struct {
		mode   strategy.Mode
		script scripted.Script
	}{
		{strategy.ModeJSON, scripted.Script{Loop: true, Replies: []scripted.Reply{{JSON: map[string]any{
			"thought": "keep going", "status": "CONTINUE", "actions": []any{map[string]any{"function": "noop", "arguments": map[string]any{}}}}}}}},
		{strategy.ModeTools, scripted.Script{Loop: true, Replies: []scripted.Reply{{Text: "keep going",
			ToolCalls: []scripted.ToolCall{{Name: "noop", Arguments: map[string]any{}}}}}}},
	} {
		b.Run(string(c.mode), func(b *testing.B) {
			s := benchSession(b, c.mode, c.script)
			ctx := context.Background()
			var a *agent.AppAgent
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%16 == 0 {
					a = s.NewApp("bench", "do nothing, forever")
				}
				st, err := a.Step(ctx)
				if err != nil || st != fsm.Continue {
					b.Fatalf("step %d: %s %v", i, st, err)
				}
			}
		})
	}
}
