package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// waitOutput waits until a process has printed a line matching re, and
// returns its submatches.
func waitOutput(t *testing.T, p *proc, re *regexp.Regexp, logs func() string) []string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("never printed %q\n%s", re, logs())
		}
	}
}

// TestRestartOutlastsTheDevicesBackoff: the server is killed (SIGKILL)
// in the middle of a task, and started again on the same store only once
// the device's client has begun a reconnection wait (3-4s) longer than the
// server's away timeout (2s): the restarted server waits for the device
// (its away timeout plus the reconnection wait the device declared), the
// task resumes and completes, and each of its six commands ran once.
// Before, the away clock counted 2s from the restart and failed the task
// while the device was still waiting to try again.
func TestRestartOutlastsTheDevicesBackoff(t *testing.T) {
	bin := saucerBinary(t)
	addr := freeAddr(t)
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	os.MkdirAll(work, 0o755)
	serveCfg, clientCfg := filepath.Join(tmp, "serve.yaml"), filepath.Join(tmp, "client.yaml")
	os.WriteFile(serveCfg, []byte("remote:\n  away_timeout: 2s\n"), 0o644)
	os.WriteFile(clientCfg, []byte("remote:\n  max_backoff: 4s\n  register_timeout: 5s\n"), 0o644)
	env := []string{"SAUCER_RUNS=" + filepath.Join(tmp, "runs"), "XDG_CACHE_HOME=" + tmp}
	serveArgs := []string{"serve", "-c", serveCfg, "--model", "scripted:" + appendScript(t), "--addr", addr, "--token", "k",
		"--store", "sqlite:" + filepath.Join(tmp, "state.db")}
	srv := startSaucer(t, bin, env, serveArgs...)
	waitHTTP(t, addr)
	cl := startSaucer(t, bin, env, "client", "-c", clientCfg, "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", work,
		"--journal", filepath.Join(tmp, "box.journal"))
	logs := func() string { return "server:\n" + srv.out.String() + "\nclient:\n" + cl.out.String() }
	disp := dispatchWhenRegistered(t, addr, "append six lines", logs)
	logPath := filepath.Join(work, "log.txt")
	waitLines(t, logPath, 2, logs)
	srv.kill(t)
	before := srv.out.String()
	// The client retries with backoff: 0.25s doubling to its 4s cap, each
	// wait drawn from the upper half. Restart the server as soon as one
	// wait is 3s or more, longer than the 2s away timeout.
	waitOutput(t, cl, regexp.MustCompile(`retrying in [34]s`), logs)
	srv = startSaucer(t, bin, env, serveArgs...)
	logs = func() string {
		return "server before its restart:\n" + before + "\nserver:\n" + srv.out.String() + "\nclient:\n" + cl.out.String()
	}
	waitHTTP(t, addr)
	waitCompleted(t, addr, disp.TaskID, logs)
	b, _ := os.ReadFile(logPath)
	for i := 1; i <= 6; i++ {
		if n := strings.Count(string(b), fmt.Sprintf("L%d\n", i)); n != 1 {
			t.Errorf("line L%d is in log.txt %d times, want once\nlog.txt: %q\n%s", i, n, b, logs())
		}
	}
	if !strings.Contains(srv.out.String(), "wait for it to come back (for 11s)") {
		t.Errorf("the restarted server did not wait 11s (2s, plus the client's 4s backoff cap and 5s registration timeout)\n%s", logs())
	}
}
