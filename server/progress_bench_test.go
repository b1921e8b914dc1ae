package server_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/tools"
)

// tickIn asks the tick tool for n reports, one every few milliseconds.
type tickIn struct {
	N       int `json:"n"`
	EveryMS int `json:"every_ms"`
}

// probe pairs each report's sending by the tool with its first arrival
// at each place it is measured.
type probe struct {
	mu   sync.Mutex
	sent map[float64]time.Time
	got  map[string]map[float64]time.Duration
}

func newProbe() *probe {
	return &probe{sent: map[float64]time.Time{}, got: map[string]map[float64]time.Duration{}}
}

func (p *probe) send(i float64) {
	p.mu.Lock()
	p.sent[i] = time.Now()
	p.mu.Unlock()
}

func (p *probe) arrive(where string, i float64) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.sent[i]
	if p.got[where] == nil {
		p.got[where] = map[float64]time.Duration{}
	}
	if _, seen := p.got[where][i]; ok && !seen {
		p.got[where][i] = now.Sub(at)
	}
}

// report gives where's p50 and p95 in milliseconds, and the share of the
// n reports that arrived there (the device client may coalesce).
func (p *probe) report(b *testing.B, where, prefix string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d []time.Duration
	for _, v := range p.got[where] {
		d = append(d, v)
	}
	if len(d) == 0 {
		b.Fatalf("no report reached the %s", where)
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), prefix+"p50-ms")
	b.ReportMetric(at(0.95), prefix+"p95-ms")
	b.ReportMetric(float64(len(d))/float64(n)*100, prefix+"%arrived")
}

// tickDevice is a device client whose tool "tick" reports its progress n
// times, telling p when each report leaves the tool.
func tickDevice(b *testing.B, p *probe) *client.Client {
	srv := &tools.Server{Name: "bench"}
	srv.Add(tools.New("tick", "Reports progress.", tools.Annotations{Risk: tools.RiskRead, Streams: []string{tools.StreamProgress}},
		func(ctx context.Context, in tickIn) (map[string]int, error) {
			for i := 1; i <= in.N; i++ {
				p.send(float64(i))
				tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Message: "tick"})
				time.Sleep(time.Duration(in.EveryMS) * time.Millisecond)
			}
			return map[string]int{"ticks": in.N}, nil
		}))
	dev, err := client.New(context.Background(), []client.Server{{Namespace: "bench", MCP: srv}}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	return dev
}

// BenchmarkProgressLatency: how long a tool's progress report takes to
// reach the dispatcher's caller. "local" is the baseline: the tool and
// the agent in one process (device client, in-process MCP server, local
// dispatcher). "aip" is a served task: the device client sends the report
// over a real loopback WebSocket (an AIP heartbeat with a progress field)
// to the server's WebSocket dispatcher, which hands it to the round's
// callback (dispatcher-) and to the server's hook (hook-: what the API
// and the console show). Reports are 60 ms apart, past the device
// client's 50 ms coalescing, so each one travels. One op is one report:
// run with -benchtime=Nx.
func BenchmarkProgressLatency(b *testing.B) {
	const every = 60
	tick := func(n int) []command.Command {
		return []command.Command{{ToolName: "tick", Namespace: "bench", ToolType: command.DataCollection,
			Parameters: map[string]any{"n": n, "every_ms": every}}}
	}
	b.Run("local", func(b *testing.B) {
		p := newProbe()
		d := dispatcher.NewLocal(tickDevice(b, p), dispatcher.LocalOptions{})
		ctx := command.WithProgress(context.Background(), func(pr command.Progress) { p.arrive("dispatcher", pr.Progress) })
		b.ResetTimer()
		res := d.Execute(ctx, tick(b.N))
		b.StopTimer()
		if !res[0].OK() {
			b.Fatal(res[0].Error)
		}
		p.report(b, "dispatcher", "dispatcher-", b.N)
	})
	b.Run("aip", func(b *testing.B) {
		p := newProbe()
		dev := tickDevice(b, p)
		session := func(spec server.SessionSpec) (server.Runner, error) {
			return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
				ctx = command.WithProgress(ctx, func(pr command.Progress) { p.arrive("dispatcher", pr.Progress) })
				res := spec.Dispatcher.Execute(ctx, tick(b.N))
				if !res[0].OK() {
					return &agent.Outcome{Status: fsm.Fail, Answer: res[0].Error}
				}
				return &agent.Outcome{Status: fsm.Finish, Answer: string(res[0].Result)}
			}), nil
		}
		f := newFixture(b, server.Options{NewSession: session,
			OnProgress: func(_ string, pi server.ProgressInfo) { p.arrive("hook", pi.Progress) }})
		connect(b, f.wsURL, "bench", dev, nil)
		b.ResetTimer()
		info, err := f.srv.Dispatch("bench", "tick", "bench", "bench")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(b.N)*time.Second+time.Minute)
		defer cancel()
		end, err := f.srv.Wait(ctx, info.ID)
		b.StopTimer()
		if err != nil || end.Status != server.StatusCompleted {
			b.Fatalf("task: %v %s %s", err, end.Status, end.Error)
		}
		p.report(b, "dispatcher", "dispatcher-", b.N)
		p.report(b, "hook", "hook-", b.N)
	})
}
