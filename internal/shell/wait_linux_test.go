package shell

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"
)

// These helpers let the tests wait on events rather than on time: a
// command says it got somewhere through a named pipe, a process's end is
// seen on its pidfd, and timeouts fire when the test moves a fake clock.
// Every wait still has a deadline (waitLimit), so that a broken build
// fails instead of hanging.
const waitLimit = 60 * time.Second

// signals is a named pipe through which commands tell the test, a line at
// a time, that they got somewhere.
type signals struct {
	path string
	f    *os.File
	r    *bufio.Reader
}

func newSignals(t *testing.T) *signals {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signals")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read and write: opening never waits, the commands' opens for
	// writing never wait, and a read waits for a line rather than seeing
	// the end when no command holds the pipe.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &signals{path: path, f: f, r: bufio.NewReader(f)}
}

// next waits for the next line.
func (s *signals) next(t *testing.T) string {
	t.Helper()
	s.f.SetReadDeadline(time.Now().Add(waitLimit))
	line, err := s.r.ReadString('\n')
	if err != nil {
		t.Fatalf("no signal from the command: %v", err)
	}
	return strings.TrimSpace(line)
}

// nextPID waits for a line that is a process id, and holds the process.
func (s *signals) nextPID(t *testing.T) *process {
	t.Helper()
	line := s.next(t)
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("signal %q is not a process id", line)
	}
	return hold(t, pid)
}

// process is a process held by its pidfd, opened while it is known to
// run: its end can be waited for, and signals reach it and no other.
type process struct {
	pid, fd int
}

func hold(t *testing.T, pid int) *process {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("not a process id: %d", pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	p := &process{pid: pid, fd: fd}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	})
	return p
}

// endsWithin reports whether the process ends within d (0: has ended).
func (p *process) endsWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(max(time.Until(deadline), 0).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// kill sends SIGKILL to the process itself.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers map[*fakeTimer]bool
	armed  chan struct{} // a value each time a timer is set
}

type fakeTimer struct {
	at time.Duration
	f  func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{timers: map[*fakeTimer]bool{}, armed: make(chan struct{}, 16)}
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	tm := &fakeTimer{at: c.now + d, f: f}
	c.timers[tm] = true
	c.mu.Unlock()
	c.armed <- struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := c.timers[tm]
		delete(c.timers, tm)
		return was
	}
}

// waitArmed waits until a timer has been set.
func (c *fakeClock) waitArmed(t *testing.T) {
	t.Helper()
	select {
	case <-c.armed:
	case <-time.After(waitLimit):
		t.Fatal("no timeout was set")
	}
}

// advance moves the clock by d and fires the timers that are due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []*fakeTimer
	for tm := range c.timers {
		if tm.at <= c.now {
			due = append(due, tm)
			delete(c.timers, tm)
		}
	}
	c.mu.Unlock()
	for _, tm := range due {
		tm.f()
	}
}

// timeOut moves clk past the 5s timeout of the call that done waits for,
// once its timer is set, and checks that the call ended as timed out.
func timeOut(t *testing.T, clk *fakeClock, done <-chan callResult) {
	t.Helper()
	clk.waitArmed(t)
	clk.advance(5 * time.Second)
	if res := await(t, done); !res.isErr || !strings.Contains(res.text, "timed out after 5s") {
		t.Fatalf("the command should have timed out: %s", res.text)
	}
}

// callResult is what a call in the background got.
type callResult struct {
	out   ExecuteOutput
	text  string
	isErr bool
	err   error
}

// callAsync calls execute_command on its own goroutine with ctx.
func callAsync(ctx context.Context, c *mcpclient.Client, args map[string]any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_command", Arguments: args}})
		if err != nil {
			ch <- callResult{err: err}
			return
		}
		var r callResult
		for _, ct := range res.Content {
			if tc, ok := mcp.AsTextContent(ct); ok {
				r.text += tc.Text
			}
		}
		r.isErr = res.IsError
		if !r.isErr {
			r.err = json.Unmarshal([]byte(r.text), &r.out)
		}
		ch <- r
	}()
	return ch
}

// await waits for a call's result.
func await(t *testing.T, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	case <-time.After(waitLimit):
		t.Fatal("the call did not end")
		return callResult{}
	}
}
