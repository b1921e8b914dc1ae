package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/telemetrytest"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/telemetry"
	"github.com/saucerhq/saucer/trajectory"
)

// clockScript expects what the clock strategy adds, then writes a file.
const clockScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write tick.txt."}}]
  - expect: "clock says tick"
    tool_calls: [{name: write_file, arguments: {path: tick.txt, content: "tock\n"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Wrote tick.txt."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "tick.txt written."}}]
`

// clockSetup is a program's registry with its own strategy, "clock", and a
// config that names it in an edit of the app pipeline, as a user would.
func clockSetup(t *testing.T) (*config.Config, *strategy.Registry) {
	t.Helper()
	reg := strategy.NewRegistry()
	if err := reg.Register("clock", func(map[string]any) (strategy.Strategy, error) {
		return strategy.Func("clock", strategy.DataCollection, func(ctx context.Context, pc *strategy.Context) error {
			pc.Observe(prompts.Observation{Name: "clock", Content: "clock says tick"})
			return nil
		}), nil
	}); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "clock.yaml")
	if err := os.WriteFile(script, []byte(clockScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.FromYAML([]byte("model: scripted:" + script + "\nagent: {retry_backoff: 1ms, app_edits: [{after: discover, name: clock}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, reg
}

func wrote(t *testing.T, dir string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "tick.txt")); err != nil || string(b) != "tock\n" {
		t.Errorf("tick.txt: %q, %v", b, err)
	}
}

// TestCustomStrategyInEveryEntryPoint: a strategy a program registers works
// in local mode, in an eval suite and on the server, because all three
// build their sessions through the one assembly.
func TestCustomStrategyInEveryEntryPoint(t *testing.T) {
	cfg, reg := clockSetup(t)
	ctx := context.Background()

	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		dev, err := local.Device(ctx, cfg, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		if _, err := session.New(cfg, session.Options{Device: dev}); err == nil || !strings.Contains(err.Error(), `unknown strategy "clock"`) {
			t.Errorf("without the registry: %v", err)
		}
		sess, err := session.New(cfg, session.Options{Device: dev, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		if out := sess.Run(ctx, "write tick.txt"); !out.OK() {
			t.Fatalf("outcome %+v", out)
		}
		wrote(t, dir)
	})

	t.Run("eval", func(t *testing.T) {
		suite, err := evals.ParseSuite([]byte(`name: clock
cases:
  - id: tick
    task: write tick.txt with key ` + secret + `
    checks: [{state: {run: "cat tick.txt", output: "tock"}}]
`))
		if err != nil {
			t.Fatal(err)
		}
		rcv, x := traces(t)
		rep, err := evals.Run(ctx, suite, evals.Options{Results: t.TempDir(), Config: cfg, Model: cfg.Model,
			Session: session.Options{Registry: reg}, Trace: x})
		if err != nil {
			t.Fatal(err)
		}
		traced(t, rcv, x, map[string]string{"saucer.suite": "clock", "saucer.case": "tick", "saucer.trial": "1"})
		if rep.Metrics.Successes != 1 {
			b, _ := json.MarshalIndent(rep.Cases, "", " ")
			t.Errorf("suite: %d successes\n%s", rep.Metrics.Successes, b)
		}
	})

	t.Run("serve", func(t *testing.T) {
		const token = "entry-points"
		rcv, x := traces(t)
		srv, err := server.New(server.Options{Token: token, NewSession: server.TraceTo(x, cfg.Model, server.Sessions(cfg, session.Options{Registry: reg})), Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer hs.Close()
		defer srv.Shutdown(context.Background(), "test over")

		dir := t.TempDir()
		dev, err := local.Device(ctx, cfg, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		rc, err := remote.New(dev, remote.Options{URL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", Token: token, ClientID: "box",
			MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rc.Run(rctx) }()
		defer func() { stop(); <-done }()
		select {
		case <-rc.Connected():
		case err := <-done:
			t.Fatalf("client ended: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("the device did not register")
		}

		var d server.DispatchResponse
		call(t, hs.URL, token, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write tick.txt with key " + secret}, &d)
		var info server.TaskInfo
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			call(t, hs.URL, token, "GET", "/api/tasks/"+d.TaskID, nil, &info)
			if info.Status != server.StatusRunning {
				break
			}
		}
		if info.Status != server.StatusCompleted {
			t.Fatalf("task %s: %s", info.Status, info.Error)
		}
		wrote(t, dir)
		traced(t, rcv, x, map[string]string{"saucer.task_id": d.TaskID, "saucer.device": "box"})
	})
}

func call(t *testing.T, base, token, method, path string, body, out any) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
	req.Header.Set("X-API-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, err)
	}
}

// secret is in the tasks of the traced entry points: no span may carry it.
const secret = "sk-proj-0123456789abcdefghij"

// traces starts an OTLP receiver on loopback and an exporter to it that
// redacts secret, as the recording's redactor does.
func traces(t *testing.T) (*telemetrytest.Receiver, *telemetry.Exporter) {
	t.Helper()
	rcv := telemetrytest.New()
	t.Cleanup(rcv.Close)
	red, err := trajectory.NewRedactor([]string{secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := telemetry.NewExporter(context.Background(), telemetry.Options{Endpoint: rcv.URL, Redact: red.String})
	if err != nil {
		t.Fatal(err)
	}
	return rcv, x
}

// traced flushes x and checks that one session span arrived with labels,
// with its model calls and the write_file command, and no secret.
func traced(t *testing.T, rcv *telemetrytest.Receiver, x *telemetry.Exporter, labels map[string]string) {
	t.Helper()
	if err := x.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	sessions := rcv.Named("session")
	if len(sessions) != 1 {
		t.Fatalf("%d session spans, want 1", len(sessions))
	}
	for k, v := range labels {
		if got := sessions[0].Attrs[k]; got != v {
			t.Errorf("session span %s = %q, want %q", k, got, v)
		}
	}
	if got := sessions[0].Attrs["saucer.status"]; got != "FINISH" {
		t.Errorf("session span status %q", got)
	}
	chats := 0
	for _, s := range rcv.Spans() {
		if strings.HasPrefix(s.Name, "chat ") {
			chats++
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) {
				t.Errorf("span %q attribute %s holds the secret", s.Name, k)
			}
		}
	}
	if chats != 4 || len(rcv.Named("execute_tool write_file")) != 1 {
		t.Errorf("%d chat spans (want 4) and %d write_file spans (want 1)", chats, len(rcv.Named("execute_tool write_file")))
	}
}
