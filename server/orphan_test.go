package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
)

// cutProxy is a TCP proxy on loopback between a device and its server,
// which a test cuts (every connection closed, new ones refused) and
// restores on the same port: a network outage with both ends alive.
type cutProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{target: target, addr: ln.Addr().String(), ln: ln}
	go p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// cut closes every connection and refuses new ones.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore listens again on the same port.
func (p *cutProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("the proxy cannot listen on %s again: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.serve(ln)
}

// orphanScript runs one long shell command that notes its shell's PID
// first and writes finished.txt at its end.
const orphanScript = `
replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "run the long command"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "echo $$ > pid.txt; sleep 30; echo finished > finished.txt"}
  - tool_calls:
      - name: finish_task
        arguments: {result: "ran"}
  - tool_calls:
      - name: finish_task
        arguments: {result: "ran"}
`

// waitFile waits for a file to hold a line, and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGroupGone waits until no process is left in process group pgid.
func waitGroupGone(t *testing.T, pgid int, why string) {
	t.Helper()
	if pgid <= 1 {
		t.Fatalf("no process group to wait for (%d): %s", pgid, why) // -0 or -1 would name the test's own group, or every process
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still runs 10s later: %s", pgid, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReturningDeviceStopsWhatWasGivenUp: a device cut off from its
// server (both alive) for longer than the away timeout plus the
// reconnection wait it declared has its task failed; when it comes back,
// the task_end it gets stops the task's command still running (its
// whole process group), which never finishes, and the results it then
// sends for that round are refused, not taken as the task's.
func TestReturningDeviceStopsWhatWasGivenUp(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: scriptedSessions(t, orphanScript), AwayTimeout: 300 * time.Millisecond})
	p := newCutProxy(t, strings.TrimPrefix(f.http.URL, "http://"))
	dir := t.TempDir()
	devLogs := &logWatch{t: t, wake: make(chan struct{})}
	connect(t, "ws://"+p.addr+"/ws", "far", realDevice(t, dir), func(o *remote.Options) {
		o.RegisterTimeout = 200 * time.Millisecond
		o.Logf = devLogs.logf
	})
	d, err := f.srv.Dispatch("far", "run the long command", "t", "test")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "pid.txt")))
	if err != nil || pid <= 1 {
		t.Fatalf("the command's pid %d: %v", pid, err)
	}
	p.cut()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := f.srv.Wait(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	// 300ms, plus the client's 50ms backoff cap and its 200ms
	// registration timeout.
	const gone = "device far did not come back within 550ms"
	if info.Status != server.StatusFailed || info.Error != gone {
		t.Fatalf("task %s %q; want failed: %s", info.Status, info.Error, gone)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the command's shell (%d) ended while the device was cut off (%v): the test shows nothing", pid, err)
	}

	p.restore(t)
	waitGroupGone(t, pid, "the device that came back did not stop the command of the task the server gave up on")
	devLogs.waitFor(t, 1, "given up on by the server: its command in progress is stopped")
	if _, err := os.Stat(filepath.Join(dir, "finished.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stopped command finished anyway (finished.txt: %v)", err)
	}
	devLogs.waitFor(t, 1, "command_results not accepted")
	after, _ := f.srv.Task(d.ID)
	if after.Status != server.StatusFailed || after.Error != gone || after.Result != info.Result {
		t.Errorf("after the late results: task %s %q %q; want it as it ended: failed %q %q", after.Status, after.Error, after.Result, gone, info.Result)
	}
}
