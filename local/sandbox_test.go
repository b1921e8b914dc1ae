package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/sandboxtest"
)

// sandboxDevice is the device of device: sandbox over a fresh work folder.
func sandboxDevice(t *testing.T, edit func(*config.Config)) (*client.Client, string) {
	t.Helper()
	sandboxtest.Require(t)
	cfg := config.Default()
	cfg.Device = config.DeviceSandbox
	if edit != nil {
		edit(cfg)
	}
	work := t.TempDir()
	dev, err := NewDevice(context.Background(), cfg, work, DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev, work
}

type shellOut struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

func sh(t *testing.T, dev *client.Client, line string) shellOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := dev.Execute(ctx, command.Command{Namespace: "shell", ToolName: "execute_command", ToolType: command.Action,
		Parameters: map[string]any{"command": line}})
	if !res.OK() {
		t.Fatalf("%s: %s", line, res.Error)
	}
	var out shellOut
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	out.Stdout = strings.TrimSpace(out.Stdout)
	return out
}

func file(dev *client.Client, tool string, args map[string]any) command.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return dev.Execute(ctx, command.Command{Namespace: "files", ToolName: tool, ToolType: command.Action, Parameters: args})
}

// TestSandboxEscapeCorpus tries, as an attacker who controls the model
// would, to reach the host from the sandboxed device's tools. Every attempt
// must stay inside.
func TestSandboxEscapeCorpus(t *testing.T) {
	t.Setenv("SAUCER_ESCAPE_API_KEY", "sk-escape-test-0123456789")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hostDir := t.TempDir() // under /tmp: hidden inside
	secret := filepath.Join(hostDir, "host-secret")
	os.WriteFile(secret, []byte("host only"), 0o600)
	dev, work := sandboxDevice(t, func(c *config.Config) { c.Tools.Files.Roots = []string{"/"} })
	passwd, _ := os.ReadFile("/etc/passwd")

	for _, tc := range []struct {
		name, line string
		ok         func(shellOut) bool
	}{
		{"root inside adds a user", "useradd eve && id -u eve", func(o shellOut) bool { return o.ExitCode == 0 }},
		{"mount", "mount -t tmpfs none /mnt", func(o shellOut) bool { return o.ExitCode != 0 }},
		{"device file", "mknod /tmp/disk b 8 0", func(o shellOut) bool { return o.ExitCode != 0 }},
		{"host disk", "ls /dev | grep -E '^(sd|vd|nvme|xvd)'", func(o shellOut) bool { return o.Stdout == "" }},
		{"kernel settings", "echo 1 > /proc/sys/vm/drop_caches", func(o shellOut) bool { return o.ExitCode != 0 }},
		{"hostname", "hostname attacker", func(o shellOut) bool { return o.ExitCode != 0 }},
		{"host process", "cat /proc/" + strconv.Itoa(os.Getpid()) + "/environ", func(o shellOut) bool { return !strings.Contains(o.Stdout, "sk-escape") }},
		{"parent's environment", "cat /proc/$PPID/environ /proc/1/environ; env", func(o shellOut) bool { return !strings.Contains(o.Stdout, "sk-escape") }},
		{"few processes", "ls /proc | grep -c '^[0-9]'", func(o shellOut) bool { n, _ := strconv.Atoi(o.Stdout); return n > 0 && n < 10 }},
		{"network", fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", ln.Addr().(*net.TCPAddr).Port), func(o shellOut) bool { return o.ExitCode != 0 }},
		{"ptrace and admin capabilities", "grep CapEff /proc/self/status", func(o shellOut) bool {
			f := strings.Fields(o.Stdout)
			v, err := strconv.ParseUint(f[len(f)-1], 16, 64)
			return err == nil && v&(1<<19) == 0 && v&(1<<21) == 0 && v&(1<<16) == 0 && v&(1<<17) == 0 // ptrace, admin, module, rawio
		}},
		{"traversal", "cd /root/../../../.. && touch /escape-marker && ls /escape-marker", func(o shellOut) bool { return o.ExitCode == 0 }},
		{"hidden host folder", "cat " + secret, func(o shellOut) bool { return o.ExitCode != 0 }},
		{"symlinks for the files tool", "ln -s /etc/passwd /root/pw && ln -s " + secret + " /root/sec && ln -s /proc/self/root /root/selfroot && echo made", func(o shellOut) bool { return o.Stdout == "made" }},
	} {
		out := sh(t, dev, tc.line)
		if !tc.ok(out) {
			t.Errorf("%s: %q: exit %d, stdout %q, stderr %q", tc.name, tc.line, out.ExitCode, out.Stdout, out.Stderr)
		}
	}

	// The files tool follows links the sandbox's way.
	if res := file(dev, "write_file", map[string]any{"path": "/root/pw", "content": "pwned\n"}); !res.OK() {
		t.Errorf("write through an absolute link inside: %s", res.Error)
	}
	if out := sh(t, dev, "cat /etc/passwd"); out.Stdout != "pwned" {
		t.Errorf("the sandbox's /etc/passwd: %q", out.Stdout)
	}
	if res := file(dev, "read_file", map[string]any{"path": "/root/sec"}); res.OK() {
		t.Errorf("read a hidden host file through a link: %s", res.Result)
	}
	if res := file(dev, "read_file", map[string]any{"path": "/root/selfroot/etc/passwd"}); res.OK() && strings.Contains(string(res.Result), "root:x:0") {
		t.Errorf("read the host's root through /proc/self/root: %s", res.Result)
	}
	if res := file(dev, "read_file", map[string]any{"path": "../../../../" + strings.TrimPrefix(secret, "/")}); res.OK() {
		t.Errorf("path traversal: %s", res.Result)
	}
	// What the sandbox wrote to its work folder is on the host.
	if _, err := os.Lstat(filepath.Join(work, "pw")); err != nil {
		t.Errorf("the work folder is /root inside: %v", err)
	}

	dev.Close()
	if after, _ := os.ReadFile("/etc/passwd"); string(after) != string(passwd) {
		t.Fatal("the host's /etc/passwd changed")
	}
	for _, p := range []string{"/escape-marker", "/mnt/disk"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "host only" {
		t.Errorf("the host secret changed: %q", b)
	}
}

// TestSandboxedStdioServer runs a stdio MCP server marked sandbox: true
// inside, and checks it sees the sandbox, not the host.
func TestSandboxedStdioServer(t *testing.T) {
	t.Setenv("SAUCER_ESCAPE_API_KEY", "sk-escape-test-0123456789")
	exe := buildSaucer(t)
	dev, _ := sandboxDevice(t, func(c *config.Config) {
		if c.MCP.Servers == nil {
			c.MCP.Servers = map[string]config.MCPServer{}
		}
		c.MCP.Servers["inner"] = config.MCPServer{Kind: "stdio", Command: exe, Args: []string{"mcp", "shell", "-C", "${workdir}"}, Sandbox: true}
		c.MCP.Use = append(c.MCP.Use, "inner")
		c.Sandbox.Show = []string{filepath.Dir(exe)} // the binary is under /tmp, hidden otherwise
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := dev.Execute(ctx, command.Command{Namespace: "inner", ToolName: "execute_command", ToolType: command.Action,
		Parameters: map[string]any{"command": "hostname; pwd; echo $SAUCER_ESCAPE_API_KEY"}})
	if !res.OK() {
		t.Fatal(res.Error)
	}
	var out shellOut
	json.Unmarshal(res.Result, &out)
	if out.Stdout != "sandbox\n/root\n\n" {
		t.Fatalf("the marked server runs on the host, or sees its environment: %q", out.Stdout)
	}
}

// buildSaucer builds the saucer binary into a test folder.
func buildSaucer(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "saucer")
	cmd := exec.Command("go", "build", "-o", exe, "github.com/saucerhq/saucer/cmd/saucer")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build saucer: %v\n%s", err, out)
	}
	return exe
}

// The persistent shell runs inside the sandbox: state carries over, su
// hands the session to the user's shell until it exits, and closing the
// device ends it.
func TestSandboxPersistentShell(t *testing.T) {
	dev, _ := sandboxDevice(t, func(c *config.Config) { c.Tools.Shell.Persistent = true })
	sh(t, dev, "cd /tmp && export X=inside")
	if out := sh(t, dev, "echo $X $(pwd) $(id -un)"); out.Stdout != "inside /tmp root" {
		t.Fatalf("state: %+v", out)
	}
	if out := sh(t, dev, "useradd -m -s /bin/bash jack && su - jack"); out.ExitCode != 0 {
		t.Fatalf("su: %+v", out)
	}
	if out := sh(t, dev, "id -un; pwd"); out.Stdout != "jack\n/home/jack" {
		t.Errorf("after su: %+v", out)
	}
	sh(t, dev, "exit")
	if out := sh(t, dev, "id -un; echo $X"); out.Stdout != "root\ninside" {
		t.Errorf("back from su: %+v", out)
	}
	if _, err := os.Stat("/home/jack"); err == nil {
		t.Error("useradd in the sandbox made /home/jack on the host")
	}
}

// kill -9 -1 inside ends the sandbox (its first process dies with the
// rest); the device gives a fresh one, says so on the next command's
// stderr, and its tools work on: the shell and the files tool alike.
func TestSandboxKillEverything(t *testing.T) {
	dev, work := sandboxDevice(t, nil)
	sh(t, dev, "echo kept > /root/kept.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dev.Execute(ctx, command.Command{Namespace: "shell", ToolName: "execute_command", ToolType: command.Action,
		Parameters: map[string]any{"command": "kill -9 -1"}})
	out := sh(t, dev, "cat /root/kept.txt; hostname")
	if out.ExitCode != 0 || out.Stdout != "kept\nsandbox" {
		t.Fatalf("the command after kill -9 -1: %+v", out)
	}
	if !strings.Contains(out.Stderr, "the sandbox ended before this command") {
		t.Errorf("the model was not told its sandbox is new: stderr %q", out.Stderr)
	}
	if res := file(dev, "write_file", map[string]any{"path": "after.txt", "content": "after\n"}); !res.OK() {
		t.Errorf("the files tool after the restart: %s", res.Error)
	}
	if b, err := os.ReadFile(filepath.Join(work, "after.txt")); err != nil || string(b) != "after\n" {
		t.Errorf("the files tool wrote %q %v", b, err)
	}
}
