package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/internal/remote"
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
// CPU milliseconds of each per task (and their system part), record-share,
// the part of a recorded task's CPU that recording costs ((on-off)/on;
// target ≤ 0.20), fs-floor, the CPU of the bare file system work a
// recording needs (see floor), and record-share-code, recording's share
// without that floor ((on-off-floor)/on), the figure that measures the
// code on any machine.
func BenchmarkServedTaskRecording(b *testing.B) {
	cfg := scriptedConfig(b, trivialScript)
	red, err := trajectory.NewRedactor(cfg.Secrets(nil, nil), append(trajectory.DefaultPatterns(), cfg.Record.RedactPatterns...))
	if err != nil {
		b.Fatal(err)
	}
	plain := server.Sessions(cfg, session.Options{})
	runs := b.TempDir()
	recorded := server.RecordTo(runs, cfg, trajectory.Options{Redactor: red, ArtifactThreshold: cfg.Record.ArtifactThreshold}, plain)
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
	sc, stop := startPeerProcess(b, "SAUCER_BENCH_DEVICE_URL=ws"+strings.TrimPrefix(hs.URL, "http")+"/ws")
	defer stop()
	if !sc.Scan() || sc.Text() != "READY" {
		b.Fatalf("the device process said %q", sc.Text())
	}
	// cpu is a task's server CPU, in its user and system parts.
	type cpu struct{ user, system time.Duration }
	task := func(on bool) cpu {
		record.Store(on)
		user, system := cputime.Split()
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
		user2, system2 := cputime.Split()
		return cpu{user2 - user, system2 - system}
	}
	for range 3 { // warm both paths
		task(true)
		task(false)
	}
	// floor is what the file system alone charges for a recording: the
	// run's folder and its trajectory file made, written with as many bytes
	// as a recorded task's, and closed, in a folder beside the runs. How
	// much that costs depends on the kernel and the file system's state
	// (the same code read 0.18-0.25 of a task by hand and up to 0.49 on
	// another machine's tmpfs), so the code's own share is counted without
	// it (record-share-code) as well as with it (record-share).
	size := recordedSize(b, runs)
	floors := b.TempDir()
	line := make([]byte, size)
	floor := func(i int) time.Duration {
		user, system := cputime.Split()
		dir := filepath.Join(floors, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, trajectory.EventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		user2, system2 := cputime.Split()
		return user2 - user + system2 - system
	}
	b.ResetTimer()
	var on, off cpu
	var fs time.Duration
	for i := 0; b.Loop(); i++ {
		c := task(true)
		on.user += c.user
		on.system += c.system
		c = task(false)
		off.user += c.user
		off.system += c.system
		fs += floor(i)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	onUser, offUser := ms(on.user), ms(off.user)
	onMS, offMS := onUser+ms(on.system), offUser+ms(off.system)
	b.ReportMetric(onMS, "on-cpu-ms/task")
	b.ReportMetric(offMS, "off-cpu-ms/task")
	b.ReportMetric(ms(on.system), "on-sys-ms/task")
	b.ReportMetric(ms(off.system), "off-sys-ms/task")
	b.ReportMetric((onMS-offMS)/onMS, "record-share")
	b.ReportMetric((onUser-offUser)/onUser, "record-share-user")
	b.ReportMetric(ms(fs), "fs-floor-ms/task")
	b.ReportMetric((onMS-offMS-ms(fs))/onMS, "record-share-code")
}

// recordedSize is the size of a trajectory file among those recorded in
// runs (the benchmark's tasks are alike).
func recordedSize(b *testing.B, runs string) int {
	found, _ := filepath.Glob(filepath.Join(runs, "*", trajectory.EventsFile))
	if len(found) == 0 {
		found, _ = filepath.Glob(filepath.Join(runs, "*", "*", trajectory.EventsFile))
	}
	if len(found) == 0 {
		b.Fatalf("no trajectory recorded under %s", runs)
	}
	fi, err := os.Stat(found[0])
	if err != nil {
		b.Fatal(err)
	}
	return int(fi.Size())
}
