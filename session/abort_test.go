package session_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
)

// procAlive reports whether pid exists and is not a zombie.
func procAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	return !strings.HasPrefix(strings.TrimSpace(string(b[bytes.LastIndexByte(b, ')')+1:])), "Z")
}

// Cancelling Run's context stops a session between commands: the command
// in progress goes on. Ending Options.Abort stops that command too: its
// process is killed and the session ends at once.
func TestAbortStopsTheCommandInProgress(t *testing.T) {
	work := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Shell.Timeout = config.Duration(10 * time.Minute) // only Abort may end the command
	dev, err := local.Device(context.Background(), cfg, work)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	script, err := scripted.Parse([]byte(`replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: wait}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 600"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "touch after"}}]
  - tool_calls: [{name: finish_task, arguments: {result: done}}]
  - tool_calls: [{name: finish_task, arguments: {result: done}}]
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	abortCtx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	var results []string
	sess, err := session.New(cfg, session.Options{Device: dev, Model: scripted.New(*script), Abort: abortCtx,
		Observers: []func(agent.Event){func(e agent.Event) {
			if e.Kind == agent.EventDispatch {
				for _, r := range e.Results {
					results = append(results, string(r.Status)+": "+r.Error)
				}
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan *agent.Outcome, 1)
	go func() { done <- sess.Run(runCtx, "wait") }()

	var pid int
	for deadline := time.Now().Add(60 * time.Second); pid <= 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command did not start within 60 s")
		}
		b, _ := os.ReadFile(filepath.Join(work, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	defer func() {
		if procAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	stop() // between commands: the one running goes on
	select {
	case out := <-done:
		t.Fatalf("the session ended while its command ran: %s %q", out.Status, out.Answer)
	default:
	}
	if !procAlive(pid) {
		t.Fatal("cancelling Run's context killed the command")
	}
	abort(errors.New("stopped by the test"))
	var out *agent.Outcome
	select {
	case out = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the session did not end within 60 s of Abort")
	}
	if !out.Cancelled {
		t.Errorf("outcome %s %q, want it cancelled", out.Status, out.Answer)
	}
	for deadline := time.Now().Add(10 * time.Second); procAlive(pid) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if procAlive(pid) {
		t.Errorf("the command's process %d outlived Abort", pid)
	}
	if len(results) == 0 || !strings.Contains(results[len(results)-1], "stopped by the test") {
		t.Errorf("the command's result does not say why it stopped: %q", results)
	}
	if _, err := os.Stat(filepath.Join(work, "after")); err == nil {
		t.Error("the next command ran")
	}
}
