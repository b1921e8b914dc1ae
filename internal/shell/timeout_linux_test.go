package shell

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/hosttest"

	mcpclient "github.com/mark3labs/mcp-go/client"
)

// needCgroup fails under CI, where the machine gives a cgroup per command,
// and skips elsewhere when it cannot.
func needCgroup(t *testing.T) {
	t.Helper()
	if _, why := cgroupBase(); why != nil {
		hosttest.Missing(t, "a cgroup for each command: %v", why)
	}
}

// timeoutCall starts args on c with a fake clock, waits for the command's
// first signal with its pid, and moves the clock past the timeout. It
// returns the held process and the call's result.
func timeoutCall(t *testing.T, c *mcpclient.Client, sig *signals, args map[string]any, timeout time.Duration) (*process, callResult) {
	t.Helper()
	clk := newFakeClock()
	args["timeout"] = timeout.Seconds()
	done := callAsync(withClock(context.Background(), clk), c, args)
	p := sig.nextPID(t)
	clk.waitArmed(t)
	clk.advance(timeout)
	return p, await(t, done)
}

// A timeout kills the shell's children too, and reports what the command
// had written.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	sig := newSignals(t)
	c := connect(t, Options{Dir: t.TempDir()})
	child, res := timeoutCall(t, c, sig, map[string]any{
		"command": `echo started; sleep 300 & echo $! > "$1"; wait`, "args": []string{sig.path},
	}, 5*time.Second)
	if !res.isErr {
		t.Fatalf("a timed-out command gave no error: %s", res.text)
	}
	for _, want := range []string{"timed out after 5s", "started"} {
		if !strings.Contains(res.text, want) {
			t.Errorf("error %q does not contain %q", res.text, want)
		}
	}
	if !child.endsWithin(waitLimit) {
		t.Errorf("the child sleep (pid %d) outlived the timeout", child.pid)
	}
}

// A child that left the command's process group with setsid, and one
// that double-forked out of it, die with the command on a timeout; a
// process of another command lives on.
func TestTimeoutKillsSetsidChildren(t *testing.T) {
	sig := newSignals(t)
	c := connect(t, Options{Dir: t.TempDir()})
	const detached = `sh -c 'echo $$ > "$1"; exec sleep 300' sh "$1" > /dev/null 2>&1 < /dev/null`

	// A bystander: started by another call, detached, still running.
	if _, text, isErr := run(t, c, map[string]any{"command": "setsid " + detached + " &", "args": []string{sig.path}}); isErr {
		t.Fatal(text)
	}
	other := sig.nextPID(t)

	clk := newFakeClock()
	done := callAsync(withClock(context.Background(), clk), c, map[string]any{
		"command": "setsid " + detached + " & (" + detached + " &); wait",
		"args":    []string{sig.path}, "timeout": 5,
	})
	children := []*process{sig.nextPID(t), sig.nextPID(t)}
	timeOut(t, clk, done)
	for _, p := range children {
		if !p.endsWithin(waitLimit) {
			t.Errorf("process %d outlived the command's timeout", p.pid)
		}
	}
	if other.endsWithin(0) {
		t.Errorf("process %d of another command was killed too", other.pid)
	}
}

// A child that left the process group and cleared its environment (so
// the tag cannot find it) dies with the command on a timeout: the
// command's cgroup holds it. The cgroup is gone afterwards. The same
// holds in the persistent shell.
func TestTimeoutKillsChildrenThatLeftEverything(t *testing.T) {
	needCgroup(t)
	const escape = `env -i setsid sh -c 'echo $$ > "$1"; exec sleep 300' sh "$1" > /dev/null 2>&1 < /dev/null &`
	t.Run("fresh", func(t *testing.T) {
		sig := newSignals(t)
		c := connect(t, Options{Dir: t.TempDir()})
		clk := newFakeClock()
		done := callAsync(withClock(context.Background(), clk), c, map[string]any{
			"command": escape + " wait", "args": []string{sig.path}, "timeout": 5})
		child := sig.nextPID(t)
		group := cgroupOf(t, child.pid)
		if !strings.HasPrefix(filepath.Base(group), "saucer-") {
			t.Errorf("the child is in cgroup %s, not a command's", group)
		}
		timeOut(t, clk, done)
		if !child.endsWithin(waitLimit) {
			t.Fatalf("process %d, detached with setsid and env -i, outlived the timeout", child.pid)
		}
		if _, err := os.Stat(group); strings.HasPrefix(filepath.Base(group), "saucer-") && !os.IsNotExist(err) {
			t.Errorf("the command's cgroup %s is still there (%v)", group, err)
		}
	})
	t.Run("persistent", func(t *testing.T) {
		sig := newSignals(t)
		c, _ := connectPersistent(t, Options{Dir: t.TempDir()})
		clk := newFakeClock()
		done := callAsync(withClock(context.Background(), clk), c, map[string]any{
			"command": "set -- " + shellQuote(sig.path) + "; " + escape + " wait", "timeout": 5})
		child := sig.nextPID(t)
		timeOut(t, clk, done)
		if !child.endsWithin(waitLimit) {
			t.Fatalf("process %d, detached with setsid and env -i, outlived the persistent shell's timeout", child.pid)
		}
	})
}

// cgroupOf is the directory of pid's cgroup v2.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	mount, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, rest)
		}
	}
	t.Fatalf("process %d is in no cgroup v2", pid)
	return ""
}

// A caller's deadline is reported as the caller's, not as the command's
// own timeout, and kills the command's children too.
func TestCallerDeadlineIsNotReportedAsOwnTimeout(t *testing.T) {
	sig := newSignals(t)
	r := &runner{opts: Options{Dir: t.TempDir()}.withDefaults()}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.execute(ctx, ExecuteInput{Command: `echo partial; sleep 300 & echo $! > "$1"; wait`, Args: []string{sig.path}})
		done <- err
	}()
	child := sig.nextPID(t)
	cancel(context.DeadlineExceeded)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "was stopped by its caller (context deadline exceeded)") || !strings.Contains(err.Error(), "partial") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the command outlived its caller's deadline")
	}
	if !child.endsWithin(waitLimit) {
		t.Errorf("the child (pid %d) outlived its caller's deadline", child.pid)
	}
}

// A background job that keeps the output open does not hold the call
// until it ends, and is not killed when the call ends.
func TestBackgroundJobDoesNotHoldTheCall(t *testing.T) {
	sig := newSignals(t)
	c := connect(t, Options{Dir: t.TempDir()})
	done := callAsync(context.Background(), c, map[string]any{"command": `sleep 300 & echo $! > "$1"; echo hi`, "args": []string{sig.path}})
	job := sig.nextPID(t)
	res := await(t, done)
	if res.isErr || res.out.Stdout != "hi\n" || res.out.ExitCode != 0 {
		t.Errorf("got %+v %q", res.out, res.text)
	}
	if job.endsWithin(0) {
		t.Error("the background job was killed with the end of the call")
	}
}
