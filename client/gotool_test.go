package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

// A Go tool's declared class is its class, even where MCP's hints cannot
// say it (a write tool that reaches the network would read as external),
// and its declared streams are in the device's interface.
func TestGoToolDeclarationsReachTheDevice(t *testing.T) {
	s := &tools.Server{Name: "chat"}
	s.Add(
		tools.New("post", "posts a message", tools.Annotations{Risk: tools.RiskWrite, OpenWorld: true, Streams: []string{"output"}},
			func(ctx context.Context, in struct{}) (string, error) { return "posted", nil }),
		tools.New("mystery", "declares nothing", tools.Annotations{},
			func(ctx context.Context, in struct{}) (string, error) { return "?", nil }),
	)
	c := newClient(t, []client.Server{{Namespace: "chat", MCP: s}}, fastOpts())
	risks := map[string]client.Risk{}
	for _, info := range c.Tools("chat", "") {
		risks[info.Name] = client.RiskOf(info)
	}
	if risks["post"] != client.RiskWrite || risks["mystery"] != client.RiskDestructive {
		t.Errorf("risk classes: %v", risks)
	}
	in := c.Describe("chat")
	if got := in.Commands["chat.post"].Streams; !slices.Equal(got, []string{"progress", "output"}) {
		t.Errorf("post streams %q", got)
	}
	if got := in.Commands["chat.mystery"].Streams; !slices.Equal(got, []string{"progress"}) {
		t.Errorf("mystery streams %q", got)
	}
}

// A Go tool's progress reaches the caller of Execute in-process, tagged
// with the command, all of it before the result: even reports sent just
// before the handler returns.
func TestGoToolProgressReachesTheCaller(t *testing.T) {
	s := &tools.Server{Name: "work"}
	s.Add(tools.New("steps", "works in three steps", tools.Annotations{Risk: tools.RiskRead},
		func(ctx context.Context, in struct{}) (string, error) {
			for i := 1; i <= 3; i++ {
				tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
			}
			return "done", nil
		}))
	c := newClient(t, []client.Server{{Namespace: "work", MCP: s}}, fastOpts())
	// Notifications handed over on a goroutine of their own lose the race
	// with the result most times: twenty calls show it.
	for i := range 20 {
		var log progressLog
		ctx := log.context(context.Background())
		id := fmt.Sprint("c-", i)
		r := c.Execute(ctx, command.Command{Namespace: "work", ToolName: "steps", CallID: id})
		var text string
		if err := json.Unmarshal(r.Result, &text); err != nil || text != "done" {
			t.Fatalf("result %+v", r)
		}
		got := log.reports()
		want := []client.Progress{
			{CallID: id, Namespace: "work", Tool: "steps", Progress: 1, Total: 3, Message: "step 1", State: command.StateRunning},
			{CallID: id, Namespace: "work", Tool: "steps", Progress: 2, Total: 3, Message: "step 2", State: command.StateRunning},
			{CallID: id, Namespace: "work", Tool: "steps", Progress: 3, Total: 3, Message: "step 3", State: command.StateRunning},
		}
		if !slices.Equal(untimed(got), want) {
			t.Fatalf("call %d: progress before the result:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// The same over stdio, to Saucer's own server in another process
// (`saucer mcp`): its reports are written before its result, so none is
// lost to the race with it.
func TestGoToolProgressOverStdioComesBeforeTheResult(t *testing.T) {
	srv := peer("steps")
	srv.Namespace = "work"
	c := newClient(t, []client.Server{srv}, fastOpts())
	for i := range 50 {
		var log progressLog
		ctx := log.context(context.Background())
		id := fmt.Sprint("s-", i)
		if r := c.Execute(ctx, command.Command{Namespace: "work", ToolName: "steps", CallID: id}); text(t, r) != "done" {
			t.Fatalf("result %+v", r)
		}
		if n := len(log.reports()); n != 3 {
			t.Fatalf("call %d: %d of 3 reports came before the result", i, n)
		}
	}
}

// A tool that goes on after its timeout reports to nobody: the caller has
// its result (the timeout) and hears no more of the call.
func TestProgressEndsWithTheCall(t *testing.T) {
	started, returned, reported := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s := &tools.Server{Name: "work"}
	s.Add(tools.New("overrun", "ignores its caller's end and reports after it", tools.Annotations{Risk: tools.RiskRead},
		func(ctx context.Context, in struct{}) (string, error) {
			close(started)
			<-returned
			tools.ReportProgress(ctx, tools.Progress{Progress: 1, Message: "still here"})
			close(reported)
			return "late", nil
		}))
	c := newClient(t, []client.Server{{Namespace: "work", MCP: s}}, fastOpts())
	var log progressLog
	ctx, cancel := context.WithCancelCause(log.context(context.Background()))
	// The caller gives up once the tool runs (a timeout under load could
	// come before the handler started, and test nothing).
	go func() {
		<-started
		cancel(errors.New("the caller gave up"))
	}()
	r := c.Execute(ctx, command.Command{Namespace: "work", ToolName: "overrun"})
	close(returned)
	if r.OK() || !strings.Contains(r.Error, "the caller gave up") {
		t.Fatalf("result %+v", r)
	}
	select {
	case <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never reported")
	}
	if got := log.reports(); len(got) != 0 {
		t.Errorf("progress after the call returned: %+v", got)
	}
}

// untimed is ps without their elapsed times, which vary.
func untimed(ps []client.Progress) []client.Progress {
	out := slices.Clone(ps)
	for i := range out {
		out[i].ElapsedMS = 0
	}
	return out
}
