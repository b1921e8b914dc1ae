package sandbox

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/hosttest"
)

// need starts a sandbox or, where the host cannot, skips (fails in CI,
// which installs what the sandbox needs).
func need(t testing.TB, o Options) *Sandbox {
	t.Helper()
	if err := Check(); err != nil {
		hosttest.Missing(t, "sandboxes cannot be made here: %v", err)
	}
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// run runs a shell command line inside and returns its combined output.
func run(t testing.TB, s *Sandbox, line string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := s.Command(ctx, "", nil, "/bin/sh", "-c", line)
	cmd.WaitDelay = 5 * time.Second // a process left holding the output
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return strings.TrimSpace(out.String()), code
}

// mounts is the host's mount table, without FUSE mounts: those are made
// by daemons in user space (a desktop's document portal, started by
// another test, mounts one at any time), and a sandbox has no /dev/fuse.
func mounts(t testing.TB) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if _, fs, _ := strings.Cut(line, " - "); !strings.HasPrefix(fs, "fuse") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func TestRootInsideLeavesHostAlone(t *testing.T) {
	before := mounts(t)
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "given.txt"), []byte("from the host\n"), 0o644)
	s := need(t, Options{Work: work})

	if out, _ := run(t, s, "id -u; hostname; pwd; cat given.txt"); out != "0\nsandbox\n/root\nfrom the host" {
		t.Fatalf("inside: %q", out)
	}
	// Root's work inside: a user, a file in /etc, a file in the work folder.
	if out, code := run(t, s, "useradd -m saucer-sbx-test && grep -c saucer-sbx-test /etc/passwd && echo kept > /root/out.txt && echo gone > /etc/saucer-sbx-test"); code != 0 || out != "1" {
		t.Fatalf("useradd inside: exit %d: %s", code, out)
	}
	// The files tool's view of the same files.
	if b, err := os.ReadFile(s.Path("/etc/saucer-sbx-test")); err != nil || string(b) != "gone\n" {
		t.Fatalf("Path view: %q %v", b, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("/etc/passwd"); bytes.Contains(b, []byte("saucer-sbx-test")) {
		t.Fatal("the user was added on the host")
	}
	if _, err := os.Stat("/etc/saucer-sbx-test"); err == nil {
		t.Fatal("/etc changed on the host")
	}
	if _, err := os.Stat("/home/saucer-sbx-test"); err == nil {
		t.Fatal("a home folder appeared on the host")
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("the work folder keeps what was written: %q %v", b, err)
	}
	if after := mounts(t); after != before {
		t.Fatalf("host mounts changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("sandbox folder %s left behind: %v", s.dir, err)
	}
}

func TestCloseKillsEveryProcess(t *testing.T) {
	s := need(t, Options{})
	// A daemon that left the process group and session.
	run(t, s, "setsid sleep 987654 >/dev/null 2>&1 < /dev/null & echo started")
	for i := 0; len(sleepers(t)) == 0; i++ {
		if i == 100 {
			t.Fatal("the daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := sleepers(t); len(pids) > 0 {
		t.Fatalf("processes outlived the sandbox: %v", pids)
	}
}

// sleepers are host processes running "sleep 987654".
func sleepers(t testing.TB) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00987654\x00" {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestNoNetworkByDefault(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	s := need(t, Options{})
	line := "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && echo connected"
	if out, code := run(t, s, "bash -c '"+line+"'"); code == 0 {
		t.Fatalf("reached the host's loopback: %s", out)
	}
	h := need(t, Options{Network: NetworkHost})
	if out, code := run(t, h, "bash -c '"+line+"'"); code != 0 || out != "connected" {
		t.Fatalf("network: host did not reach the host's loopback: exit %d %s", code, out)
	}
}

func TestSecretsDoNotReachInside(t *testing.T) {
	t.Setenv("SAUCER_TEST_API_KEY", "sk-sandbox-secret-123456")
	s := need(t, Options{})
	out, _ := run(t, s, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; ps -eo args")
	if strings.Contains(out, "sk-sandbox-secret") {
		t.Fatalf("the host's secret is visible inside:\n%s", out)
	}
	if strings.Contains(out, "go test") || strings.Contains(out, ".test") {
		t.Fatalf("a host process is visible inside:\n%s", out)
	}
}

func TestDiskAndProcessLimits(t *testing.T) {
	s := need(t, Options{Disk: 32 << 20, PIDs: 64})
	out, _ := run(t, s, "dd if=/dev/zero of=/fill bs=1M count=100 2>&1; echo dd=$?; rm /fill; echo after > /small && cat /small")
	if !strings.Contains(out, "No space left") || !strings.Contains(out, "dd=1") || !strings.HasSuffix(out, "after") {
		t.Fatalf("a 100 MiB file in a 32 MiB layer: %s", out)
	}
	if strings.Contains(s.Limits(), "processes") && !strings.Contains(s.Limits(), "not limited") {
		// A fork bomb meets the PID limit and the sandbox stays usable.
		run(t, s, "for i in $(seq 200); do sleep 987654 >/dev/null 2>&1 & done 2>/dev/null; true")
		pids := sleepers(t)
		if len(pids) == 0 || len(pids) >= 64 {
			t.Fatalf("%d sleeps running under a limit of 64 processes", len(pids))
		}
		// The sandbox is usable again once they are gone.
		for _, p := range pids {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 { // a signal to 0 would kill this test's process group
				t.Fatalf("sleeper pid %q", p)
			}
			syscall.Kill(n, syscall.SIGKILL)
		}
		for _, p := range pids { // reaped: their pids count no more
			for _, err := os.Stat("/proc/" + p); err == nil; _, err = os.Stat("/proc/" + p) {
				time.Sleep(5 * time.Millisecond)
			}
		}
		if out, _ := run(t, s, "echo alive"); out != "alive" {
			t.Fatalf("after a fork storm: %q", out)
		}
	} else {
		t.Logf("limits: %s", s.Limits())
	}
}

func TestStartFailsClearly(t *testing.T) {
	if err := Check(); err != nil {
		t.Skip(err)
	}
	_, err := Start(context.Background(), Options{Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "has no /bin/sh") {
		t.Fatalf("an empty root: %v", err)
	}
	_, err = Start(context.Background(), Options{Network: "bridge"})
	if err == nil || !strings.Contains(err.Error(), `use "none" or "host"`) {
		t.Fatalf("a bad network: %v", err)
	}
}

func BenchmarkCreateDestroy(b *testing.B) {
	if err := Check(); err != nil {
		b.Skip(err)
	}
	// p50 is what the target is about: report it beside the mean, and
	// the CPU time spent, Saucer's and its children's (unshare, bwrap and
	// what they start), per sandbox.
	p50 := func(b *testing.B, each func()) {
		var ds []time.Duration
		cpu0 := cpuTime(b)
		for b.Loop() {
			start := time.Now()
			each()
			ds = append(ds, time.Since(start))
		}
		b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(len(ds)), "cpu-ms/op")
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	}
	b.Run("sandbox", func(b *testing.B) {
		work := b.TempDir()
		p50(b, func() {
			s, err := Start(context.Background(), Options{Work: work})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("tempdir", func(b *testing.B) {
		p50(b, func() {
			d, err := os.MkdirTemp("", "saucer-bench-")
			if err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(d)
		})
	})
}

// cpuTime is the CPU time, user and system, of this process and of its
// children that have ended.
func cpuTime(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}
