package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/internal/mcpserve"
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

// noopTool is the benchmarks' tool: it does nothing.
func noopTool() *tools.Tool {
	return tools.New("noop", "Does nothing.", tools.Annotations{}, func(context.Context, noopIn) (noopOut, error) {
		return noopOut{OK: true}, nil
	})
}

// perCall is the CPU time one call of fn costs, over enough calls to
// last about 200 ms.
func perCall(fn func()) float64 {
	n := 1
	for {
		start := cputime.Process()
		for range n {
			fn()
		}
		if took := cputime.Process() - start; took >= 200*time.Millisecond || n >= 1<<24 {
			return float64(took.Nanoseconds()) / float64(n)
		}
		n *= 4
	}
}

// bareCallNs is what one call of the benchmarks' tool costs made bare, in
// this process: tools.Tool.Call with the step's arguments (decoded into
// the tool's Go type), no device client, no MCP.
func bareCallNs() float64 {
	t, ctx, args := noopTool(), context.Background(), json.RawMessage(`{}`)
	return perCall(func() {
		if r := t.Call(ctx, args, nil); r.IsError {
			panic(r.Text())
		}
	})
}

// mcpCallNs is what one call of the benchmarks' tool costs through an
// MCP client and server that share this process (mcp-go's in-process
// transport), with nothing of Saucer's around it: the in-process tool call
// the device client made before it called Saucer's own tools directly.
func mcpCallNs(b *testing.B) float64 {
	srv := &tools.Server{Name: "bench"}
	srv.Add(noopTool())
	c, err := mcpclient.NewInProcessClient(mcpserve.New(srv))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "bench"}}}); err != nil {
		b.Fatal(err)
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "noop", Arguments: map[string]any{}}}
	return perCall(func() {
		if r, err := c.CallTool(ctx, req); err != nil || r.IsError {
			b.Fatalf("mcp call: %v %+v", err, r)
		}
	})
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
	dev := toolDevice(b, "bench", client.Options{}, noopTool())
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
// reply, dispatch the command to a real in-process Go tool through the
// device client, update memory. A fresh agent every 16 steps keeps the
// conversation at a typical length.
//
// Measured in the same run: the same tool called bare (bareCallNs), and
// through the device client alone (client.Execute, as the step's
// dispatcher calls it), and through mcp-go's in-process client and server
// (mcpCallNs). Metrics, in CPU time: step-vs-bare, a step over a bare
// call; step-vs-mcp, a step over an in-process MCP call; call-vs-bare, the
// device client's call over a bare call; bare-ns and mcp-ns, the two
// baselines.
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
			var began time.Duration
			for i := 0; b.Loop(); i++ {
				if i == 0 {
					began = cputime.Process()
				}
				if i%16 == 0 {
					a = s.NewApp("bench", "do nothing, forever")
				}
				st, err := a.Step(ctx)
				if err != nil || st != fsm.Continue {
					b.Fatalf("step %d: %s %v", i, st, err)
				}
			}
			stepNs := float64((cputime.Process() - began).Nanoseconds()) / float64(b.N)
			bare := bareCallNs()
			b.ReportMetric(stepNs/bare, "step-vs-bare")
			b.ReportMetric(clientCallNs(b)/bare, "call-vs-bare")
			b.ReportMetric(bare, "bare-ns")
			mcpNs := mcpCallNs(b)
			b.ReportMetric(stepNs/mcpNs, "step-vs-mcp")
			b.ReportMetric(mcpNs, "mcp-ns")
		})
	}
}

// clientCallNs is what one call of the benchmarks' tool costs through the
// device client, as a step's dispatcher makes it.
func clientCallNs(b *testing.B) float64 {
	dev := toolDevice(b, "bench", client.Options{}, noopTool())
	ctx := context.Background()
	cmd := command.Command{Namespace: "bench", ToolName: "noop", Parameters: map[string]any{}, CallID: "bench"}
	return perCall(func() {
		if r := dev.Execute(ctx, cmd); !r.OK() {
			b.Fatal(r.Error)
		}
	})
}
