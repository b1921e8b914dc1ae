package evals_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/sandboxtest"
)

// oneCommand is a scripted model that has the shell app run line, then
// finishes.
func oneCommand(t *testing.T, dir, name, line string) string {
	t.Helper()
	return scriptSpec(t, dir, name, fmt.Sprintf(`replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "run it"}}]
  - tool_calls: [{name: execute_command, arguments: {command: %q}}]
  - tool_calls: [{name: finish_task, arguments: {result: "ran it"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "ran it"}}]
`, line))
}

// TestSandboxedTrialsThatMisbehave: trials that fork-bomb, fill the disk,
// leave a daemon, hang in a check or need root end with a clear outcome,
// the other trials go on, and the host is as it was.
func TestSandboxedTrialsThatMisbehave(t *testing.T) {
	sandboxtest.Require(t)
	dir := t.TempDir()
	passwd, _ := os.ReadFile("/etc/passwd")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	before, _ := filepath.Glob("/sys/fs/cgroup/*/saucer-saucer-sandbox-*") // others' (a killed process's are never removed)

	suite := fmt.Sprintf(`name: misbehaving
sandbox: true
cases:
  - id: fork-bomb
    model: %s
    task: bomb
    checks: [{state: {run: "echo alive", output: "alive"}}]
  - id: disk-fill
    model: %s
    task: fill
    checks: [{state: {run: "test -s /fill && ! test -e /fill-done"}}]
  - id: daemon
    model: %s
    task: daemon
    checks: [{state: {run: "pgrep -f 'sleep 987655'"}}]
  - id: hanging-check
    model: %s
    task: hang
    checks: [{state: {run: "sleep 1000"}}]
  - id: root-inside
    model: %s
    task: add a user
    labels: [needs-root]
    checks: [{state: {run: "id -u saucer-eval-user"}}]
  - id: root-on-the-plain-device
    model: %s
    task: add a user
    labels: [needs-root]
    device: {sandbox: false}
    checks: [{state: {run: "id -u saucer-eval-user"}}]
`,
		oneCommand(t, dir, "bomb", "b(){ b|b& }; b; sleep 1; echo after"),
		oneCommand(t, dir, "fill", "dd if=/dev/zero of=/fill bs=1M count=200 && touch /fill-done"),
		oneCommand(t, dir, "daemon", "setsid sleep 987655 >/dev/null 2>&1 < /dev/null & echo started"),
		oneCommand(t, dir, "hang", "echo hi"),
		oneCommand(t, dir, "user", "useradd saucer-eval-user"),
		oneCommand(t, dir, "user2", "useradd saucer-eval-user"))
	file := filepath.Join(dir, "suite.yaml")
	os.WriteFile(file, []byte(suite), 0o644)

	cfg := config.Default()
	cfg.Tools.Shell.Timeout = config.Duration(3e9)
	cfg.Sandbox.PIDs = 64
	cfg.Sandbox.Disk = 32 << 20
	rep, err := runSuite(t, file, filepath.Join(dir, "results"), evals.Options{Config: cfg, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		success bool
		detail  string
	}{
		"fork-bomb":                {true, ""}, // or its check cannot start, below
		"disk-fill":                {true, ""},
		"daemon":                   {true, ""},
		"hanging-check":            {false, "timed out"},
		"root-inside":              {true, ""},
		"root-on-the-plain-device": {false, "runs only in a sandbox"},
	}
	for _, c := range rep.Cases {
		w, tr := want[c.ID], c.Trials[0]
		if c.ID == "fork-bomb" && !tr.Success {
			// Where the bomb still holds every process the sandbox may
			// have, the check cannot start, and says so; or its shell
			// retries the fork until its time is up (on a loaded host).
			w = struct {
				success bool
				detail  string
			}{false, "Resource temporarily unavailable"}
			if strings.Contains(tr.Detail, "timed out after") {
				w.detail = "timed out after"
			}
		}
		if tr.Success != w.success || !strings.Contains(tr.Detail+fmt.Sprint(tr.Checks), w.detail) {
			t.Errorf("%s: success %v (%s: %s %v), want %v with %q", c.ID, tr.Success, tr.Failure, tr.Detail, tr.Checks, w.success, w.detail)
		}
	}
	if len(rep.Cases) != len(want) {
		t.Errorf("%d cases reported, want %d", len(rep.Cases), len(want))
	}

	// The host is as it was.
	if after, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(after, passwd) {
		t.Error("a user was added on the host")
	}
	// (Other processes mount too, a desktop's document portal say, also
	// under a desktop of Saucer's own: only mounts of a sandbox's making
	// count, and a sandbox has no /dev/fuse to make a FUSE mount.)
	after, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(after), "\n") {
		_, fs, _ := strings.Cut(line, " - ")
		if !bytes.Contains(mounts, []byte(line)) && !strings.HasPrefix(fs, "fuse") && (strings.Contains(line, "saucer") || strings.HasPrefix(fs, "overlay ")) {
			t.Errorf("a sandbox's mount is left on the host: %s", line)
		}
	}
	for _, p := range []string{"/fill", "/fill-done"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, _ := os.ReadFile(p); bytes.Equal(b, []byte("sleep\x00987655\x00")) {
			t.Errorf("the daemon outlived its trial: %s", p)
		}
	}
	// Other processes (other packages' tests) may be running sandboxes
	// right now: a cgroup that was there before, or that holds processes
	// not of this test's making, is theirs; one is left behind only if it
	// is still there after they would be done.
	left, _ := filepath.Glob("/sys/fs/cgroup/*/saucer-saucer-sandbox-*")
	left = slices.DeleteFunc(left, func(p string) bool { return slices.Contains(before, p) })
	for deadline := time.Now().Add(15 * time.Second); len(left) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var still []string
		for _, p := range left {
			if _, err := os.Stat(p); err == nil && !foreignCgroup(p) {
				still = append(still, p)
			}
		}
		left = still
	}
	if len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

// foreignCgroup reports whether the cgroup at dir holds a process that
// is not this process's descendant: another process's sandbox.
func foreignCgroup(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 && !descendant(pid) {
			return true
		}
	}
	return false
}

// descendant reports whether pid is this process or one of its
// descendants, by its parents in /proc.
func descendant(pid int) bool {
	for range 64 {
		if pid == os.Getpid() {
			return true
		}
		if pid <= 1 {
			return false
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			return false
		}
		if pid, err = strconv.Atoi(fields[1]); err != nil {
			return false
		}
	}
	return false
}
