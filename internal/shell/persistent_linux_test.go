package shell

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
)

// connectPersistent starts a persistent shell server and a client to it;
// stop is called at the end of the test.
func connectPersistent(t *testing.T, opts Options) (*mcpclient.Client, func() error) {
	t.Helper()
	opts.Persistent = true
	srv, stop, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	return inProcessClient(t, srv), stop
}

func mustRun(t *testing.T, c *mcpclient.Client, args map[string]any) ExecuteOutput {
	t.Helper()
	out, text, isErr := run(t, c, args)
	if isErr {
		t.Fatalf("%v: %s", args, text)
	}
	return out
}

func TestPersistentShellKeepsState(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	c, _ := connectPersistent(t, Options{Dir: dir})
	mustRun(t, c, map[string]any{"command": "cd sub; export GREETING=hello; LOCAL=kept; shout() { echo \"$1!\"; }"})
	out := mustRun(t, c, map[string]any{"command": "pwd; echo $GREETING $LOCAL; shout hey"})
	if want := filepath.Join(dir, "sub") + "\nhello kept\nhey!\n"; out.Stdout != want {
		t.Errorf("state lost: %q, want %q", out.Stdout, want)
	}
	// Output is exact: with and without a final newline, stderr apart,
	// the exit status of the command.
	out = mustRun(t, c, map[string]any{"command": "printf abc; echo oops >&2; false"})
	if out.Stdout != "abc" || out.Stderr != "oops\n" || out.ExitCode != 1 {
		t.Errorf("%+v", out)
	}
	// A multi-line script with a heredoc, as the benchmark's scripts are.
	out = mustRun(t, c, map[string]any{"command": "\n#!/bin/bash\ncat <<'EOT'\nline one\nEOT\nexit_code_of_nothing=0"})
	if out.Stdout != "line one\n" || out.ExitCode != 0 {
		t.Errorf("%+v", out)
	}
	// A fresh call does not see the shell's state, and gets its args as
	// they are.
	out = mustRun(t, c, map[string]any{"command": "printf '%s|' \"$GREETING\" \"$@\"; pwd", "fresh": true, "args": []string{"a b", "$(id)"}})
	if out.Stdout != "|a b|$(id)|"+dir+"\n" {
		t.Errorf("fresh: %q", out.Stdout)
	}
	for _, args := range []map[string]any{{"command": "pwd", "cwd": "sub"}, {"command": "pwd", "env": map[string]any{"A": "1"}}, {"command": "pwd", "args": []string{"x"}}} {
		if _, text, isErr := run(t, c, args); !isErr || !strings.Contains(text, "persistent shell") {
			t.Errorf("%v: %s", args, text)
		}
	}
}

// A command that starts another shell (su - user does) hands the session
// to it: the next commands run there, until it exits.
func TestPersistentShellFollowsANestedShell(t *testing.T) {
	c, _ := connectPersistent(t, Options{Dir: t.TempDir()})
	base := strings.TrimSpace(mustRun(t, c, map[string]any{"command": "echo $SHLVL"}).Stdout)
	mustRun(t, c, map[string]any{"command": "export OUTER=1; bash"})
	if got := strings.TrimSpace(mustRun(t, c, map[string]any{"command": "echo $SHLVL $OUTER"}).Stdout); got != inc(base)+" 1" {
		t.Errorf("in the nested shell: %q (outer level %s)", got, base)
	}
	out := mustRun(t, c, map[string]any{"command": "exit 4"})
	if out.ExitCode != 4 {
		t.Errorf("leaving the nested shell: %+v", out)
	}
	if got := strings.TrimSpace(mustRun(t, c, map[string]any{"command": "echo $SHLVL"}).Stdout); got != base {
		t.Errorf("back in the first shell: %q, want %s", got, base)
	}
}

func inc(s string) string {
	n, _ := strconv.Atoi(s)
	return strconv.Itoa(n + 1)
}

// bgJob starts a background job in the persistent shell and holds it.
func bgJob(t *testing.T, c *mcpclient.Client) *process {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(mustRun(t, c, map[string]any{"command": "sleep 300 >/dev/null 2>&1 & echo $!"}).Stdout))
	if err != nil {
		t.Fatal(err)
	}
	return hold(t, pid) // fails if it is not running
}

func TestPersistentShellJobsExitAndTimeout(t *testing.T) {
	c, stop := connectPersistent(t, Options{Dir: t.TempDir()})
	// A background job outlives its call.
	job := bgJob(t, c)
	mustRun(t, c, map[string]any{"command": "true"})
	if job.endsWithin(0) {
		t.Fatal("the background job died with the next call")
	}
	// exit ends the shell with its jobs; the next call gets a new one.
	mustRun(t, c, map[string]any{"command": "export GONE=1"})
	out := mustRun(t, c, map[string]any{"command": "echo bye; exit 3"})
	if out.ExitCode != 3 || out.Stdout != "bye\n" || !strings.Contains(out.Stderr, "the shell exited") {
		t.Errorf("exit: %+v", out)
	}
	if got := mustRun(t, c, map[string]any{"command": "echo \"[$GONE]\""}).Stdout; got != "[]\n" {
		t.Errorf("after exit: %q", got)
	}
	if !job.endsWithin(waitLimit) {
		t.Error("the shell's exit left its background job running")
	}
	// A timeout kills the shell and its jobs; the next call works.
	job2 := bgJob(t, c)
	sig := newSignals(t)
	clk := newFakeClock()
	// Without the kill, the command would end normally, not as an error.
	done := callAsync(withClock(context.Background(), clk), c, map[string]any{
		"command": "echo started; echo ready > " + shellQuote(sig.path) + "; sleep 300", "timeout": 5})
	sig.next(t)
	clk.waitArmed(t)
	clk.advance(5 * time.Second)
	if res := await(t, done); !res.isErr || !strings.Contains(res.text, "timed out after 5s") || !strings.Contains(res.text, "started") {
		t.Fatalf("timeout: %s", res.text)
	}
	if !job2.endsWithin(waitLimit) {
		t.Error("a timeout left the shell's background job running")
	}
	if got := mustRun(t, c, map[string]any{"command": "echo again"}).Stdout; got != "again\n" {
		t.Errorf("after a timeout: %q", got)
	}
	// A shell killed from outside between calls is replaced.
	shellPID, _ := strconv.Atoi(strings.TrimSpace(mustRun(t, c, map[string]any{"command": "echo $$"}).Stdout))
	sh := hold(t, shellPID)
	sh.kill(t)
	if !sh.endsWithin(waitLimit) {
		t.Fatal("the shell did not die")
	}
	if got := mustRun(t, c, map[string]any{"command": "echo replaced"}).Stdout; got != "replaced\n" {
		t.Errorf("after the shell was killed: %q", got)
	}
	// stop ends the shell and its jobs, and later calls fail clearly.
	job3 := bgJob(t, c)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !job3.endsWithin(waitLimit) {
		t.Error("stop left the shell's background job running")
	}
	if _, text, isErr := run(t, c, map[string]any{"command": "true"}); !isErr || !strings.Contains(text, "closed") {
		t.Errorf("after stop: %s", text)
	}
}

func TestPersistentShellRefusesConfineCwd(t *testing.T) {
	if _, _, err := Start(Options{Persistent: true, Policy: Policy{ConfineCwd: true}}); err == nil || !strings.Contains(err.Error(), "confine_cwd") {
		t.Errorf("%v", err)
	}
	if _, err := NewChecked(Options{Persistent: true}); err == nil || !strings.Contains(err.Error(), "shell.Start") {
		t.Errorf("%v", err)
	}
}
