package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
)

// appendScript is a scripted model for a task of six commands, each
// appending one line to log.txt and then taking a while, so that a test
// can kill a process in the middle of one.
func appendScript(t *testing.T) string {
	var b strings.Builder
	b.WriteString("replies:\n  - tool_calls:\n      - name: assign_subtask\n        arguments: {app: shell, subtask: \"append six lines\"}\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "  - tool_calls:\n      - name: execute_command\n        arguments: {command: \"printf 'L%d\\\\n' >> log.txt && sleep 0.8\"}\n", i)
	}
	b.WriteString("  - tool_calls:\n      - name: finish_task\n        arguments: {result: \"appended\"}\n")
	b.WriteString("  - tool_calls:\n      - name: finish_task\n        arguments: {result: \"six lines appended\"}\n")
	path := filepath.Join(t.TempDir(), "append.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// proc is a saucer process whose output is kept for the failure message.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	once sync.Once
	err  error
}

func startSaucer(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), out: &syncBuffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Tool processes a killed client leaves behind may hold its output
	// open; do not wait for them.
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.wait()
	})
	return p
}

func (p *proc) kill(t *testing.T) { p.stop(t, syscall.SIGKILL) }

// stop sends sig and waits for the process to end.
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	p.wait()
}

// wait waits for the process once, however many ask.
func (p *proc) wait() error {
	p.once.Do(func() { p.err = p.cmd.Wait() })
	return p.err
}

// waitLines waits until log.txt has at least n lines.
func waitLines(t *testing.T, path string, n int, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("log.txt never reached %d lines: %q\n%s", n, b, logs())
}

// TestRestartsMidTask kills the device client in the middle of a command
// and the server in the middle of the task, each with SIGKILL, and starts
// them again: the task goes on from where it was and completes, each of
// its six commands ran once (the one cut short by the client's crash is
// reported as interrupted, not run again), and the API of the restarted
// server shows the whole task.
func TestRestartsMidTask(t *testing.T) {
	bin := saucerBinary(t)
	specs := map[string]func(dir string) string{
		"sqlite":   func(dir string) string { return "sqlite:" + filepath.Join(dir, "state.db") },
		"postgres": func(string) string { return storetest.Postgres(t) },
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) { restartMidTask(t, bin, spec(t.TempDir()), syscall.SIGKILL) })
	}
	// A server on PostgreSQL restarted under its own --server-id takes
	// back the tasks it had.
	t.Run("postgres-same-id", func(t *testing.T) {
		restartMidTask(t, bin, storetest.Postgres(t), syscall.SIGKILL, "--server-id", "alpha")
	})
	// Stopped the usual way (SIGTERM), the server leaves its task to the
	// next one instead of failing it.
	t.Run("sqlite-sigterm", func(t *testing.T) {
		restartMidTask(t, bin, "sqlite:"+filepath.Join(t.TempDir(), "state.db"), syscall.SIGTERM)
	})
}

func restartMidTask(t *testing.T, bin, storeSpec string, stop syscall.Signal, extra ...string) {
	addr := freeAddr(t)
	tmp := t.TempDir()
	work, runs := filepath.Join(tmp, "work"), filepath.Join(tmp, "runs")
	os.MkdirAll(work, 0o755)
	env := []string{"SAUCER_RUNS=" + runs, "XDG_CACHE_HOME=" + tmp}
	serveArgs := append([]string{"serve", "--model", "scripted:" + appendScript(t), "--addr", addr, "--token", "k",
		"--store", storeSpec}, extra...)
	clientArgs := []string{"client", "--server", "ws://" + addr + "/ws", "--token", "k", "--id", "box", "-C", work,
		"--journal", filepath.Join(tmp, "box.journal")}

	srv := startSaucer(t, bin, env, serveArgs...)
	waitHTTP(t, addr)
	cl := startSaucer(t, bin, env, clientArgs...)
	logs := func() string { return "server:\n" + srv.out.String() + "\nclient:\n" + cl.out.String() }
	var clients struct{ Clients []server.ClientInfo }
	for deadline := time.Now().Add(30 * time.Second); len(clients.Clients) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the client never registered\n%s", logs())
		}
		time.Sleep(20 * time.Millisecond)
		apiCall(t, addr, "GET", "/api/clients", nil, &clients)
	}
	var disp server.DispatchResponse
	if code := apiCall(t, addr, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "box", Request: "append six lines to log.txt"}, &disp); code != 200 {
		t.Fatalf("dispatch: %d\n%s", code, logs())
	}
	logPath := filepath.Join(work, "log.txt")

	// The client dies while the second command sleeps (its line is
	// written), and comes back at once.
	waitLines(t, logPath, 2, logs)
	cl.kill(t)
	first := cl.out.String()
	cl = startSaucer(t, bin, env, clientArgs...)

	// The server dies while the fourth command runs, and comes back.
	waitLines(t, logPath, 4, logs)
	srv.stop(t, stop)
	before := srv.out.String()
	srv = startSaucer(t, bin, env, serveArgs...)
	logs = func() string {
		return "server before its restart:\n" + before + "\nserver:\n" + srv.out.String() + "\nclient before its crash:\n" + first + "\nclient:\n" + cl.out.String()
	}
	waitHTTP(t, addr)

	info := waitCompleted(t, addr, disp.TaskID, logs)

	b, _ := os.ReadFile(logPath)
	interrupted := map[string]bool{}
	for _, c := range info.Commands {
		if c.ToolName == "execute_command" && strings.Contains(c.Error, "interrupted") {
			interrupted[c.CallID] = true
		}
	}
	for i := 1; i <= 6; i++ {
		n := strings.Count(string(b), fmt.Sprintf("L%d\n", i))
		if n != 1 && !(n == 0 && len(interrupted) > 0) {
			t.Errorf("line L%d is in log.txt %d times; want once (or missing and reported interrupted)\nlog.txt: %q\n%s", i, n, b, logs())
		}
	}
	if len(interrupted) != 1 {
		t.Errorf("%d commands reported interrupted, want the one the client's crash cut short: %+v", len(interrupted), info.Commands)
	}
	var shells []string
	for _, c := range info.Commands {
		if c.ToolName == "execute_command" {
			shells = append(shells, string(c.State))
		}
	}
	if got, want := strings.Join(shells, " "), "completed failed completed completed completed completed"; got != want {
		t.Errorf("the six commands' states: %s, want %s (the second interrupted)", got, want)
	}
	if info.Result != "six lines appended" {
		t.Errorf("result %q", info.Result)
	}
	if !strings.Contains(srv.out.String(), "resumes") {
		t.Errorf("the restarted server did not say it resumed the task\n%s", logs())
	}
}

// freeAddr is a loopback address with a port nobody listens on, for a
// server the test starts in another process.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/api/health"); err == nil {
			resp.Body.Close()
			return
		}
	}
	t.Fatalf("no server on %s", addr)
}

func apiCall(t *testing.T, addr, method, path string, body, out any) int {
	t.Helper()
	var r *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	} else {
		r = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, "http://"+addr+path, r)
	req.Header.Set("X-API-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

// dispatchWhenRegistered dispatches request to the device box on addr,
// trying again until the device has registered (30s at the most).
func dispatchWhenRegistered(t *testing.T, addr, request string, logs func() string) server.DispatchResponse {
	t.Helper()
	var disp server.DispatchResponse
	for deadline := time.Now().Add(30 * time.Second); disp.TaskID == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no dispatch\n%s", logs())
		}
		apiCall(t, addr, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "box", Request: request}, &disp)
	}
	return disp
}

// waitCompleted waits until task id on addr has completed (a minute at
// the most) and returns it; a task that fails ends the test.
func waitCompleted(t *testing.T, addr, id string, logs func() string) server.TaskInfo {
	t.Helper()
	var info server.TaskInfo
	for deadline := time.Now().Add(60 * time.Second); info.Status != server.StatusCompleted; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) || info.Status == server.StatusFailed {
			t.Fatalf("task is %q (%s), not completed\n%s", info.Status, info.Error, logs())
		}
		apiCall(t, addr, "GET", "/api/tasks/"+id+"?wait=5s", nil, &info)
	}
	return info
}

// TestRestartWithoutTheDevice: the server is killed in the middle of a
// task and its device does not come back: the restarted server ends the
// task failed, saying why, once remote.away_timeout has passed.
func TestRestartWithoutTheDevice(t *testing.T) {
	bin := saucerBinary(t)
	addr := freeAddr(t)
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	os.MkdirAll(work, 0o755)
	cfg := filepath.Join(tmp, "saucer.yaml")
	// The server waits 1s, plus the 2s the client declares it may take to
	// register again (its backoff cap and registration timeout).
	os.WriteFile(cfg, []byte("remote:\n  away_timeout: 1s\n  max_backoff: 1s\n  register_timeout: 1s\n"), 0o644)
	env := []string{"SAUCER_RUNS=" + filepath.Join(tmp, "runs"), "XDG_CACHE_HOME=" + tmp}
	serveArgs := []string{"serve", "-c", cfg, "--model", "scripted:" + appendScript(t), "--addr", addr, "--token", "k",
		"--store", "sqlite:" + filepath.Join(tmp, "state.db")}
	srv := startSaucer(t, bin, env, serveArgs...)
	waitHTTP(t, addr)
	cl := startSaucer(t, bin, env, "client", "-c", cfg, "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", work,
		"--journal", filepath.Join(tmp, "box.journal"))
	logs := func() string { return "server:\n" + srv.out.String() + "\nclient:\n" + cl.out.String() }
	disp := dispatchWhenRegistered(t, addr, "append six lines", logs)
	waitLines(t, filepath.Join(work, "log.txt"), 2, logs)
	cl.kill(t)
	srv.kill(t)
	srv = startSaucer(t, bin, env, serveArgs...)
	waitHTTP(t, addr)
	var info server.TaskInfo
	for deadline := time.Now().Add(30 * time.Second); info.Status != server.StatusFailed; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("task is %q, not failed\n%s", info.Status, logs())
		}
		apiCall(t, addr, "GET", "/api/tasks/"+disp.TaskID, nil, &info)
	}
	if !strings.Contains(info.Error, "did not come back within 3s") {
		t.Errorf("the failure does not say why: %q", info.Error)
	}
}

// TestRequestGivesUpOnALostServer: saucer client --request whose server
// dies in the middle of the task and does not come back gives up after
// --connect-wait with a message that says so, instead of waiting forever.
func TestRequestGivesUpOnALostServer(t *testing.T) {
	bin := saucerBinary(t)
	addr := freeAddr(t)
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	os.MkdirAll(work, 0o755)
	env := []string{"SAUCER_RUNS=" + filepath.Join(tmp, "runs"), "XDG_CACHE_HOME=" + tmp}
	srv := startSaucer(t, bin, env, "serve", "--model", "scripted:"+appendScript(t), "--addr", addr, "--token", "k",
		"--store", "sqlite:"+filepath.Join(tmp, "state.db"))
	waitHTTP(t, addr)
	cl := startSaucer(t, bin, env, "client", "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", work,
		"--journal", "off", "--connect-wait", "1s", "--request", "append six lines")
	logs := func() string { return "server:\n" + srv.out.String() + "\nclient:\n" + cl.out.String() }
	waitLines(t, filepath.Join(work, "log.txt"), 2, logs)
	srv.kill(t)
	done := make(chan error, 1)
	go func() { done <- cl.wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(cl.out.String(), "lost the server") {
			t.Errorf("client ended with %v\n%s", err, logs())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("saucer client --request still waits for a server that is gone\n%s", logs())
	}
}

// TestOneServerPerStore: a second saucer serve on a store another one
// uses is refused at start, saying why.
func TestOneServerPerStore(t *testing.T) {
	bin := saucerBinary(t)
	tmp := t.TempDir()
	spec := "sqlite:" + filepath.Join(tmp, "state.db")
	addr := freeAddr(t)
	startSaucer(t, bin, []string{"SAUCER_RUNS=" + tmp}, "serve", "--model", "scripted:../../examples/demo.yaml", "--addr", addr, "--token", "k", "--store", spec)
	waitHTTP(t, addr)
	out, code := saucer(t, "serve", "--model", "scripted:../../examples/demo.yaml", "--addr", "127.0.0.1:0", "--token", "k", "--store", spec)
	if code == 0 || !strings.Contains(out, "another saucer serve is using this store") {
		t.Errorf("a second server on the store: exit %d\n%s", code, out)
	}
}
