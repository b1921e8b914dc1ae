package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/telemetrytest"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/telemetry"
	"github.com/saucerhq/saucer/trajectory"
)

// TestTracesReachACollector: a demo session's spans arrive at a real OTLP
// receiver, with the GenAI conventions' names.
func TestTracesReachACollector(t *testing.T) {
	rcv := telemetrytest.New()
	defer rcv.Close()
	ctx := context.Background()
	model, err := scripted.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := telemetry.New(ctx, telemetry.Options{Endpoint: rcv.URL, Model: "scripted:demo"}, "the demo")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	dev, err := local.Device(ctx, cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	sess, err := session.New(cfg, session.Options{Device: dev, Model: model, Observers: []func(agent.Event){tr.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if err := tr.End(ctx, out); err != nil {
		t.Fatal(err)
	}
	spans := map[string]map[string]string{}
	for _, s := range rcv.Spans() {
		spans[s.Name] = s.Attrs
		// A model call goes to a model server; the device is in this
		// process; nothing failed.
		want := "internal"
		if strings.HasPrefix(s.Name, "chat ") {
			want = "client"
		}
		if s.Kind != want {
			t.Errorf("span %q is of kind %s, want %s", s.Name, s.Kind, want)
		}
		if s.Status != "" {
			t.Errorf("span %q has status %s (%s), want none", s.Name, s.Status, s.StatusMessage)
		}
	}
	for name, want := range map[string][]string{
		"session":                    {"saucer.status", "FINISH"},
		"invoke_agent host":          {"gen_ai.agent.name", "host"},
		"chat scripted:demo":         {"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "tool_calls"},
		"execute_tool write_file":    {"gen_ai.tool.name", "write_file"},
		"execute_tool get_mcp_tools": {"gen_ai.operation.name", "execute_tool"},
	} {
		attrs, ok := spans[name]
		if !ok {
			t.Errorf("no span %q arrived (got %d spans)", name, len(spans))
			continue
		}
		text := ""
		for k, v := range attrs {
			text += k + "=" + v + "\n"
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("span %q lacks %q:\n%s", name, w, text)
			}
		}
	}
}

// One exporter traces many sessions (a server's tasks, an eval's trials),
// each its own session span with its labels; texts that came from a person
// or a tool go through the recording's redactor first.
func TestExporterSessionsRedacted(t *testing.T) {
	rcv := telemetrytest.New()
	defer rcv.Close()
	const secret = "sk-proj-0123456789abcdefghij"
	red, err := trajectory.NewRedactor([]string{secret}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x, err := telemetry.NewExporter(ctx, telemetry.Options{Endpoint: rcv.URL, Model: "scripted:demo", Redact: red.String})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		tr := x.Start("deploy with key "+secret, "", map[string]string{"task_id": id})
		tr.Observe(agent.Event{Kind: agent.EventAgentStart, Agent: "app-1", Role: "app", App: "shell", Subtask: "export KEY=" + secret})
		tr.Observe(agent.Event{Kind: agent.EventModelCall, Agent: "app-1", Err: errors.New("the server echoed " + secret)})
		tr.Observe(agent.Event{Kind: agent.EventAgentEnd, Agent: "app-1"})
		if err := tr.End(ctx, &agent.Outcome{Status: "FINISH"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	sessions := rcv.Named("session")
	if len(sessions) != 2 || sessions[0].Attrs["saucer.task_id"] == sessions[1].Attrs["saucer.task_id"] {
		t.Fatalf("session spans: %+v", sessions)
	}
	all := rcv.Spans()
	if len(all) != 6 {
		t.Errorf("%d spans, want 6 (session, agent and chat, twice)", len(all))
	}
	for _, s := range all {
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) {
				t.Errorf("span %q attribute %s holds the secret: %q", s.Name, k, v)
			}
		}
	}
	if got := sessions[0].Attrs["saucer.task"]; !strings.HasPrefix(got, "deploy with key ") || !strings.Contains(got, trajectory.Redacted) {
		t.Errorf("task attribute %q: want it kept, with the secret replaced", got)
	}
}

// Spans say what failed: a model call that failed, a command whose result
// is a failure, an agent and a session that ended in FAIL have an error
// status with the reason, redacted. Model calls are client spans;
// commands are client spans when the device is remote (a served task,
// labelled with its device), internal otherwise.
func TestSpanKindsAndErrors(t *testing.T) {
	const secret = "sk-proj-0123456789abcdefghij"
	red, err := trajectory.NewRedactor([]string{secret}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels   map[string]string
		toolKind string
	}{{map[string]string{"case": "local"}, "internal"}, {map[string]string{"task_id": "t1", "device": "laptop"}, "client"}} {
		rcv := telemetrytest.New()
		defer rcv.Close()
		ctx := context.Background()
		x, err := telemetry.NewExporter(ctx, telemetry.Options{Endpoint: rcv.URL, Model: "scripted:demo", Redact: red.String})
		if err != nil {
			t.Fatal(err)
		}
		tr := x.Start("the task", "", tc.labels)
		tr.Observe(agent.Event{Kind: agent.EventAgentStart, Agent: "app-1", Role: "app", App: "shell"})
		tr.Observe(agent.Event{Kind: agent.EventModelCall, Agent: "app-1", Err: errors.New("rate limited for key " + secret)})
		tr.Observe(agent.Event{Kind: agent.EventModelCall, Agent: "app-1", Response: &llm.Response{FinishReason: "tool_calls"}})
		tr.Observe(agent.Event{Kind: agent.EventDispatch, Agent: "app-1",
			Commands: []command.Command{{ToolName: "ok_tool"}, {ToolName: "bad_tool"}, {ToolName: "later_tool"}},
			Results: []command.Result{{Status: command.Success}, {Status: command.Failure, Error: "exit 1: token " + secret + " refused"},
				{Status: command.Skipped, Error: "skipped: an earlier command failed"}}})
		tr.Observe(agent.Event{Kind: agent.EventAgentEnd, Agent: "app-1", Note: &memory.Note{Status: "FAIL", Result: "could not log in with " + secret}})
		if err := tr.End(ctx, &agent.Outcome{Status: "FAIL", Answer: "gave up"}); err != nil {
			t.Fatal(err)
		}
		if err := x.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		type want struct{ kind, status, message string }
		expect := map[string]want{
			"session":                 {"internal", "error", "FAIL: gave up"},
			"invoke_agent app-1":      {"internal", "error", "FAIL: could not log in with " + trajectory.Redacted},
			"execute_tool ok_tool":    {tc.toolKind, "", ""},
			"execute_tool bad_tool":   {tc.toolKind, "error", "exit 1: token " + trajectory.Redacted + " refused"},
			"execute_tool later_tool": {tc.toolKind, "", ""}, // skipped: it did not run, so it did not fail
		}
		chats := 0
		for _, s := range rcv.Spans() {
			if strings.HasPrefix(s.Name, "chat ") {
				chats++
				if s.Kind != "client" {
					t.Errorf("chat span of kind %s, want client", s.Kind)
				}
				if failed := s.Attrs["error.type"] != ""; failed != (s.Status == "error") {
					t.Errorf("chat span: status %q with error.type %q", s.Status, s.Attrs["error.type"])
				}
				if s.Status == "error" && s.StatusMessage != "rate limited for key "+trajectory.Redacted {
					t.Errorf("chat span's status message %q", s.StatusMessage)
				}
				continue
			}
			w, ok := expect[s.Name]
			if !ok {
				t.Errorf("unexpected span %q", s.Name)
				continue
			}
			delete(expect, s.Name)
			if s.Kind != w.kind || s.Status != w.status || s.StatusMessage != w.message {
				t.Errorf("%v: span %q: kind %s, status %q %q; want %s, %q %q", tc.labels, s.Name, s.Kind, s.Status, s.StatusMessage, w.kind, w.status, w.message)
			}
		}
		if chats != 2 || len(expect) > 0 {
			t.Errorf("%v: %d chat spans (want 2); spans that did not arrive: %v", tc.labels, chats, expect)
		}
	}
}
