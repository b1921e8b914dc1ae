package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
)

// fakeDevice records what it ran. Tool "block" waits for release (or its
// context), "fail" fails, anything else succeeds at once.
type fakeDevice struct {
	mu      sync.Mutex
	ran     []command.Command
	started chan string
	release chan struct{}
}

func newFakeDevice() *fakeDevice {
	return &fakeDevice{started: make(chan string, 100), release: make(chan struct{})}
}

func (d *fakeDevice) Execute(ctx context.Context, cmd command.Command) command.Result {
	d.mu.Lock()
	d.ran = append(d.ran, cmd)
	d.mu.Unlock()
	d.started <- cmd.ToolName
	switch cmd.ToolName {
	case "block":
		select {
		case <-d.release:
		case <-ctx.Done():
			return command.Failed(cmd.CallID, "interrupted")
		}
	case "fail":
		return command.Failed(cmd.CallID, "it failed")
	}
	return command.Succeeded(cmd.CallID, map[string]any{"ran": cmd.ToolName, "params": cmd.Parameters})
}

func (d *fakeDevice) Device() command.DeviceInfo {
	return command.DeviceInfo{Platform: "linux", Hostname: "fake", CPUCount: 1}
}

func (d *fakeDevice) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, c := range d.ran {
		out = append(out, c.ToolName)
	}
	return out
}

func (d *fakeDevice) waitStarted(t *testing.T, name string) {
	t.Helper()
	for {
		select {
		case got := <-d.started:
			if got == name {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s never started", name)
		}
	}
}

type runnerFunc func(ctx context.Context, request string) *agent.Outcome

func (f runnerFunc) Run(ctx context.Context, request string) *agent.Outcome { return f(ctx, request) }

// rounds is a session that runs fixed rounds through the dispatcher and
// finishes with the last result's payload as its answer (or fails).
func rounds(batches ...[]string) func(server.SessionSpec) (server.Runner, error) {
	return func(spec server.SessionSpec) (server.Runner, error) {
		return runnerFunc(func(ctx context.Context, request string) *agent.Outcome {
			var answer string
			for _, names := range batches {
				var cmds []command.Command
				for _, n := range names {
					cmds = append(cmds, command.Command{ToolName: n, ToolType: command.Action, Parameters: map[string]any{"req": request}})
				}
				res := spec.Dispatcher.Execute(ctx, cmds)
				for _, r := range res {
					if !r.OK() {
						return &agent.Outcome{Status: fsm.Fail, Answer: r.Error}
					}
					answer = string(r.Result)
				}
				if ctx.Err() != nil {
					return &agent.Outcome{Status: fsm.Fail, Cancelled: true}
				}
			}
			return &agent.Outcome{Status: fsm.Finish, Answer: answer}
		}), nil
	}
}

func dispatch(t *testing.T, f *fixture, client, request string) (server.DispatchResponse, int) {
	t.Helper()
	var d server.DispatchResponse
	code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: client, Request: request, TaskName: "t"}, &d)
	return d, code
}

// TestCancelReachesDevice: DELETE /api/tasks/{id} tells the device, which
// finishes the command it is running and skips the rest; the task ends
// cancelled with the lifecycle showing which command did what.
func TestCancelReachesDevice(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: rounds([]string{"block", "count", "count"}, []string{"never"})})
	dev := newFakeDevice()
	ended := hearEnds(t, f, "dev", dev)
	d, code := dispatch(t, f, "dev", "block then count")
	if code != 200 {
		t.Fatalf("dispatch %d", code)
	}
	dev.waitStarted(t, "block")
	var info server.TaskInfo
	done := make(chan int, 1)
	go func() { done <- f.api(t, "DELETE", "/api/tasks/"+d.TaskID, nil, &info) }()
	waitEnd(t, ended) // the task_end reached the device
	close(dev.release)
	select {
	case code = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("DELETE did not return")
	}
	if code != 200 || info.Status != server.StatusCancelled || !strings.Contains(info.Error, "cancelled by api-key:") {
		t.Fatalf("cancel: %d %s %q", code, info.Status, info.Error)
	}
	if got := strings.Join(dev.names(), ","); got != "block" {
		t.Errorf("the device ran %s; only block had started", got)
	}
	states := map[string]command.State{}
	for _, c := range info.Commands {
		states[c.ToolName] = c.State
	}
	if states["block"] != command.StateCompleted || states["count"] != command.StateCancelled || states["never"] != "" {
		t.Errorf("lifecycle %v", states)
	}
	if code := f.api(t, "DELETE", "/api/tasks/"+d.TaskID, nil, &map[string]any{}); code != http.StatusConflict {
		t.Errorf("cancelling an ended task: %d, want 409", code)
	}
}

// TestShutdownFailsRunningTasks: shutdown ends a running task as failed
// with the reason, and the device hears of it.
func TestShutdownFailsRunningTasks(t *testing.T) {
	s, err := server.New(server.Options{Token: token, NewSession: rounds([]string{"block", "count"}), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: s}
	hs := newHTTP(t, s)
	f.http, f.wsURL = hs, "ws"+strings.TrimPrefix(hs.URL, "http")+"/ws"
	dev := newFakeDevice()
	ended := hearEnds(t, f, "dev", dev)
	d, _ := dispatch(t, f, "dev", "x")
	dev.waitStarted(t, "block")
	go func() { <-ended; close(dev.release) }() // once the device knows
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx, "maintenance window"); err != nil {
		t.Fatal(err)
	}
	info, ok := s.Task(d.TaskID)
	if !ok || info.Status != server.StatusFailed || !strings.Contains(info.Error, "maintenance window") {
		t.Errorf("task after shutdown: %s %q", info.Status, info.Error)
	}
	if got := strings.Join(dev.names(), ","); got != "block" {
		t.Errorf("the device ran %s after shutdown began", got)
	}
	if _, code := dispatch(t, f, "dev", "y"); code != http.StatusServiceUnavailable && code != http.StatusNotFound {
		t.Errorf("dispatch after shutdown: %d", code)
	}
}

// TestLimits: one task per device and a server-wide bound, both answered
// with 429; an unknown device with 404.
func TestLimits(t *testing.T) {
	f := newFixture(t, server.Options{MaxTasks: 2, MaxTasksPerDevice: 1, NewSession: rounds([]string{"block"})})
	devs := map[string]*fakeDevice{}
	for _, id := range []string{"a", "b", "c"} {
		devs[id] = newFakeDevice()
		connect(t, f.wsURL, id, devs[id], nil)
	}
	if _, code := dispatch(t, f, "a", "1"); code != 200 {
		t.Fatalf("first: %d", code)
	}
	if _, code := dispatch(t, f, "a", "2"); code != http.StatusTooManyRequests {
		t.Errorf("second on the same device: %d, want 429", code)
	}
	if _, code := dispatch(t, f, "b", "3"); code != 200 {
		t.Errorf("another device: %d", code)
	}
	if _, code := dispatch(t, f, "c", "4"); code != http.StatusTooManyRequests {
		t.Errorf("over the server's limit: %d, want 429", code)
	}
	if _, code := dispatch(t, f, "ghost", "5"); code != http.StatusNotFound {
		t.Errorf("unknown device: %d, want 404", code)
	}
	close(devs["a"].release)
	close(devs["b"].release)
}

// TestManyDevicesTargeting: with several devices connected, a task runs
// on the one it names and no other.
func TestManyDevicesTargeting(t *testing.T) {
	f := newFixture(t, server.Options{MaxTasks: 10, NewSession: rounds([]string{"count"}, []string{"count"})})
	devs := make([]*fakeDevice, 6)
	for i := range devs {
		devs[i] = newFakeDevice()
		connect(t, f.wsURL, fmt.Sprintf("dev%d", i), devs[i], nil)
	}
	var ids []string
	for _, i := range []int{1, 4} {
		d, code := dispatch(t, f, fmt.Sprintf("dev%d", i), "hello")
		if code != 200 {
			t.Fatalf("dispatch: %d", code)
		}
		ids = append(ids, d.TaskID)
	}
	for _, id := range ids {
		if info := f.waitTask(t, id); info.Status != server.StatusCompleted {
			t.Errorf("task %s: %s %s", id, info.Status, info.Error)
		}
	}
	for i, d := range devs {
		n := len(d.names())
		if (i == 1 || i == 4) != (n == 2) || (i != 1 && i != 4 && n != 0) {
			t.Errorf("dev%d ran %d commands", i, n)
		}
	}
	var all struct{ Tasks []server.TaskInfo }
	f.api(t, "GET", "/api/tasks", nil, &all)
	if len(all.Tasks) != 2 {
		t.Errorf("%d tasks; a device's echo of a pushed task must join it, not start another", len(all.Tasks))
	}
}

// TestDeviceStartsTask: `saucer client --request`: the device asks, the
// server runs the agents against that device and sends task_end.
func TestDeviceStartsTask(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: rounds([]string{"count"})})
	dev := newFakeDevice()
	c := connect(t, f.wsURL, "dev", dev, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end, err := c.StartTask(ctx, "count for me", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != "completed" || !strings.Contains(string(end.Result), "count for me") {
		t.Errorf("task end %+v %s", end, end.Result)
	}
	info, ok := f.srv.Task(end.SessionID)
	if !ok || info.QueuedBy != "device:dev" || info.TaskName != "mine" || info.Status != server.StatusCompleted {
		t.Errorf("task %+v", info)
	}
}

// TestProgressShowsRunning: while a command runs, the device's heartbeats
// report it and the task shows it running, then completed (the test reads
// the task's record each time the server writes it).
func TestProgressShowsRunning(t *testing.T) {
	st := watchRecords(sqliteStore(t))
	f := newFixture(t, server.Options{NewSession: rounds([]string{"block"}), Store: st})
	dev := newFakeDevice()
	connect(t, f.wsURL, "dev", dev, func(o *remote.Options) { o.HeartbeatInterval = 10 * time.Millisecond })
	st.watch()
	d, _ := dispatch(t, f, "dev", "x")
	dev.waitStarted(t, "block")
	st.until(t, d.TaskID, func(info server.TaskInfo) bool {
		return len(info.Commands) == 1 && info.Commands[0].State == command.StateRunning
	})
	close(dev.release)
	if info := f.waitTask(t, d.TaskID); info.Commands[0].State != command.StateCompleted {
		t.Errorf("after release: %+v", info.Commands[0])
	}
}

// hearEnds connects dev as id and tells, on the channel it returns, of
// each task_end the device client hears.
func hearEnds(t *testing.T, f *fixture, id string, dev remote.Device) <-chan string {
	ended := make(chan string, 10)
	connect(t, f.wsURL, id, dev, func(o *remote.Options) {
		o.Logf = func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			t.Log(id + ": " + line)
			if strings.HasPrefix(line, "task ended") {
				ended <- line
			}
		}
	})
	return ended
}

func waitEnd(t *testing.T, ended <-chan string) string {
	t.Helper()
	select {
	case line := <-ended:
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("the device never heard of the task's end")
		return ""
	}
}
