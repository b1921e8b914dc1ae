package dispatcher_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/files"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/tools"
)

// newClient connects a real device client to real shell and files servers.
func newClient(t testing.TB) *client.Client {
	t.Helper()
	dir := t.TempDir()
	fs, err := files.New(files.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(context.Background(), []client.Server{
		{Namespace: "shell", MCP: shell.New(shell.Options{Dir: dir})},
		{Namespace: "files", MCP: fs},
	}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func shellCmd(line string) command.Command {
	return command.Command{ToolName: "execute_command", ToolType: command.Action, Parameters: map[string]any{"command": line}}
}

func stdout(t *testing.T, r command.Result) string {
	t.Helper()
	var out struct{ Stdout string }
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	return out.Stdout
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestCallIDsAndOrder(t *testing.T) {
	d := dispatcher.NewLocal(newClient(t), dispatcher.LocalOptions{})
	cmds := []command.Command{shellCmd("echo one"), shellCmd("echo two"), shellCmd("echo three")}
	cmds[1].CallID = "mine"
	results := d.Execute(context.Background(), cmds)
	if len(results) != 3 {
		t.Fatalf("%d results for 3 commands", len(results))
	}
	seen := map[string]bool{}
	for i, want := range []string{"one\n", "two\n", "three\n"} {
		r := results[i]
		if !r.OK() || stdout(t, r) != want || r.Namespace != "shell" {
			t.Errorf("result %d: %+v", i, r)
		}
		if seen[r.CallID] {
			t.Errorf("call id %q given twice", r.CallID)
		}
		seen[r.CallID] = true
	}
	if results[1].CallID != "mine" {
		t.Errorf("an existing call id was replaced: %q", results[1].CallID)
	}
	for _, i := range []int{0, 2} {
		if !uuidV4.MatchString(results[i].CallID) {
			t.Errorf("generated call id %q is not a UUIDv4", results[i].CallID)
		}
	}
	if cmds[0].CallID != "" {
		t.Error("the caller's commands were modified")
	}
}

func TestCustomIDs(t *testing.T) {
	n := 0
	d := dispatcher.NewLocal(newClient(t), dispatcher.LocalOptions{NewID: func() string { n++; return "id-" + string(rune('0'+n)) }})
	results := d.Execute(context.Background(), []command.Command{{}, {}})
	if results[0].CallID != "id-1" || results[1].CallID != "id-2" || !results[0].OK() {
		t.Errorf("%+v", results)
	}
}

func TestTimeout(t *testing.T) {
	d := dispatcher.NewLocal(newClient(t), dispatcher.LocalOptions{Timeout: 200 * time.Millisecond})
	start := time.Now()
	results := d.Execute(context.Background(), []command.Command{shellCmd("sleep 120"), shellCmd("echo never")})
	elapsed := time.Since(start)
	if elapsed < 200*time.Millisecond || elapsed > 60*time.Second {
		t.Errorf("took %s with a 200ms timeout", elapsed)
	}
	if r := results[0]; r.Status != command.Failure || !strings.Contains(r.Error, "timed out after 200ms") {
		t.Errorf("first: %+v", r)
	}
	if r := results[1]; r.Status != command.Skipped {
		t.Errorf("second ran after a timeout: %+v", r)
	}
}

// ignoring is an executor that does not look at its context at all.
type ignoring struct{ sleep time.Duration }

func (e ignoring) Execute(ctx context.Context, cmd command.Command) command.Result {
	time.Sleep(e.sleep)
	return command.Succeeded(cmd.CallID, "late")
}

func TestTimeoutHoldsWhenExecutorIgnoresContext(t *testing.T) {
	d := dispatcher.NewLocal(ignoring{sleep: 2 * time.Minute}, dispatcher.LocalOptions{Timeout: 100 * time.Millisecond})
	start := time.Now()
	r := d.Execute(context.Background(), []command.Command{{ToolName: "slow", CallID: "c1"}})[0]
	if elapsed := time.Since(start); elapsed > time.Minute {
		t.Errorf("took %s with a 100ms timeout", elapsed)
	}
	if r.Status != command.Failure || r.Error != "slow timed out after 100ms" || r.CallID != "c1" {
		t.Errorf("%+v", r)
	}
}

// gate holds the first command it is given until the test opens it,
// after telling the test that it started; then the real executor runs it.
type gate struct {
	inner   dispatcher.Executor
	started chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (g *gate) Execute(ctx context.Context, cmd command.Command) command.Result {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.started)
		<-g.open
	}
	return g.inner.Execute(ctx, cmd)
}

func TestCancelBetweenCommands(t *testing.T) {
	g := &gate{inner: newClient(t), started: make(chan struct{}), open: make(chan struct{})}
	d := dispatcher.NewLocal(g, dispatcher.LocalOptions{})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-g.started // the first command is running
		cancel(errors.New("the user pressed stop"))
		close(g.open)
	}()
	results := d.Execute(ctx, []command.Command{
		shellCmd("sleep 0.1; echo first done"), shellCmd("echo second"), shellCmd("echo third"),
	})
	if r := results[0]; !r.OK() || stdout(t, r) != "first done\n" {
		t.Errorf("the running command did not complete: %+v", r)
	}
	for _, r := range results[1:] {
		if r.Status != command.Skipped || r.Error != "cancelled before it ran: the user pressed stop" || r.CallID == "" {
			t.Errorf("later command: %+v", r)
		}
	}
}

func TestAlreadyCancelled(t *testing.T) {
	d := dispatcher.NewLocal(newClient(t), dispatcher.LocalOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range d.Execute(ctx, []command.Command{shellCmd("echo a"), shellCmd("echo b")}) {
		if r.Status != command.Skipped || r.Error != "cancelled before it ran: context canceled" {
			t.Errorf("%+v", r)
		}
	}
}

func TestFailureSkipsTheRest(t *testing.T) {
	d := dispatcher.NewLocal(newClient(t), dispatcher.LocalOptions{})
	results := d.Execute(context.Background(), []command.Command{
		shellCmd("exit 1"), // a non-zero exit is data, not a failure
		{ToolName: "read_file", Parameters: map[string]any{"path": "missing.txt"}},
		shellCmd("echo after"),
		{ToolName: "list_dir"},
	})
	statuses := []command.ResultStatus{}
	for _, r := range results {
		statuses = append(statuses, r.Status)
	}
	if want := []command.ResultStatus{command.Success, command.Failure, command.Skipped, command.Skipped}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want %v (%+v)", statuses, want, results)
	}
	if !strings.Contains(results[1].Error, "missing.txt does not exist") {
		t.Errorf("failure: %q", results[1].Error)
	}
	want := "skipped: an earlier command (call_id " + results[1].CallID + ") failed"
	for _, r := range results[2:] {
		if r.Error != want {
			t.Errorf("skipped error %q, want %q", r.Error, want)
		}
	}
}

type panicking struct{}

func (panicking) Execute(ctx context.Context, cmd command.Command) command.Result {
	panic("bad executor")
}

type forgetful struct{}

func (forgetful) Execute(ctx context.Context, cmd command.Command) command.Result {
	return command.Result{Status: command.Success}
}

func TestExecutorMistakesStayResults(t *testing.T) {
	r := dispatcher.NewLocal(panicking{}, dispatcher.LocalOptions{}).Execute(context.Background(), []command.Command{{ToolName: "x", CallID: "1"}})[0]
	if r.Status != command.Failure || !strings.Contains(r.Error, "bad executor") || r.CallID != "1" {
		t.Errorf("panic: %+v", r)
	}
	r = dispatcher.NewLocal(forgetful{}, dispatcher.LocalOptions{}).Execute(context.Background(), []command.Command{{ToolName: "x", CallID: "2", Namespace: "n"}})[0]
	if r.CallID != "2" || r.Namespace != "n" {
		t.Errorf("lost call id: %+v", r)
	}
	if got := dispatcher.NewLocal(forgetful{}, dispatcher.LocalOptions{}).Execute(context.Background(), nil); len(got) != 0 {
		t.Errorf("no commands gave %d results", len(got))
	}
}

func BenchmarkLocalExecute(b *testing.B) {
	s := &tools.Server{Name: "bench"}
	s.Add(tools.New("noop", "does nothing", tools.Annotations{}, func(ctx context.Context, in struct{}) (any, error) {
		return map[string]bool{"ok": true}, nil
	}))
	c, err := client.New(context.Background(), []client.Server{{Namespace: "bench", MCP: s}}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	d := dispatcher.NewLocal(c, dispatcher.LocalOptions{})
	cmds := []command.Command{{ToolName: "noop", Namespace: "bench"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := d.Execute(ctx, cmds)[0]; !r.OK() {
			b.Fatal(r.Error)
		}
	}
}

// A command left running in the background stops the batch as a failure
// would: its result says it runs, the rest are skipped; command_status and
// cancel_command reach it through the same dispatcher.
func TestBackgroundCommandSkipsTheRest(t *testing.T) {
	d := dispatcher.NewLocal(newClient(t), dispatcher.LocalOptions{})
	started := make(chan struct{})
	var once sync.Once
	ctx := command.WithDetach(context.Background(), 100*time.Millisecond)
	ctx = command.WithProgress(ctx, func(p command.Progress) {
		if strings.Contains(p.Message, "started") {
			once.Do(func() { close(started) })
		}
	})
	results := d.Execute(ctx, []command.Command{shellCmd("echo started; sleep 30"), shellCmd("echo after")})
	if !results[0].Running() {
		t.Fatalf("long command: %+v", results[0])
	}
	want := "skipped: an earlier command (call_id " + results[0].CallID + ") is still running in the background"
	if results[1].Status != command.Skipped || results[1].Error != want {
		t.Errorf("the next command: %+v, want %q", results[1], want)
	}
	// Its output has reached the shell's stream (under load, later than
	// the detach).
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the background command never reported its output")
	}
	res := d.Execute(context.Background(), []command.Command{{ToolName: command.CancelCommand, Parameters: map[string]any{"call_id": results[0].CallID}}})
	var s command.Status
	if err := json.Unmarshal(res[0].Result, &s); err != nil || s.State != command.StateCancelled || s.Result == nil ||
		!strings.Contains(s.Result.Error, "was stopped by its caller") || !strings.Contains(s.Result.Error, "started") {
		t.Errorf("cancel: %+v %+v (%v)", res[0], s, err)
	}
}
