//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/shell"
	"golang.org/x/sys/unix"
)

// longScript runs one shell command that notes its shell's PID, sleeps,
// and writes finished.txt at its end.
func longScript(t *testing.T) string {
	script := `replies:
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
	path := filepath.Join(t.TempDir(), "long.yaml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// goneWithin waits until kill(target, 0) finds nothing (a PID, or -PGID for a
// process group). The test process is the subreaper of what the killed
// device left: it reaps those that died (in target's group) as it waits.
func goneWithin(t *testing.T, target int, what string, logs func() string) {
	t.Helper()
	pgid := target
	if pgid < 0 {
		pgid = -pgid
	}
	if pgid <= 1 {
		// 0 and -1 name the caller's own group, or every process.
		t.Fatalf("%s: no process to wait for (target %d)", what, target)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		for {
			var ws syscall.WaitStatus
			if n, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil); n <= 0 || err != nil {
				break
			}
		}
		if err := syscall.Kill(target, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still runs 10s after the device was killed\n%s", what, logs())
		}
	}
}

// TestKilledDeviceLeavesNoCommand: a `saucer client` killed with SIGKILL
// in the middle of a shell command (its shell running `sleep`) leaves
// nothing of it running: its shell dies with it (PR_SET_PDEATHSIG), and,
// where commands get a cgroup of their own, what the shell started too
// (the device's watchdog kills the cgroup); the command never finishes.
// The test process makes itself the subreaper of what the device leaves,
// as a person's session manager is: an init that kills orphans (some
// containers' is) would otherwise hide what the device fails to stop.
func TestKilledDeviceLeavesNoCommand(t *testing.T) {
	bin := saucerBinary(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("cannot become a subreaper: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	// Asked before the device starts: the first command's cgroup made in
	// this process would sweep what dead Saucers left, the killed
	// device's included, which is not what this test looks at.
	perCommand := strings.Contains(shell.TimeoutKill(), "cgroup v2 per command")
	addr := freeAddr(t)
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	os.MkdirAll(work, 0o755)
	env := []string{"SAUCER_RUNS=" + filepath.Join(tmp, "runs"), "XDG_CACHE_HOME=" + tmp}
	srv := startSaucer(t, bin, env, "serve", "--model", "scripted:"+longScript(t), "--addr", addr, "--token", "k",
		"--store", "memory")
	waitHTTP(t, addr)
	cl := startSaucer(t, bin, env, "client", "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", work, "--journal", "off")
	logs := func() string { return "server:\n" + srv.out.String() + "\nclient:\n" + cl.out.String() }
	dispatchWhenRegistered(t, addr, "run the long command", logs)
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(work, "pid.txt"))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started\n%s", logs())
		}
	}
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Fatalf("the command's process group %d is not there before the kill: %v", pid, err)
	}
	cl.kill(t)
	goneWithin(t, pid, fmt.Sprintf("the command's shell (%d)", pid), logs)
	if perCommand {
		goneWithin(t, -pid, fmt.Sprintf("a process the command's shell started (group %d)", pid), logs)
	} else {
		t.Logf("no cgroup per command here (%s): only the shell is checked", shell.TimeoutKill())
	}
	if _, err := os.Stat(filepath.Join(work, "finished.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command finished after its device was killed (finished.txt: %v)", err)
	}
}
