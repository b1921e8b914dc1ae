package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// endMark follows, on the terminal, all a process wrote.
const endMark = "\x00end of the test's process\x00"

// onPTY is a saucer process on a pseudo-terminal, as a person runs it:
// stdin, stdout and stderr are the terminal, and Ctrl-C typed there is
// SIGINT from the terminal's line discipline.
type onPTY struct {
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{} // a token after each read
	done chan struct{} // closed when the process has exited
	// drained is closed when the terminal has given all the process
	// wrote (its last writer is gone).
	drained chan struct{}
	err     error
}

func startOnPTY(t *testing.T, bin string, args ...string) *onPTY {
	t.Helper()
	p := &onPTY{cmd: exec.Command(bin, args...), more: make(chan struct{}, 1), done: make(chan struct{}), drained: make(chan struct{})}
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	pty.Setsize(master, &pty.Winsize{Rows: 50, Cols: 200})
	p.tty = master
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, tty, tty
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true} // the terminal is its controlling one (fd 0)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The test keeps the terminal's other end open: a terminal whose
	// last process has gone hangs up, and Linux then drops what was
	// written but not yet read. Once the process has exited, the test
	// writes an end mark after what it wrote: all of it has been read
	// when the mark has.
	go func() {
		defer close(p.drained)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			end := bytes.Contains(p.out.Bytes(), []byte(endMark))
			if end {
				p.out = *bytes.NewBuffer(bytes.Replace(p.out.Bytes(), []byte(endMark), nil, 1))
			}
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
			if err != nil || end {
				return
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		tty.Write([]byte(endMark))
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			if pid := p.cmd.Process.Pid; pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			<-p.done
		}
		<-p.drained
		master.Close()
		tty.Close()
	})
	return p
}

func (p *onPTY) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until the output holds want, at most 60 s.
func (p *onPTY) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(p.output(), want) {
		select {
		case <-p.more:
		case <-p.drained:
			if !strings.Contains(p.output(), want) {
				<-p.done
				t.Fatalf("the process ended (%v) without printing %q:\n%s", p.cmd.ProcessState, want, p.output())
			}
		case <-deadline:
			t.Fatalf("no %q within 60 s:\n%s", want, p.output())
		}
	}
}

// typeCtrlC types Ctrl-C at the terminal.
func (p *onPTY) typeCtrlC(t *testing.T) {
	t.Helper()
	if _, err := p.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
}

// signal sends sig to the saucer process.
func (p *onPTY) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	pid := p.cmd.Process.Pid
	if pid <= 0 {
		t.Fatalf("no process to signal (pid %d)", pid)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

// exitCode waits, at most 60 s, for the process to exit and its output
// to be read, and returns its exit code.
func (p *onPTY) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the process did not exit within 60 s:\n%s", p.output())
	}
	<-p.drained
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		t.Fatal(p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// running reports whether the process is still running.
func (p *onPTY) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// gone waits, at most 10 s, for process pid to end (a process killed
// may take a moment to die).
func gone(pid int) {
	for deadline := time.Now().Add(10 * time.Second); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFile waits, at most 60 s, for path to exist, and returns its
// content.
func waitFile(t *testing.T, path string, p *onPTY) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if !p.running() {
			t.Fatalf("the process ended before %s appeared:\n%s", path, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within 60 s:\n%s", path, p.output())
	return ""
}

// script writes a scripted model: the host assigns the shell one
// subtask, whose agent runs commands (each a reply), then both finish.
func script(t *testing.T, dir string, replies ...string) string {
	t.Helper()
	body := "replies:\n  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: \"do it\"}}]\n"
	for _, r := range replies {
		body += "  - tool_calls: [" + r + "]\n"
	}
	body += "  - tool_calls: [{name: finish_task, arguments: {result: done}}]\n  - tool_calls: [{name: finish_task, arguments: {result: done}}]\n"
	p := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + p
}

// longShell is a config whose shell lets a command run 10 minutes (the
// default, 60 s, would end the tests' long commands by itself).
func longShell(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "long-shell.yaml")
	if err := os.WriteFile(p, []byte("tools: {shell: {timeout: 10m}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func shellCall(line string) string {
	return `{name: execute_command, arguments: {command: ` + strconv.Quote(line) + `}}`
}

// Ctrl-C at a [y/N] prompt declines at once (no Enter needed), and the
// run ends with 130 without running the command.
func testCtrlCAtTheApprovalPrompt(t *testing.T, bin string) {
	dir, work := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "saucer.yaml")
	os.WriteFile(cfg, []byte("agent: {approve: [{tool: \"shell.execute_command\"}]}\n"), 0o644)
	p := startOnPTY(t, bin, "run", "-c", cfg, "-m", script(t, dir, shellCall("touch ran")), "-C", work, "--no-record", "touch a file")
	p.waitFor(t, "Run them? [y/N]")
	p.typeCtrlC(t)
	p.waitFor(t, "declined (interrupted")
	if code := p.exitCode(t); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, p.output())
	}
	if _, err := os.Stat(filepath.Join(work, "ran")); err == nil {
		t.Error("the command ran")
	}
}

// Ctrl-C at a question gives up at once: the agent has no answer, and the
// run ends with 130.
func testCtrlCAtAQuestion(t *testing.T, bin string) {
	dir := t.TempDir()
	p := startOnPTY(t, bin, "run", "-m", script(t, dir, `{name: ask_user, arguments: {question: "Which file?"}}`), "-C", t.TempDir(), "--no-record", "ask me")
	p.waitFor(t, "asks: Which file?")
	p.typeCtrlC(t)
	p.waitFor(t, "no answer (interrupted")
	if code := p.exitCode(t); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, p.output())
	}
}

// During a long command, the first Ctrl-C says at once that the run stops
// after it (and how to stop it now), the command going on; the second
// stops the command (its process is killed) and the run exits 130.
func testCtrlCTwiceDuringALongCommand(t *testing.T, bin string) { ctrlCTwice(t, bin) }

// The same with --console: the device then serves the run's agents
// through the console's server, whose dispatcher never reaches the
// command in progress (the second Ctrl-C left it running, and the run
// waiting for it).
func testCtrlCTwiceDuringALongCommandWithConsole(t *testing.T, bin string) {
	ctrlCTwice(t, bin, "--console", "127.0.0.1:0")
}

func ctrlCTwice(t *testing.T, bin string, extra ...string) {
	dir, work := t.TempDir(), t.TempDir()
	args := append([]string{"run", "-c", longShell(t, dir), "-m", script(t, dir, shellCall("echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 600"), shellCall("touch after")),
		"-C", work, "--no-record"}, extra...)
	p := startOnPTY(t, bin, append(args, "wait a long time")...)
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(work, "pid"), p)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid %d: %v", pid, err)
	}
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	p.typeCtrlC(t)
	p.waitFor(t, "interrupted: stopping the run after the current command (press Ctrl-C again to stop the command now)")
	if !alive(pid) || !p.running() {
		t.Fatalf("the first Ctrl-C stopped the command (alive %v) or the run (running %v):\n%s", alive(pid), p.running(), p.output())
	}
	p.typeCtrlC(t)
	p.waitFor(t, "stopping the current command now")
	if code := p.exitCode(t); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, p.output())
	}
	if gone(pid); alive(pid) {
		t.Errorf("the command's process %d outlived the run", pid)
	}
	if _, err := os.Stat(filepath.Join(work, "after")); err == nil {
		t.Error("the next command ran")
	}
}

// SIGTERM stops the run the same way, after the command in progress, and
// it exits 143.
func testSIGTERMStopsAfterTheCommand(t *testing.T, bin string) {
	dir, work := t.TempDir(), t.TempDir()
	p := startOnPTY(t, bin, "run", "-m", script(t, dir,
		shellCall("echo started > started.tmp && mv started.tmp started; while [ ! -e go ]; do sleep 0.02; done; echo one >> log"),
		shellCall("echo two >> log")), "-C", work, "--no-record", "two steps")
	waitFile(t, filepath.Join(work, "started"), p)
	p.signal(t, syscall.SIGTERM)
	p.waitFor(t, "terminated: stopping the run after the current command (send SIGTERM again to stop the command now)")
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 143 {
		t.Errorf("exit %d, want 143:\n%s", code, p.output())
	}
	if b, _ := os.ReadFile(filepath.Join(work, "log")); string(b) != "one\n" {
		t.Errorf("log %q: want the command in progress finished and the next one not run", b)
	}
}

// saucer eval stops the same way: at the first SIGTERM its trials stop
// after their current command, at the second that command is stopped,
// and it exits 143 (run again to resume).
func testSIGTERMTwiceStopsAnEval(t *testing.T, bin string) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	model := script(t, dir, shellCall("echo $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+" && exec sleep 600"))
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte("name: long\nmodel: "+model+"\ncases:\n  - {id: long, task: wait a long time}\n"), 0o644)
	p := startOnPTY(t, bin, "eval", suite, "-c", longShell(t, dir), "-o", filepath.Join(dir, "results"), "-q")
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, pidFile, p)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid %d: %v", pid, err)
	}
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	p.signal(t, syscall.SIGTERM)
	p.waitFor(t, "terminated: stopping the trials after the current command (send SIGTERM again to stop the command now)")
	if !alive(pid) || !p.running() {
		t.Fatalf("the first SIGTERM stopped the command (alive %v) or the eval (running %v):\n%s", alive(pid), p.running(), p.output())
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.exitCode(t); code != 143 {
		t.Errorf("exit %d, want 143:\n%s", code, p.output())
	}
	if gone(pid); alive(pid) {
		t.Errorf("the trial's command %d outlived the eval", pid)
	}
	if !strings.Contains(p.output(), "run again with the same results directory to resume") {
		t.Errorf("no word on resuming:\n%s", p.output())
	}
}

// TestInterrupts runs saucer on a terminal and stops it: at a prompt, in
// the middle of a command, by Ctrl-C and by SIGTERM.
func TestInterrupts(t *testing.T) {
	bin := saucerBinary(t)
	for name, test := range map[string]func(*testing.T, string){
		"CtrlCAtTheApprovalPrompt":                testCtrlCAtTheApprovalPrompt,
		"CtrlCAtAQuestion":                        testCtrlCAtAQuestion,
		"CtrlCTwiceDuringALongCommand":            testCtrlCTwiceDuringALongCommand,
		"CtrlCTwiceDuringALongCommandWithConsole": testCtrlCTwiceDuringALongCommandWithConsole,
		"SIGTERMStopsAfterTheCommand":             testSIGTERMStopsAfterTheCommand,
		"SIGTERMTwiceStopsAnEval":                 testSIGTERMTwiceStopsAnEval,
	} {
		t.Run(name, func(t *testing.T) { test(t, bin) })
	}
}
