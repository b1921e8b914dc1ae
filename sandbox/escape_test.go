package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// probe is a python3 program run inside: it makes each named system call
// with harmless arguments and prints "name errno" (0: it worked).
const probe = `
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    print(name, ctypes.get_errno() if r < 0 else 0)
    sys.stdout.flush()
    return r
n = dict(x86_64=dict(keyctl=250, add_key=248, request_key=249, unshare=272, bpf=321, perf_event_open=298,
                     io_uring_setup=425, kexec_load=246, init_module=175, ptrace=101, clone3=435, openat2=437,
                     fchmodat=268, mount=165),
         aarch64=dict(keyctl=219, add_key=217, request_key=218, unshare=97, bpf=280, perf_event_open=241,
                      io_uring_setup=425, kexec_load=104, init_module=105, ptrace=117, clone3=435, openat2=437,
                      fchmodat=53, mount=40))[os.uname().machine]
call("keyctl", n["keyctl"], 0, -4, 0)                 # KEYCTL_GET_KEYRING_ID of the user keyring
call("add_key", n["add_key"], 0, 0, 0, 0, -4)
call("request_key", n["request_key"], 0, 0, 0, 0)
call("unshare", n["unshare"], 0x10000000)             # CLONE_NEWUSER
call("bpf", n["bpf"], 0, 0, 0)
call("perf_event_open", n["perf_event_open"], 0, 0, -1, -1, 0)
call("io_uring_setup", n["io_uring_setup"], 1, 0)
call("kexec_load", n["kexec_load"], 0, 0, 0, 0)
call("init_module", n["init_module"], 0, 0, 0)
child = subprocess.Popen(["sleep", "1000"])
call("ptrace", n["ptrace"], 16, child.pid, 0, 0)      # PTRACE_ATTACH to a process of ours
child.kill()
call("clone3", n["clone3"], 0, 0)
call("openat2", n["openat2"], -100, 0, 0, 0)
`

// TestNoEscapeAsRootInside tries, as root inside a sandbox, what would
// reach the host's kernel or leave something on the host that gives
// root: the kernel keyring, new user namespaces and mounts in them,
// kernel interfaces, ptrace, a setuid file in the working folder.
func TestNoEscapeAsRootInside(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "probe.py"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	// A key in the host root's user keyring: root inside is the same user.
	desc := fmt.Sprintf("saucer-test-%d", os.Getpid())
	key, err := unix.AddKey("user", desc, []byte("host secret"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Fatalf("add a host key: %v", err)
	}
	t.Cleanup(func() { unix.KeyctlInt(unix.KEYCTL_INVALIDATE, key, 0, 0, 0) })

	s := need(t, Options{Work: work})
	if out, _ := run(t, s, "command -v python3"); out == "" {
		t.Fatal("the sandbox's root has no python3: the probes need it")
	}

	t.Run("system calls are refused with EPERM", func(t *testing.T) {
		out, code := run(t, s, "python3 probe.py")
		if code != 0 {
			t.Fatalf("probe: exit %d: %s", code, out)
		}
		got := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if name, errno, ok := strings.Cut(line, " "); ok {
				got[name] = errno
			}
		}
		eperm, enosys := strconv.Itoa(int(syscall.EPERM)), strconv.Itoa(int(syscall.ENOSYS))
		for name, want := range map[string]string{"keyctl": eperm, "add_key": eperm, "request_key": eperm, "unshare": eperm,
			"bpf": eperm, "perf_event_open": eperm, "io_uring_setup": eperm, "kexec_load": eperm, "init_module": eperm,
			"ptrace": eperm, "clone3": enosys, "openat2": enosys} {
			if got[name] != want {
				t.Errorf("%s: errno %q, want %s (the filter's answer)", name, got[name], want)
			}
		}
	})

	t.Run("the host's keys", func(t *testing.T) {
		read := fmt.Sprintf(`python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(64)
print(libc.syscall(%d, 11, %d, buf, 64), buf.value)'`, sysKeyctl(), key) // KEYCTL_READ
		if out, _ := run(t, s, read+"; cat /proc/keys /proc/key-users"); strings.Contains(out, "host secret") || strings.Contains(out, desc) {
			t.Errorf("a host key is readable inside:\n%s", out)
		}
		// A key added inside is not the host's to read.
		run(t, s, fmt.Sprintf(`python3 -c '
import ctypes
libc = ctypes.CDLL(None)
libc.syscall(%d, b"user", b"saucer-from-inside", b"planted", 7, -4)'`, sysAddKey()))
		if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", "saucer-from-inside", 0); err == nil {
			unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
			t.Error("a key added inside reached the host's keyring")
		}
	})

	if runtime.GOARCH == "amd64" {
		t.Run("the 32-bit ABI", func(t *testing.T) {
			// The same probe on the host first: a kernel without IA32
			// emulation (ia32_emulation=0, or built without it) has no
			// int 0x80 entry, and the probe dies of SIGSEGV there too.
			host, err := hostInt80(t)
			if err != nil {
				t.Fatal(err)
			}
			out, code := run(t, s, "python3 -c "+shellQuote(int80Probe))
			switch {
			case host == "SIGSEGV":
				// The entry does not exist: nothing to reach keyctl with.
				t.Logf("int 0x80 crashes on the host too (no IA32 emulation in this kernel): the safest case; inside: %q (exit %d)", out, code)
				if _, err := strconv.Atoi(out); err == nil && out != "-1" && out != "-38" {
					t.Errorf("int 0x80 returned %s inside but crashes on the host", out)
				}
			case out != "-1": // -EPERM: the filter refuses the whole 32-bit ABI
				t.Errorf("keyctl through int 0x80 returned %q inside (exit %d), want -1 (EPERM); on the host it returned %s", out, code, host)
			default:
				t.Logf("int 0x80 on the host: %s (the entry exists); inside: -1 (EPERM)", host)
			}
		})
	}

	t.Run("user namespaces and mounts in them", func(t *testing.T) {
		if out, code := run(t, s, "unshare -Urm sh -c 'mount -t tmpfs none /mnt && echo mounted'"); code == 0 || strings.Contains(out, "mounted") {
			t.Errorf("a user namespace with a mount inside: exit %d: %s", code, out)
		}
	})

	t.Run("ptrace", func(t *testing.T) {
		out, _ := run(t, s, `sleep 1000 & python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
print(libc.ptrace(16, int(sys.argv[1]), 0, 0), ctypes.get_errno())' $!; kill $!`)
		if out != fmt.Sprintf("-1 %d", syscall.EPERM) {
			t.Errorf("PTRACE_ATTACH to a process inside: %q", out)
		}
	})

	t.Run("setuid files in the working folder", func(t *testing.T) {
		run(t, s, `cp /bin/sh /root/suid-chmod; chmod 4755 /root/suid-chmod; chmod g+s /root/suid-chmod
python3 -c '
import os, stat
os.close(os.open("/root/suid-open", os.O_CREAT | os.O_WRONLY, 0o6755))
os.mknod("/root/suid-mknod", stat.S_IFREG | 0o4755)
open("/root/caps", "w").close()
try:
    os.setxattr("/root/caps", "security.capability", bytes.fromhex("0100000200000000000000000000000000000000"))
except OSError as e:
    print(e)'`)
		for _, name := range []string{"suid-chmod", "suid-open", "suid-mknod"} {
			st, err := os.Stat(filepath.Join(work, name))
			if err == nil && st.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("%s is %s on the host", name, st.Mode())
			}
		}
		if v, err := unix.Getxattr(filepath.Join(work, "caps"), "security.capability", make([]byte, 64)); err == nil && v > 0 {
			t.Error("a file capability was set on a file in the working folder")
		}
	})

	t.Run("a setuid file the host left is inert inside", func(t *testing.T) {
		id, err := exec.LookPath("id")
		if err != nil {
			t.Skip(err)
		}
		b, err := os.ReadFile(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "suid-id"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(work, "suid-id"), 0o4755)
		if out, _ := run(t, s, "setpriv --reuid 65534 --regid 65534 --clear-groups /root/suid-id -u"); out != "65534" {
			t.Errorf("a setuid-root file ran as %q, want 65534 (nosuid)", out)
		}
	})
}

// int80Probe calls keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING)
// through int 0x80, the i386 entry a 64-bit process may also use, and
// prints what it returned: a keyring id, or -errno.
const int80Probe = `
import ctypes, mmap
code = bytes([0x53, 0xb8, 0x20, 0x01, 0, 0, 0x31, 0xdb, 0xb9, 0xfc, 0xff, 0xff, 0xff, 0x31, 0xd2,
              0xcd, 0x80, 0x48, 0x63, 0xc0, 0x5b, 0xc3])
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
f = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print(f())`

// hostInt80 runs int80Probe on the host: its output, or "SIGSEGV" where
// the kernel has no int 0x80 entry.
func hostInt80(t *testing.T) (string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			return "", fmt.Errorf("CI installs python3 on the host (.ci/run): %v", err)
		}
		t.Skip("no python3 on the host to tell whether the kernel has an int 0x80 entry")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", int80Probe).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSEGV {
			return "SIGSEGV", nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("the int 0x80 probe on the host: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sysAddKey() int {
	if runtime.GOARCH == "arm64" {
		return 217
	}
	return 248
}

func sysKeyctl() int {
	if runtime.GOARCH == "arm64" {
		return 219
	}
	return 250
}

// The open-file limit is a container's, not the host's.
func TestOpenFileLimit(t *testing.T) {
	s := need(t, Options{})
	soft, hard := noFile()
	out, _ := run(t, s, "ulimit -Sn; ulimit -Hn")
	if want := fmt.Sprintf("%d\n%d", soft, hard); out != want || soft != NoFileSoft {
		t.Errorf("ulimit inside: %q, want %q", out, want)
	}
	var host syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &host)
	t.Logf("host: %d/%d, inside: %s", host.Cur, host.Max, strings.ReplaceAll(out, "\n", "/"))
}

// kill -9 -1 inside kills the sandbox's first process, which ends the
// sandbox; the next command runs in a fresh one and says so.
func TestKillEverythingInside(t *testing.T) {
	work := t.TempDir()
	s := need(t, Options{Work: work})
	run(t, s, "echo kept > /root/kept; echo gone > /etc/gone")
	old := s.Path("/")
	out, _ := run(t, s, "kill -9 -1; sleep 5; echo survived")
	if strings.Contains(out, "survived") {
		t.Fatalf("the command outlived kill -9 -1: %q", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := s.Command(ctx, "", nil, "/bin/sh", "-c", "cat /root/kept; cat /etc/gone 2>/dev/null || echo fresh")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the command after kill -9 -1: %v: %s", err, stderr.String())
	}
	if stdout.String() != "kept\nfresh\n" {
		t.Errorf("after the restart: %q (the work folder stays, the rest is new)", stdout.String())
	}
	if !strings.Contains(stderr.String(), "the sandbox ended before this command") || !strings.Contains(stderr.String(), "kill -9 -1") {
		t.Errorf("the command was not told why its sandbox is new: %q", stderr.String())
	}
	if s.Restarts() != 1 || s.Path("/") == old {
		t.Errorf("%d restarts, root %s (was %s)", s.Restarts(), s.Path("/"), old)
	}
	// The notice is said once.
	if out, _ := run(t, s, "echo again"); out != "again" {
		t.Errorf("the next command: %q", out)
	}
}

// What a Saucer killed with SIGKILL leaves (its sandbox's host folder and
// cgroup) is removed by the next one; a live owner's is not.
func TestLeftoversOfAKilledOwnerAreSwept(t *testing.T) {
	if os.Getenv("SAUCER_SANDBOX_HOLD") != "" {
		// The child: start a sandbox, say where it is, wait to be killed.
		s, err := Start(context.Background(), Options{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(s.dir, s.cur.pid, strings.Join(s.cgroup.dirs, " "))
		time.Sleep(time.Hour)
	}
	need(t, Options{}) // this host can make sandboxes; and this process's sweep is done
	child := exec.Command(os.Args[0], "-test.run=^TestLeftoversOfAKilledOwnerAreSwept$")
	child.Env = append(os.Environ(), "SAUCER_SANDBOX_HOLD=1")
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		child.Process.Kill()
		t.Fatalf("the child did not start a sandbox: %q %v", line, err)
	}
	f := strings.Fields(line)
	dir, firstPID, groups := f[0], f[1], f[2:]
	pid, _ := strconv.Atoi(firstPID)
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if child.Process.Pid <= 0 {
		t.Fatal("no child PID")
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	// The sandbox ends with its owner: wait for its first process to go.
	if n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 20000); err != nil || n != 1 {
		t.Fatalf("the sandbox outlived its owner: %d %v", n, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("nothing was left to sweep (%v): the test proves nothing", err)
	}
	// A live owner's leftovers-to-be: ours, by name.
	mine, err := os.MkdirTemp("", dirPrefix+ownerTag()+"-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(mine)

	sweep() // what the next Start of a process does first

	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead owner's folder %s is still there (%v)", dir, err)
	}
	for _, g := range groups {
		if _, err := os.Stat(g); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the dead owner's cgroup %s is still there (%v)", g, err)
		}
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a live owner's folder was swept: %v", err)
	}
}

// PID 1 inside (bwrap's init) shows nothing of the host: not its folders,
// not bwrap's command line, not the environment Saucer runs in.
func TestPIDOneShowsNothingOfTheHost(t *testing.T) {
	secret := fmt.Sprintf("host-only-value-%d", os.Getpid())
	t.Setenv("SAUCER_TEST_HOST_ONLY", secret)
	work := t.TempDir()
	s := need(t, Options{Work: work})
	out, code := run(t, s, `for f in cmdline environ; do printf '%s: ' $f; tr '\0' ' ' < /proc/1/$f || echo unreadable; echo; done`)
	if code != 0 || !strings.Contains(out, "cmdline: ") {
		t.Fatalf("reading /proc/1 inside: exit %d: %s", code, out)
	}
	t.Logf("inside:\n%s", out)
	leaks := []string{"bwrap", "SBX_", s.dir, filepath.Base(s.dir), work, os.TempDir(), secret, os.Getenv("PATH")}
	for _, v := range os.Environ() {
		if _, val, _ := strings.Cut(v, "="); len(val) >= 8 && val != "/usr/sbin:/usr/bin:/sbin:/bin" {
			leaks = append(leaks, val) // every distinctive value of the host's
		}
	}
	for _, l := range leaks {
		if l != "" && strings.Contains(out, l) {
			t.Errorf("PID 1 inside shows %q of the host", l)
		}
	}
	// The command line is still there to read (the test reads something).
	if !strings.Contains(out, launcher) {
		t.Errorf("PID 1's command line is not the launcher's: %s", out)
	}
}

// What root inside leaves in the working folder cannot harm its owner on
// the host once the sandbox closes: links out of it are gone (and listed),
// files given to other users are the owner's again, setuid bits are off.
// What the owner had there before is left alone.
func TestWorkFolderIsTidiedAtClose(t *testing.T) {
	work := t.TempDir()
	const uid, gid = 4321, 4322 // the folder's owner, not root
	bait := filepath.Join(t.TempDir(), "bait")
	if err := os.WriteFile(bait, []byte("host file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The owner's own, from before: an absolute link and a root-owned file.
	os.Symlink("/etc/hostname", filepath.Join(work, "mine"))
	os.WriteFile(filepath.Join(work, "rootfile"), nil, 0o644)
	if err := os.Chown(work, uid, gid); err != nil {
		t.Fatal(err)
	}
	os.Chmod(work, 0o750)

	s := need(t, Options{Work: work})
	out, code := run(t, s, `set -e; cd /root
echo x > f; chown 1234:1234 f
ln -s /etc/shadow leak
ln -s ../../etc/passwd up
mkdir -p d/e sub; chown -R 1234:1234 d
ln -s ../../../etc d/e/esc
ln -s f inlink; ln -s d/e/../../f inlink2
ln -s /root/f absin
ln -s .. sub/parent
ln -s sub/parent/../outside chain
ln -s f keep; chown -h 1234:1234 keep
ln -s `+bait+` `+noteName+`
chown 1234:1234 /root; chmod 777 /root
echo done`)
	if code != 0 || out != "done" {
		t.Fatalf("inside: exit %d: %s", code, out)
	}
	// A setuid file, which nothing inside can make: from the host, during
	// the session.
	if err := os.WriteFile(filepath.Join(work, "suid"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(work, "suid"), 0o4755|fs.ModeSetuid|fs.ModeSetgid)

	if err := s.Close(); err != nil { // idempotent: need's cleanup calls it again
		t.Fatalf("Close: %v", err)
	}
	for _, gone := range []string{"leak", "up", "d/e/esc", "absin", "chain"} {
		if _, err := os.Lstat(filepath.Join(work, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still in the folder (%v)", gone, err)
		}
	}
	for _, kept := range []string{"inlink", "inlink2", "sub/parent", "keep", "mine"} {
		if _, err := os.Lstat(filepath.Join(work, kept)); err != nil {
			t.Errorf("the link %s within the folder was removed: %v", kept, err)
		}
	}
	owned := func(name string, wantUID, wantGID uint32) {
		t.Helper()
		st, err := os.Lstat(filepath.Join(work, name))
		if err != nil {
			t.Error(err)
			return
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != wantUID || sys.Gid != wantGID {
			t.Errorf("%s is %d:%d, want %d:%d", name, sys.Uid, sys.Gid, wantUID, wantGID)
		}
	}
	for _, name := range []string{".", "f", "d", "d/e", "keep", "sub", noteName} {
		owned(name, uid, gid)
	}
	owned("rootfile", 0, 0) // the owner's, from before
	if st, err := os.Stat(work); err != nil || st.Mode().Perm() != 0o750 {
		t.Errorf("the folder's mode: %v %v, want 0750 as before", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(work, "suid")); err != nil || st.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Errorf("suid: %v %v", st.Mode(), err)
	}
	if b, err := os.ReadFile(bait); err != nil || string(b) != "host file\n" {
		t.Errorf("the host file a link pointed at changed: %q %v", b, err)
	}
	note, err := os.ReadFile(filepath.Join(work, noteName))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"leak -> /etc/shadow", "up -> ../../etc/passwd", "d/e/esc -> ../../../etc", "absin -> /root/f",
		"chain -> sub/parent/../outside", noteName + " -> " + bait} {
		if !strings.Contains(string(note), "\n"+line+"\n") {
			t.Errorf("the note does not list %q:\n%s", line, note)
		}
	}
}
