package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/owner"
)

// commandGroup is the cgroup of the running command that wrote child's
// PID: a command's own, or the test fails.
func commandGroup(t *testing.T, child *process) string {
	t.Helper()
	group := cgroupOf(t, child.pid)
	if !strings.HasPrefix(filepath.Base(group), groupPrefix+owner.Tag()+"-") {
		t.Fatalf("the command's child is in cgroup %s, not a command's of this process", group)
	}
	return group
}

func assertGone(t *testing.T, group, how string) {
	t.Helper()
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Errorf("the cgroup of a command %s is still there (%v)", how, err)
	}
}

// A command killed by its timeout, one its caller cancelled and the
// persistent shell killed by a timeout leave no cgroup behind. A caller
// that gives up on a call does not wait for the kill: the server's stop
// does, so that a process that exits after it (a second Ctrl-C) leaves
// none either.
func TestKilledCommandsLeaveNoCgroup(t *testing.T) {
	needCgroup(t)
	const cmd = `sleep 300 & echo $! > "$1"; wait`
	t.Run("timeout", func(t *testing.T) {
		sig := newSignals(t)
		c := connect(t, Options{Dir: t.TempDir()})
		clk := newFakeClock()
		done := callAsync(withClock(context.Background(), clk), c, map[string]any{"command": cmd, "args": []string{sig.path}, "timeout": 5})
		group := commandGroup(t, sig.nextPID(t))
		timeOut(t, clk, done)
		assertGone(t, group, "that timed out")
	})
	t.Run("cancelled", func(t *testing.T) {
		sig := newSignals(t)
		r := &runner{opts: Options{Dir: t.TempDir()}.withDefaults()}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := r.execute(ctx, ExecuteInput{Command: cmd, Args: []string{sig.path}})
			done <- err
		}()
		group := commandGroup(t, sig.nextPID(t))
		cancel()
		// The caller is gone; the server is stopped at once.
		r.settle()
		assertGone(t, group, "that was cancelled, once the server's stop returned")
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "was stopped by its caller") {
				t.Errorf("err = %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("the cancelled command did not return")
		}
	})
	t.Run("persistent", func(t *testing.T) {
		sig := newSignals(t)
		c, _ := connectPersistent(t, Options{Dir: t.TempDir()})
		clk := newFakeClock()
		done := callAsync(withClock(context.Background(), clk), c, map[string]any{
			"command": "set -- " + shellQuote(sig.path) + "; " + cmd, "timeout": 5})
		group := commandGroup(t, sig.nextPID(t))
		timeOut(t, clk, done)
		assertGone(t, group, "in the persistent shell that timed out")
	})
}

// The commands' cgroups of a Saucer that is gone are swept; those of a
// live one, and those whose name names no owner, are not.
func TestSweepRemovesDeadOwnersCgroups(t *testing.T) {
	needCgroup(t)
	base, _ := cgroupBase()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(base, groupPrefix+strconv.Itoa(gone.Process.Pid)+".1-"+newTag())
	live := filepath.Join(base, groupPrefix+owner.Tag()+"-"+newTag())
	odd := filepath.Join(base, groupPrefix+"someone-"+newTag())
	for _, d := range []string{dead, live, odd} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(d) })
	}
	sweepGroups(base)
	assertGone(t, dead, "whose Saucer is gone")
	for _, d := range []string{live, odd} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("sweep removed %s: %v", filepath.Base(d), err)
		}
	}
}
