//go:build linux

package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child that left the command's process group with setsid, and one
// that double-forked out of it, die with the command on a timeout; a
// process of another command, outside the tag, lives on.
func TestTimeoutKillsSetsidChildren(t *testing.T) {
	dir := t.TempDir()
	c := connect(t, Options{Dir: dir})

	// A bystander: started by another call, detached, still running.
	_, text, isErr := run(t, c, map[string]any{"command": "setsid sleep 30 > /dev/null 2>&1 < /dev/null & echo $! > other.pid"})
	if isErr {
		t.Fatal(text)
	}
	other := readPid(t, dir, "other.pid")
	t.Cleanup(func() { syscall.Kill(other, syscall.SIGKILL) })

	_, text, isErr = run(t, c, map[string]any{
		"command": "setsid sh -c 'echo $$ > setsid.pid; exec sleep 30' > /dev/null 2>&1 < /dev/null &" +
			" (sh -c 'echo $$ > double.pid; exec sleep 30' > /dev/null 2>&1 < /dev/null &);" +
			" while [ ! -s setsid.pid ] || [ ! -s double.pid ]; do sleep 0.05; done; echo ready; sleep 30",
		"timeout": 1,
	})
	if !isErr || !strings.Contains(text, "timed out after 1s") || !strings.Contains(text, "ready") {
		t.Fatalf("the command should have timed out after printing ready: %s", text)
	}
	for _, name := range []string{"setsid.pid", "double.pid"} {
		pid := readPid(t, dir, name)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		deadline := time.Now().Add(3 * time.Second)
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: process %d outlived the command's timeout", name, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if gone(other) {
		t.Errorf("process %d of another command was killed too", other)
	}
}

func readPid(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pid
}
