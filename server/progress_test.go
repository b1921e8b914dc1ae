package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/strategy"
)

// waitingCommand prints three lines, then waits for the file "go" in its
// directory (the test makes it), then prints "finished" (written so that
// the command's own text does not say it: a script expects it in the
// output).
const waitingCommand = `echo line 1; echo line 2; echo line 3; while [ ! -e go ]; do sleep 0.05; done; printf 'fin%sed' ish`

// waitingScript runs waitingCommand in the shell app.
const waitingScript = `
replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "Run the build"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "` + waitingCommand + `"}
  - expect: "finished"
    tool_calls:
      - name: finish_task
        arguments: {result: "The build finished."}
  - tool_calls:
      - name: finish_task
        arguments: {result: "Built."}
`

// callIDs numbers the commands of a session (cmd-1, cmd-2, ...), so that
// a script can name one: the WebSocket dispatcher keeps a call id it is
// given.
type callIDs struct {
	next dispatcher.Dispatcher
	n    atomic.Int32
}

func (d *callIDs) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	cmds = slices.Clone(cmds)
	for i := range cmds {
		if cmds[i].CallID == "" {
			cmds[i].CallID = fmt.Sprintf("cmd-%d", d.n.Add(1))
		}
	}
	return d.next.Execute(ctx, cmds)
}

// progressSessions are scripted agents whose commands are numbered and
// left in the background after detach (0: waited for); observe sees
// their events too.
func progressSessions(t *testing.T, script string, detach time.Duration, observe func(agent.Event)) func(server.SessionSpec) (server.Runner, error) {
	t.Helper()
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return func(spec server.SessionSpec) (server.Runner, error) {
		s, err := scripted.Parse([]byte(script), "yaml")
		if err != nil {
			return nil, err
		}
		return agent.New(agent.Options{Model: scripted.New(*s), Dispatcher: &callIDs{next: spec.Dispatcher}, Prompts: set,
			AppDescriptions: spec.AppDescriptions, Observer: func(e agent.Event) { observe(e); spec.Observer(e) },
			Limits: strategy.Limits{RetryBackoff: time.Millisecond, DetachAfter: detach}})
	}
}

// A long shell command's output streams end to end: the real shell tool
// reports its latest lines (MCP progress notifications) to the device
// client, which sends them over a real WebSocket (AIP heartbeats with a
// progress field) to the server, whose dispatcher hands them to the
// server's hook (Options.OnProgress, GET /api/tasks/{id} "progress") and
// to the agents' observers as progress events of the step that ran the
// command. Once the command ends, its progress is no longer shown.
func TestProgressEndToEnd(t *testing.T) {
	type hooked struct {
		task string
		p    server.ProgressInfo
	}
	hook := make(chan hooked, 64)
	var mu sync.Mutex
	var events []agent.Event
	observe := func(e agent.Event) {
		if e.Kind == agent.EventProgress {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	}
	f := newFixture(t, server.Options{NewSession: progressSessions(t, waitingScript, 0, observe),
		OnProgress: func(task string, p server.ProgressInfo) {
			select {
			case hook <- hooked{task, p}:
			default:
			}
		}})
	dir := t.TempDir()
	connect(t, f.wsURL, "dev1", realDevice(t, dir), nil)
	d, code := dispatch(t, f, "dev1", "run the build")
	if code != 200 {
		t.Fatalf("dispatch: %d", code)
	}

	var got hooked
	timeout := time.After(20 * time.Second)
	for !slices.Contains(got.p.Lines, "line 3") {
		select {
		case got = <-hook:
		case <-timeout:
			t.Fatalf("no progress with line 3 reached the hook; last %+v", got)
		}
	}
	if got.task != d.TaskID || got.p.CallID == "" || got.p.Progress < 3 || got.p.UpdatedAt.IsZero() {
		t.Errorf("the hook got %+v", got)
	}
	var info server.TaskInfo
	f.api(t, "GET", "/api/tasks/"+d.TaskID, nil, &info)
	if len(info.Progress) != 1 || info.Progress[0].CallID != got.p.CallID || !slices.Contains(info.Progress[0].Lines, "line 3") {
		t.Errorf("the task shows progress %+v", info.Progress)
	}

	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	info = f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted {
		t.Fatalf("task ended %s: %s", info.Status, info.Error)
	}
	if len(info.Progress) != 0 {
		t.Errorf("an ended command's progress is still shown: %+v", info.Progress)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 {
		t.Fatal("the agents' observer saw no progress")
	}
	for _, e := range events {
		if e.Agent != "app:shell#1" || e.Step != 1 || e.Progress.Tool != "execute_command" || e.Progress.Namespace != "shell" ||
			e.Progress.CallID != got.p.CallID || !strings.Contains(e.Progress.Message, "line") {
			t.Errorf("progress event of %s step %d: %+v", e.Agent, e.Step, e.Progress)
			break
		}
	}
}

// backgroundScript leaves waitingCommand in the background, looks at it
// with command_status (waiting for its end), and finishes with its output.
const backgroundScript = `
replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "Run the build"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "` + waitingCommand + `"}
  - expect: "still running: "
    tool_calls:
      - name: command_status
        arguments: {call_id: cmd-4, wait: 60}
  - expect: "finished"
    tool_calls:
      - name: finish_task
        arguments: {result: "The build finished in the background."}
  - tool_calls:
      - name: finish_task
        arguments: {result: "Built."}
`

// A command that runs past the agent's detach_after on a remote device is
// left in the background there (cmd-4: the host's discovery is cmd-1 and
// 2, the app's cmd-3): the step gets its result at once (still
// running, with its latest output), the command stays running in the
// task's lifecycle, command_status reaches it over AIP beside the queue
// and waits for its end, and the device's report of that end completes it.
func TestBackgroundCommandOverAIP(t *testing.T) {
	dir := t.TempDir()
	var once sync.Once
	observe := func(e agent.Event) {
		// The device answered the step with the command still running:
		// now let it end.
		if e.Kind == agent.EventDispatch && len(e.Results) == 1 && e.Results[0].Running() {
			once.Do(func() {
				if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
					t.Error(err)
				}
			})
		}
	}
	f := newFixture(t, server.Options{NewSession: progressSessions(t, backgroundScript, 500*time.Millisecond, observe)})
	connect(t, f.wsURL, "dev1", realDevice(t, dir), nil)
	d, code := dispatch(t, f, "dev1", "run the build")
	if code != 200 {
		t.Fatalf("dispatch: %d", code)
	}
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted || info.Result != "Built." {
		t.Fatalf("task ended %s (%s): %q", info.Status, info.Error, info.Result)
	}
	states := map[string]dispatcher.CommandState{}
	for _, c := range info.Commands {
		states[c.CallID] = c
	}
	if c := states["cmd-4"]; c.ToolName != "execute_command" || c.State != command.StateCompleted {
		t.Errorf("the background command: %+v", c)
	}
	if c := states["cmd-5"]; c.ToolName != command.CommandStatus || c.State != command.StateCompleted {
		t.Errorf("command_status: %+v", c)
	}
}

// leftScript leaves waitingCommand in the background and ends the task.
const leftScript = `
replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "Start the build"}
  - tool_calls:
      - name: execute_command
        arguments: {command: "` + waitingCommand + `"}
  - expect: "still running: "
    tool_calls:
      - name: finish_task
        arguments: {result: "The build runs."}
  - tool_calls:
      - name: finish_task
        arguments: {result: "Started."}
`

// A task's end stops the commands it left in the background on its
// device (the device client cancels them when it hears task_end): none
// goes on unwatched.
func TestTaskEndStopsBackgroundCommands(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: progressSessions(t, leftScript, 300*time.Millisecond, func(agent.Event) {})})
	dir := t.TempDir()
	logs := make(chan string, 64)
	connect(t, f.wsURL, "dev1", realDevice(t, dir), func(o *remote.Options) {
		o.Logf = func(format string, args ...any) {
			select {
			case logs <- fmt.Sprintf(format, args...):
			default:
			}
		}
	})
	d, code := dispatch(t, f, "dev1", "start the build")
	if code != 200 {
		t.Fatalf("dispatch: %d", code)
	}
	if info := f.waitTask(t, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task ended %s: %s", info.Status, info.Error)
	}
	want := "ended: cancelled its background command cmd-4: ok"
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line := <-logs:
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("the device did not say %q", want)
		}
	}
}
