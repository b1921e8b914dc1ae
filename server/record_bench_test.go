package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/client/remote"
	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/tools"
	"github.com/saucerhq/saucer/trajectory"
)

// trivialScript is a served task of four instant model calls: the host
// assigns the bench app, whose agent calls its no-op tool once and
// finishes, and the host finishes.
const trivialScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: bench, subtask: "Call noop once."}}]
  - tool_calls: [{name: noop, arguments: {note: "once"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Called noop once."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Done: noop was called once."}}]
`

type noopIn struct {
	Note string `json:"note,omitempty" jsonschema_description:"ignored"`
}

type noopOut struct {
	OK bool `json:"ok"`
}

// runBenchDevice is the child process of BenchmarkServedTaskRecording: a
// device client with one in-process tool that does nothing, connected to
// url until its stdin closes. It runs in a process of its own so that the
// benchmark's CPU time is the server's alone.
func runBenchDevice(url string) int {
	srv := &tools.Server{Name: "bench"}
	srv.Add(tools.New("noop", "Does nothing.", tools.Annotations{Risk: tools.RiskRead}, func(context.Context, noopIn) (noopOut, error) {
		return noopOut{OK: true}, nil
	}))
	dev, err := client.New(context.Background(), []client.Server{{Namespace: "bench", Description: "Does nothing.", MCP: srv}}, client.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer dev.Close()
	c, err := remote.New(dev, remote.Options{URL: url, Token: token, ClientID: "bench"})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	select {
	case <-c.Connected():
	case <-time.After(time.Minute):
		fmt.Println("ERROR", "the device did not connect")
		return 1
	}
	fmt.Println("READY")
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// BenchmarkServedTaskRecording: the server CPU a trivial served task costs
// (trivialScript's four model calls and a command, real agents built by
// server.Sessions from the default config, a device in another process),
// recorded as saucer serve records it (server.RecordTo with the default
// redactor) and not recorded, alternately in the same run. Metrics: the
// CPU milliseconds of each per task, and record-share, the part of a
// recorded task's CPU that recording costs ((on-off)/on; target ≤ 0.20).
func BenchmarkServedTaskRecording(b *testing.B) {
	cfg := scriptedConfig(b, trivialScript)
	red, err := trajectory.NewRedactor(cfg.Secrets(nil, nil), append(trajectory.DefaultPatterns(), cfg.Record.RedactPatterns...))
	if err != nil {
		b.Fatal(err)
	}
	plain := server.Sessions(cfg, session.Options{})
	recorded := server.RecordTo(b.TempDir(), cfg, trajectory.Options{Redactor: red, ArtifactThreshold: cfg.Record.ArtifactThreshold}, plain)
	var record atomic.Bool
	s, err := server.New(server.Options{Token: token, MaxTasks: 1 << 20, KeepTasks: 16, NewSession: func(spec server.SessionSpec) (server.Runner, error) {
		if record.Load() {
			return recorded(spec)
		}
		return plain(spec)
	}})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(ctx, "benchmark over")
		hs.Close()
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SAUCER_BENCH_DEVICE_URL=ws"+strings.TrimPrefix(hs.URL, "http")+"/ws")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "READY" {
		b.Fatalf("the device process said %q", sc.Text())
	}
	task := func(on bool) time.Duration {
		record.Store(on)
		cpu := cputime.Process()
		info, err := s.Dispatch("bench", "call noop once", "bench", "bench")
		for errors.Is(err, server.ErrBusy) { // the last task is freeing its slot
			time.Sleep(50 * time.Microsecond)
			info, err = s.Dispatch("bench", "call noop once", "bench", "bench")
		}
		if err != nil {
			b.Fatal(err)
		}
		got, err := s.Wait(context.Background(), info.ID)
		if err != nil || got.Status != server.StatusCompleted {
			b.Fatalf("task %s: %s %s %v", got.ID, got.Status, got.Error, err)
		}
		return cputime.Process() - cpu
	}
	for range 3 { // warm both paths
		task(true)
		task(false)
	}
	b.ResetTimer()
	var on, off time.Duration
	for b.Loop() {
		on += task(true)
		off += task(false)
	}
	onMS, offMS := float64(on.Microseconds())/1000/float64(b.N), float64(off.Microseconds())/1000/float64(b.N)
	b.ReportMetric(onMS, "on-cpu-ms/task")
	b.ReportMetric(offMS, "off-cpu-ms/task")
	b.ReportMetric((onMS-offMS)/onMS, "record-share")
}
