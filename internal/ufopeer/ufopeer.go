// Package ufopeer runs Microsoft UFO's own device client and its Linux
// bash MCP server, for tests that must meet the real other side rather
// than a peer written to Saucer's expectations.
//
// UFO's code is not in this repository: it is the pinned archive in
// ../shared/peers/ufo beside the checkout (its README says what it
// holds), unpacked into a test's temp folder. It runs on a python3 with
// pydantic 2 and Debian's python3-websockets and python3-psutil, which
// .ci/run installs. Outside CI a test skips when any of that is missing;
// in CI it fails, saying what to install.
package ufopeer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// APIKey is the key the bash MCP server checks (its UFO_MCP_API_KEY): a
// model passes it as execute_command's api_key.
const APIKey = "ufo-k3y"

// Peer is an unpacked copy of UFO's code and the interpreter to run it.
type Peer struct {
	// Src is the unpacked archive (aip, ufo, config).
	Src string
	// dir is ../shared/peers/ufo: its shim and entry scripts.
	dir    string
	python string
	// libs holds links to Debian's websockets and psutil when the
	// interpreter lacks them.
	libs string
	// mcpPort is where the agents' MCP servers are, in the unpacked
	// mcp.yaml, and where ServeBashMCP serves.
	mcpPort int
}

// unavailable skips the test outside CI and fails it in CI.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// New unpacks UFO's code into a temp folder, with its client's mcp.yaml
// pointing LinuxAgent's and MobileAgent's servers at a free loopback
// port, where ServeBashMCP serves.
func New(t testing.TB) *Peer {
	t.Helper()
	dir, err := sharedDir()
	if err != nil {
		unavailable(t, "UFO's device client: %v", err)
	}
	archive, _ := filepath.Glob(filepath.Join(dir, "ufo-*.tar.gz"))
	if len(archive) != 1 {
		unavailable(t, "UFO's device client: want one ufo-*.tar.gz in %s, found %d", dir, len(archive))
	}
	p := &Peer{Src: t.TempDir(), dir: dir, mcpPort: freePort(t)}
	if out, err := exec.Command("tar", "-xzf", archive[0], "-C", p.Src).CombinedOutput(); err != nil {
		t.Fatalf("unpack %s: %v\n%s", archive[0], err, out)
	}
	p.python, p.libs, err = interpreter(t)
	if err != nil {
		unavailable(t, "UFO's device client: %v", err)
	}
	// The agents' servers listen where this test's bash server does:
	// LinuxAgent's BashExecutor, and both of MobileAgent's (a phone's
	// servers need adb; the bash server stands in, so that a client
	// registered as mobile routes through MobileAgent's entry for real).
	cfg := filepath.Join(p.Src, "config", "ufo", "mcp.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ports := regexp.MustCompile(`port: (8010|8020|8021)\b`)
	if n := len(ports.FindAll(b, -1)); n != 3 {
		t.Fatalf("%s: want the ports 8010, 8020 and 8021 of LinuxAgent and MobileAgent, found %d", cfg, n)
	}
	b = ports.ReplaceAll(b, []byte(fmt.Sprintf("port: %d", p.mcpPort)))
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sharedDir is ../shared/peers/ufo beside the module's root.
func sharedDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			peer := filepath.Join(d, "..", "shared", "peers", "ufo")
			if _, err := os.Stat(filepath.Join(peer, "ufo_real_client.py")); err != nil {
				return "", fmt.Errorf("no UFO peer at %s (the shared folder beside the checkout): %w", peer, err)
			}
			return peer, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.mod above the test's folder")
		}
	}
}

// interpreter finds a python3 that has pydantic 2 (UFO's messages are
// pydantic 2 models; Debian 12's python3-pydantic is 1.10), and links
// Debian's websockets and psutil for it if it lacks them.
func interpreter(t testing.TB) (python, libs string, err error) {
	var tried []string
	candidates := []string{"python3", "/root/.pyenv/shims/python3", "/usr/local/bin/python3", "/usr/bin/python3"}
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import pydantic, yaml; print(pydantic.VERSION)").Output()
		v := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(v, "2.") {
			tried = append(tried, fmt.Sprintf("%s (pydantic %q)", path, v))
			continue
		}
		python = path
		break
	}
	if python == "" {
		return "", "", fmt.Errorf("no python3 with pydantic 2 and PyYAML (tried %s)", strings.Join(tried, ", "))
	}
	if exec.Command(python, "-c", "import websockets, psutil").Run() == nil {
		return python, "", nil
	}
	libs = t.TempDir()
	for _, mod := range []string{"websockets", "psutil"} {
		src := filepath.Join("/usr/lib/python3/dist-packages", mod)
		if _, err := os.Stat(src); err != nil {
			return "", "", fmt.Errorf("%s lacks %s, and Debian's python3-%s is not installed (apt-get install python3-websockets python3-psutil)", python, mod, mod)
		}
		if err := os.Symlink(src, filepath.Join(libs, mod)); err != nil {
			return "", "", err
		}
	}
	cmd := exec.Command(python, "-c", "import websockets, psutil")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+libs)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("%s cannot import Debian's websockets and psutil: %v\n%s", python, err, out)
	}
	return python, libs, nil
}

func (p *Peer) env(extra ...string) []string {
	env := append(os.Environ(), "UFO_SRC="+p.Src, "SHIM="+filepath.Join(p.dir, "shim"), "PYTHONUNBUFFERED=1")
	if p.libs != "" {
		env = append(env, "PYTHONPATH="+p.libs)
	}
	return append(env, extra...)
}

// Proc is a running peer process and its output.
type Proc struct {
	Cmd    *exec.Cmd
	out    lines
	exited chan struct{} // closed once Wait returned
}

// Output is everything the process wrote so far.
func (p *Proc) Output() string { return p.out.String() }

// Count counts the lines of output that contain s.
func (p *Proc) Count(s string) int { return p.out.count(s) }

// WaitFor waits until a line of output contains s, or fails the test
// after timeout (or when the process ends first).
func (p *Proc) WaitFor(t testing.TB, s string, timeout time.Duration) {
	t.Helper()
	if err := p.out.wait(s, 1, timeout); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
}

// WaitCount waits until n lines of output contain s.
func (p *Proc) WaitCount(t testing.TB, s string, n int, timeout time.Duration) {
	t.Helper()
	if err := p.out.wait(s, n, timeout); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
}

// Kill ends the process (SIGKILL) and waits for it to be reaped.
func (p *Proc) Kill() {
	p.Cmd.Process.Kill()
	<-p.exited
}

func (p *Peer) start(t testing.TB, name string, args []string, env []string) *Proc {
	t.Helper()
	cmd := exec.Command(p.python, args...)
	cmd.Dir, cmd.Env = p.Src, env
	pr := &Proc{Cmd: cmd, exited: make(chan struct{})}
	pr.out.cond = sync.NewCond(&pr.out.mu)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go pr.out.read(r)
	go func() {
		cmd.Wait() // WaitDelay bounds it when a child holds the output
		w.Close()
		close(pr.exited)
	}()
	t.Cleanup(func() {
		pr.Kill()
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, pr.Output())
		}
	})
	return pr
}

// ServeBashMCP starts UFO's Linux bash MCP server on the port New chose
// and waits until it serves. Its output has a line
// "CALL HH:MM:SS NAME ARGS" for each tool call (the shim's doing), which
// Count counts.
func (p *Peer) ServeBashMCP(t testing.TB) *Proc {
	port := p.mcpPort
	t.Helper()
	server := filepath.Join("ufo", "client", "mcp", "http_servers", "linux_mcp_server.py")
	env := p.env("UFO_MCP_API_KEY="+APIKey, "PYTHONPATH="+strings.Join(nonEmpty(filepath.Join(p.dir, "shim"), p.libs, p.Src), ":"))
	pr := p.start(t, "UFO's bash MCP server", []string{server, "--host", "localhost", "--port", fmt.Sprint(port)}, env)
	pr.WaitFor(t, "http://localhost:"+fmt.Sprint(port), 60*time.Second)
	return pr
}

// Client starts UFO's own device client (python3 -m ufo.client.client,
// through the pinned entry script) against a Saucer server's WebSocket
// URL (with its token in the query), registered as id on platform
// (linux, mobile or windows), and returns without waiting for it to
// register.
func (p *Peer) Client(t testing.TB, url, id, platform string, extra ...string) *Proc {
	t.Helper()
	args := append([]string{filepath.Join(p.dir, "ufo_real_client.py"), "--ws", "--ws-server", url, "--client-id", id,
		"--platform", platform, "--log-level", "INFO"}, extra...)
	return p.start(t, "UFO's device client "+id, args, p.env())
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// freePort is a loopback port nobody listens on.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lines is a process's output, line by line, with a way to wait for one.
type lines struct {
	mu   sync.Mutex
	cond *sync.Cond
	all  []string
	done bool
}

func (l *lines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.all = append(l.all, sc.Text())
		l.cond.Broadcast()
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.done = true
	l.cond.Broadcast()
	l.mu.Unlock()
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return ""
	}
	return strings.Join(l.all, "\n") + "\n"
}

func (l *lines) countLocked(s string) int {
	n := 0
	for _, line := range l.all {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *lines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.countLocked(s)
}

// wait waits for n lines holding s; a timer wakes it at the deadline.
func (l *lines) wait(s string, n int, timeout time.Duration) error {
	expired := false
	timer := time.AfterFunc(timeout, func() {
		l.mu.Lock()
		expired = true
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.countLocked(s) < n {
		switch {
		case expired:
			return fmt.Errorf("no %d lines with %q within %s", n, s, timeout)
		case l.done:
			return fmt.Errorf("the process ended before %d lines with %q", n, s)
		}
		l.cond.Wait()
	}
	return nil
}
