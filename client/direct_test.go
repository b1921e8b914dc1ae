package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

type corpusIn struct {
	Text string   `json:"text" jsonschema_description:"what to echo"`
	N    int8     `json:"n,omitempty" jsonschema_description:"a small number"`
	F    float64  `json:"f,omitempty" jsonschema_description:"any number"`
	Tags []string `json:"tags,omitempty" jsonschema_description:"labels"`
}

type corpusOut struct {
	Text string   `json:"text"`
	N    int8     `json:"n"`
	F    float64  `json:"f"`
	Tags []string `json:"tags"`
	HTML string   `json:"html"`
}

type noArgs struct{}

// corpusServer offers one tool for each shape a result can take, and tools
// that stream, fail, crash and wait to be stopped. hold blocks its handler
// until release is closed, whatever its context says.
func corpusServer(release <-chan struct{}) *tools.Server {
	s := &tools.Server{Name: "corpus"}
	s.Add(
		tools.New("structured", "echoes its arguments as an object", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in corpusIn) (corpusOut, error) {
				return corpusOut{Text: in.Text, N: in.N, F: in.F, Tags: in.Tags, HTML: "<b>&</b>"}, nil
			}),
		tools.New("text", "returns its text as plain text", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in corpusIn) (string, error) { return in.Text, nil }),
		tools.New("list", "returns a JSON array", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) ([]int, error) { return []int{3, 1, 2}, nil }),
		tools.New("parts", "returns text, an image and audio", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (tools.Content, error) {
				return tools.Content{tools.Text("a picture:"), tools.Image([]byte("\x89PNG\r\n"), "image/png"),
					tools.Part{Data: []byte("RIFF"), MIMEType: "audio/wav"}, tools.Text("bad \xff byte")}, nil
			}),
		tools.New("bad_part", "returns a part of no known kind", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (tools.Content, error) {
				return tools.Content{{Data: []byte("x"), MIMEType: "application/pdf"}}, nil
			}),
		tools.New("nothing", "returns no content", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (tools.Content, error) { return tools.Content{}, nil }),
		tools.New("fail", "fails with a message", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (string, error) {
				return "", errors.New("  the disk \xfe is full\n")
			}),
		tools.New("fail_silently", "fails without a message", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (string, error) { return "", errors.New(" ") }),
		tools.New("crash", "panics", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (string, error) { panic("index out of range [3] with length 3") }),
		tools.New("steps", "streams three steps", tools.Annotations{Risk: tools.RiskRead, Streams: []string{"output"}},
			func(ctx context.Context, in noArgs) (string, error) {
				for i := 1; i <= 3; i++ {
					tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprint("line ", i)})
				}
				return "done", nil
			}),
		tools.New("stoppable", "runs until it is stopped, then says why", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (string, error) {
				tools.ReportProgress(ctx, tools.Progress{Progress: 1, Message: "started"})
				<-ctx.Done()
				return "", fmt.Errorf("stopped: %w", context.Cause(ctx))
			}),
		tools.New("hold", "runs until released, deaf to its context", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (string, error) {
				tools.ReportProgress(ctx, tools.Progress{Progress: 1, Message: "started"})
				<-release
				return "released", nil
			}),
		tools.New("big", "returns more than the device passes on", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in noArgs) (string, error) { return strings.Repeat("x", 5000), nil }),
	)
	return s
}

// outcome is what a call gave its caller: the Result as it is encoded
// (for the recording and the wire) and the progress reports, in order.
type outcome struct {
	Result   string
	Progress []client.Progress
}

// corpusCase is one call; run makes it on a client and says what it gave.
type corpusCase struct {
	name string
	cmd  command.Command
	// run, when set, replaces a plain Execute (cancellation cases).
	run func(t *testing.T, c *client.Client, cmd command.Command, progress func(client.Progress)) command.Result
}

func corpusCases() []corpusCase {
	cmd := func(tool string, params map[string]any) command.Command {
		return command.Command{Namespace: "corpus", ToolName: tool, Parameters: params, CallID: "call-" + tool}
	}
	// cancelOnStart runs cmd and stops it with stop once the tool said it
	// started.
	cancelOnStart := func(stop func(ctx context.Context, cancel context.CancelFunc, c *client.Client, id string) command.Result) func(*testing.T, *client.Client, command.Command, func(client.Progress)) command.Result {
		return func(t *testing.T, c *client.Client, cmd command.Command, progress func(client.Progress)) command.Result {
			started := make(chan struct{})
			var once sync.Once
			ctx, cancel := context.WithCancel(client.WithProgress(context.Background(), func(p client.Progress) {
				progress(p)
				once.Do(func() { close(started) })
			}))
			defer cancel()
			done := make(chan command.Result, 1)
			go func() { done <- c.Execute(ctx, cmd) }()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s never said it started", cmd.ToolName)
			}
			ctl := stop(context.Background(), cancel, c, cmd.CallID)
			var r command.Result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not return once stopped", cmd.ToolName)
			}
			if ctl.Status != "" {
				// cancel_command's own answer goes beside the call's
				// result, its elapsed time zeroed (it is a clock).
				var s command.Status
				if err := json.Unmarshal(ctl.Result, &s); err != nil {
					t.Fatalf("cancel_command answered %+v", ctl)
				}
				s.ElapsedMS = 0
				if s.Result == nil {
					t.Fatalf("cancel_command's answer has no result: %+v", s)
				}
				ctl = command.Succeeded(ctl.CallID, s)
				b, _ := json.Marshal(ctl)
				r.Error += " | cancel_command: " + string(b)
			}
			return r
		}
	}
	return []corpusCase{
		{name: "structured", cmd: cmd("structured", map[string]any{"text": "<héllo> & \u2028", "n": 7, "f": 1e21, "tags": []any{"b", "a"}})},
		{name: "structured, numbers as json.Number", cmd: cmd("structured", map[string]any{"text": "x", "f": json.Number("0.1000")})},
		{name: "plain text", cmd: cmd("text", map[string]any{"text": "just words"})},
		{name: "text that is JSON", cmd: cmd("text", map[string]any{"text": `{"b": 1, "a": [1, 2]}`})},
		{name: "text that is a JSON string with a bad byte", cmd: cmd("text", map[string]any{"text": "\"\xff\""})},
		{name: "empty text", cmd: cmd("text", map[string]any{"text": ""})},
		{name: "array", cmd: cmd("list", nil)},
		{name: "image, audio and text parts", cmd: cmd("parts", map[string]any{})},
		{name: "a part of no known kind", cmd: cmd("bad_part", nil)},
		{name: "no content", cmd: cmd("nothing", nil)},
		{name: "missing required argument", cmd: cmd("text", map[string]any{})},
		{name: "unknown argument", cmd: cmd("text", map[string]any{"text": "x", "colour": "red"})},
		{name: "wrong type", cmd: cmd("text", map[string]any{"text": 12})},
		{name: "fits the schema, not the Go type", cmd: cmd("structured", map[string]any{"text": "x", "n": 300})},
		{name: "arguments that are not JSON", cmd: cmd("text", map[string]any{"text": "x", "f": func() {}})},
		{name: "unknown tool", cmd: cmd("txet", map[string]any{"text": "x"})},
		{name: "tool error", cmd: cmd("fail", nil)},
		{name: "tool error without a message", cmd: cmd("fail_silently", nil)},
		{name: "panic", cmd: cmd("crash", nil)},
		{name: "streamed progress", cmd: cmd("steps", nil)},
		{name: "streamed progress, no call id", cmd: command.Command{Namespace: "corpus", ToolName: "steps"}},
		{name: "over the result limit", cmd: cmd("big", nil)},
		{name: "cancel_command", cmd: cmd("stoppable", nil),
			run: cancelOnStart(func(ctx context.Context, _ context.CancelFunc, c *client.Client, id string) command.Result {
				return c.Execute(ctx, command.Command{ToolName: command.CancelCommand, Parameters: map[string]any{"call_id": id}, CallID: "ctl"})
			})},
		{name: "caller cancels a tool deaf to it", cmd: cmd("hold", nil),
			run: cancelOnStart(func(_ context.Context, cancel context.CancelFunc, _ *client.Client, _ string) command.Result {
				cancel()
				return command.Result{}
			})},
		{name: "timeout", cmd: cmd("hold", nil), run: func(t *testing.T, c *client.Client, cmd command.Command, progress func(client.Progress)) command.Result {
			return c.Execute(client.WithProgress(context.Background(), progress), cmd)
		}},
	}
}

// runCorpus makes every call of the corpus on a client serving srv and
// returns what each gave.
func runCorpus(t *testing.T, srv client.Server) map[string]outcome {
	srv.Namespace = "corpus"
	srv.ToolTimeouts = map[string]time.Duration{"hold": 50 * time.Millisecond}
	opts := fastOpts()
	opts.MaxResultBytes = 4096
	c := newClient(t, []client.Server{srv}, opts)
	out := map[string]outcome{}
	for _, tc := range corpusCases() {
		var mu sync.Mutex
		var o outcome
		progress := func(p client.Progress) {
			mu.Lock()
			defer mu.Unlock()
			p.ElapsedMS = 0 // a clock
			o.Progress = append(o.Progress, p)
		}
		var r command.Result
		if tc.run != nil {
			r = tc.run(t, c, tc.cmd, progress)
		} else {
			r = c.Execute(client.WithProgress(context.Background(), progress), tc.cmd)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s: encode %+v: %v", tc.name, r, err)
		}
		mu.Lock()
		o.Result = string(b)
		out[tc.name] = o
		mu.Unlock()
	}
	return out
}

// A call to Saucer's own tools in this process goes to the tool itself, not
// through MCP, and gives its caller the same bytes and the same progress
// as the call through mcp-go's in-process transport: results of every
// shape, invalid arguments, unknown tools, failures, panics, streamed
// progress, cancel_command, the caller's cancellation and timeouts.
func TestDirectCallsMatchMCP(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := corpusServer(release)
	direct := runCorpus(t, client.Server{MCP: srv})
	viaMCP := runCorpus(t, client.ThroughMCP(client.Server{MCP: srv}))
	for _, tc := range corpusCases() {
		d, m := direct[tc.name], viaMCP[tc.name]
		if d.Result != m.Result {
			t.Errorf("%s: result\ndirect: %s\nMCP:    %s", tc.name, d.Result, m.Result)
		}
		if db, mb := mustJSON(t, d.Progress), mustJSON(t, m.Progress); db != mb {
			t.Errorf("%s: progress\ndirect: %s\nMCP:    %s", tc.name, db, mb)
		}
	}
	// The corpus does reach what it means to: a sample of the answers.
	for name, want := range map[string]string{
		"structured":                       `"result":{"text":"\u003chéllo\u003e \u0026 \u2028","n":7,"f":1e+21,"tags":["b","a"],"html":"\u003cb\u003e\u0026\u003c/b\u003e"}`,
		"missing required argument":        `missing required argument \"text\"`,
		"fits the schema, not the Go type": `invalid arguments for structured: argument \"n\" must be an integer`,
		"panic":                            `tool crash crashed: index out of range`,
		"tool error":                       "\"error\":\"the disk \uFFFD is full\"",
		"tool error without a message":     `fail_silently reported an error without a message`,
		"cancel_command":                   `stopped: cancelled by cancel_command`,
		"caller cancels a tool deaf to it": `hold was cancelled: context canceled`,
		"timeout":                          `hold timed out after 50ms`,
		"over the result limit":            `is 5002 bytes, over the limit of 4096 bytes`,
	} {
		if !strings.Contains(direct[name].Result, want) {
			t.Errorf("%s: %s\nwant it to contain %s", name, direct[name].Result, want)
		}
	}
	if got := len(direct["streamed progress"].Progress); got != 3 {
		t.Errorf("streamed progress: %d reports, want 3", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Saucer's own tools served in this process are called directly: their
// handler runs without mcp-go's server in its context. A server of another
// kind in this process (mcp-go's own) still goes through MCP.
func TestSaucerToolsAreCalledDirectly(t *testing.T) {
	s := &tools.Server{Name: "where"}
	s.Add(tools.New("where", "says how it was called", tools.Annotations{Risk: tools.RiskRead},
		func(ctx context.Context, in noArgs) (string, error) {
			if server.ServerFromContext(ctx) != nil {
				return "through MCP", nil
			}
			return "directly", nil
		}))
	for _, tc := range []struct {
		srv  client.Server
		want string
	}{
		{client.Server{Namespace: "where", MCP: s}, `"directly"`},
		{client.ThroughMCP(client.Server{Namespace: "where", MCP: s}), `"through MCP"`},
	} {
		c := newClient(t, []client.Server{tc.srv}, fastOpts())
		r := c.Execute(context.Background(), command.Command{Namespace: "where", ToolName: "where", CallID: "c1"})
		if !r.OK() || string(r.Result) != tc.want {
			t.Errorf("got %+v, want the result %s", r, tc.want)
		}
	}
}
