package sandbox

import (
	"context"
	"encoding/binary"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// filterVM runs the filter for one architecture's calls in x/net/bpf's
// virtual machine. Its loads are big-endian, so seccomp_data is laid out
// big-endian here: the filter's 4-byte loads read the same values.
type filterVM struct {
	t  *testing.T
	vm *bpf.VM
}

func newFilterVM(t *testing.T, native, compat *arch.Info) filterVM {
	t.Helper()
	prog, err := assembleFilter(native, compat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bpf.Assemble(prog); err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d instructions", native.Name, len(prog))
	return filterVM{t, vm}
}

// run is the filter's answer to call nr of architecture a, with the low
// 32 bits of its arguments.
func (f filterVM) run(a arch.AuditArch, nr uint32, args ...uint32) uint32 {
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], nr)
	binary.BigEndian.PutUint32(data[offArch:], uint32(a))
	for i, v := range args {
		binary.BigEndian.PutUint32(data[offArgs+8*i:], v)
	}
	ret, err := f.vm.Run(data)
	if err != nil {
		f.t.Fatal(err)
	}
	return uint32(ret)
}

func answer(ret uint32) string {
	switch {
	case ret == retAllow:
		return "allow"
	case ret&0xffff0000 == retErrno:
		return syscall.Errno(ret & 0xffff).Error()
	}
	return "?"
}

// The filter is an allow list: what ordinary programs call is allowed,
// the refusals the escape tests check stay refused, a call unknown to the
// table (one added to the kernel later, or none) fails with ENOSYS, and
// the 32-bit ABI is refused whole. Checked for both machines' tables,
// without a kernel.
func TestFilterIsAnAllowList(t *testing.T) {
	eperm, enosys := syscall.EPERM.Error(), syscall.ENOSYS.Error()
	for _, m := range []struct{ native, compat *arch.Info }{{arch.X86_64, arch.I386}, {arch.AARCH64, arch.ARM}} {
		t.Run(m.native.Name, func(t *testing.T) {
			f := newFilterVM(t, m.native, m.compat)
			id := m.native.ID
			nr := func(name string) uint32 {
				n, ok := m.native.SyscallNames[name]
				if !ok {
					t.Fatalf("%s has no %s", m.native.Name, name)
				}
				return uint32(n)
			}
			expect := func(what string, got uint32, want string) {
				t.Helper()
				if answer(got) != want {
					t.Errorf("%s: %s, want %s", what, answer(got), want)
				}
			}
			for _, name := range []string{"read", "write", "openat", "close", "mmap", "execve", "exit_group", "futex",
				"rt_sigaction", "socket", "connect", "getrandom", "statx", "clone", "wait4", "setns", "chroot",
				"setresuid", "capset", "prctl", "rseq", "io_submit", "epoll_pwait2", "close_range", "faccessat2"} {
				expect(name, f.run(id, nr(name)), "allow")
			}
			for _, name := range []string{"keyctl", "add_key", "request_key", "unshare", "mount", "umount2", "pivot_root",
				"open_tree", "open_tree_attr", "fsopen", "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter",
				"kexec_load", "init_module", "finit_module", "ptrace", "process_vm_readv", "pidfd_getfd", "reboot",
				"swapon", "settimeofday", "userfaultfd", "open_by_handle_at", "sethostname", "mbind"} {
				expect(name, f.run(id, nr(name)), eperm)
			}
			expect("clone3", f.run(id, nr("clone3")), enosys)
			expect("openat2", f.run(id, nr("openat2")), enosys)
			// Unknown: past the table, in no table, and x32's numbers.
			expect("call 1000", f.run(id, 1000), enosys)
			expect("call 0xffffffff", f.run(id, 0xffffffff), enosys)
			expect("call 469 (file_setattr, newer than the table)", f.run(id, 469), enosys)
			if m.native == arch.X86_64 {
				expect("an x32 call", f.run(id, 0x40000000|nr("keyctl")), enosys)
				expect("call 400 (a gap in x86_64's table)", f.run(id, 400), enosys)
				expect("arch_prctl", f.run(id, nr("arch_prctl")), "allow")
			} else {
				expect("clock_gettime64 (arm's, not arm64's)", f.run(id, 403), enosys)
			}
			// The 32-bit ABI, whole; and other architectures.
			for _, name := range []string{"read", "getpid", "keyctl", "exit"} {
				if n, ok := m.compat.SyscallNames[name]; ok {
					expect(m.compat.Name+" "+name, f.run(m.compat.ID, uint32(n)), eperm)
				}
			}
			expect("another architecture", f.run(arch.PPC64.ID, nr("read")), enosys)

			// Calls allowed but for some arguments.
			const newUser, vfork = 0x10000000, syscall.CLONE_VM | syscall.CLONE_VFORK | uint32(syscall.SIGCHLD)
			expect("clone of a thread", f.run(id, nr("clone"), vfork), "allow")
			expect("clone with CLONE_NEWUSER", f.run(id, nr("clone"), newUser|uint32(syscall.SIGCHLD)), eperm)
			expect("clone with CLONE_NEWNS", f.run(id, nr("clone"), syscall.CLONE_NEWNS), eperm)
			expect("socket(AF_INET)", f.run(id, nr("socket"), syscall.AF_INET, syscall.SOCK_STREAM), "allow")
			expect("socket(AF_UNIX)", f.run(id, nr("socket"), syscall.AF_UNIX, syscall.SOCK_STREAM), "allow")
			expect("socket(AF_ALG)", f.run(id, nr("socket"), afALG), eperm)
			expect("socket(AF_VSOCK)", f.run(id, nr("socket"), afVSOCK), eperm)
			expect("socket(39)", f.run(id, nr("socket"), 39), "allow")
			expect("socket(AF_NETLINK)", f.run(id, nr("socket"), syscall.AF_NETLINK), "allow")
			for _, p := range []uint32{0, 8, 0x20000, 0x20008, 0xffffffff} {
				expect("personality allowed", f.run(id, nr("personality"), p), "allow")
			}
			expect("personality(ADDR_NO_RANDOMIZE)", f.run(id, nr("personality"), 0x0040000), eperm)
			expect("personality(READ_IMPLIES_EXEC)", f.run(id, nr("personality"), 0x0400000), eperm)
			expect("fchmodat 0755", f.run(id, nr("fchmodat"), 0, 0, 0o755), "allow")
			expect("fchmodat 04755", f.run(id, nr("fchmodat"), 0, 0, 0o4755), eperm)
			expect("fchmodat 02755", f.run(id, nr("fchmodat"), 0, 0, 0o2755), eperm)
			expect("fchmod 0644", f.run(id, nr("fchmod"), 3, 0o644), "allow")
			expect("fchmod 06755", f.run(id, nr("fchmod"), 3, 0o6755), eperm)
			expect("openat O_RDONLY, mode garbage", f.run(id, nr("openat"), 0, 0, 0, 0o4755), "allow")
			expect("openat O_CREAT 0644", f.run(id, nr("openat"), 0, 0, syscall.O_CREAT, 0o644), "allow")
			expect("openat O_CREAT 04755", f.run(id, nr("openat"), 0, 0, syscall.O_CREAT, 0o4755), eperm)
			expect("openat O_TMPFILE 02755", f.run(id, nr("openat"), 0, 0, 0x400000, 0o2755), eperm)
			expect("mknodat 04755", f.run(id, nr("mknodat"), 0, 0, syscall.S_IFREG|0o4755), eperm)
			expect("mknodat fifo", f.run(id, nr("mknodat"), 0, 0, syscall.S_IFIFO|0o644), "allow")
		})
	}
}

// Every name the filter lists is a call of x86_64's or aarch64's table: a
// misspelt name would leave its call to the default.
func TestFilterNamesAreCalls(t *testing.T) {
	var names []string
	for _, g := range allowed {
		names = append(names, g...)
	}
	for _, r := range filterRules {
		names = append(names, r.names...)
	}
	for _, name := range names {
		_, x := arch.X86_64.SyscallNames[name]
		_, a := arch.AARCH64.SyscallNames[name]
		if !x && !a {
			t.Errorf("%s is not a call of x86_64 or aarch64", name)
		}
	}
	// What each table has that the filter does not name (refused with
	// EPERM), for review.
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		named := map[string]bool{}
		for _, n := range names {
			named[n] = true
		}
		var rest []string
		for _, name := range callTable(a) {
			if !named[name] {
				rest = append(rest, name)
			}
		}
		sort.Strings(rest)
		t.Logf("%s: refused without being named: %s", a.Name, strings.Join(rest, " "))
	}
}

// workload is what tasks do inside, as a shell tool's commands: Python
// (threads, processes, SQLite, asyncio over loopback), git, tar and zip,
// dpkg and apt installing a package, users, processes, editors, a web
// server and curl. Each step says "ok NAME".
const workload = `set -euo pipefail
cd /root
python3 - <<'PY'
import asyncio, hashlib, json, multiprocessing, sqlite3, subprocess, threading
db = sqlite3.connect("/root/t.db")
db.execute("create table t(x)")
db.executemany("insert into t values(?)", [(i,) for i in range(100)])
db.commit()
assert db.execute("select sum(x) from t").fetchone()[0] == 4950
assert subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout == "hi\n"
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i * i)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
assert sorted(out) == [i * i for i in range(8)]
with multiprocessing.Pool(2) as p:
    assert p.map(abs, [-1, -2]) == [1, 2]
async def main():
    async def pong(r, w):
        w.write(b"pong")
        await w.drain()
        w.close()
    server = await asyncio.start_server(pong, "127.0.0.1", 0)
    r, w = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    data = await r.read()
    server.close()
    return data
assert asyncio.run(main()) == b"pong"
json.dumps({"h": hashlib.sha256(b"x").hexdigest()})
print("ok python")
PY
python3 -m pip --version >/dev/null && echo "ok pip"
git init -q repo && cd repo && git config user.email t@example.com && git config user.name t
echo hello > f && git add f && git commit -qm one && git log --oneline | grep -q one && git gc -q && cd ..
echo "ok git"
tar czf repo.tgz repo && mkdir x && tar xzf repo.tgz -C x && diff -r repo x/repo && echo "ok tar"
zip -qr repo.zip repo && unzip -qo repo.zip -d z && diff -r repo z/repo && echo "ok zip"
mkdir -p pkg/DEBIAN pkg/usr/local/bin
printf 'Package: saucer-probe\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.com>\nDescription: probe\n' > pkg/DEBIAN/control
printf '#!/bin/sh\necho installed\n' > pkg/usr/local/bin/saucer-probe
chmod 755 pkg/usr/local/bin/saucer-probe
dpkg-deb --build --root-owner-group pkg saucer-probe.deb >/dev/null
dpkg -i saucer-probe.deb >/dev/null && saucer-probe | grep -q installed && dpkg -l saucer-probe | grep -q '^ii'
dpkg -r saucer-probe >/dev/null && ! command -v saucer-probe >/dev/null && echo "ok dpkg"
apt-get install -y -qq ./saucer-probe.deb >/dev/null 2>&1 && saucer-probe | grep -q installed && apt-get remove -y -qq saucer-probe >/dev/null 2>&1
apt-cache policy saucer-probe >/dev/null && echo "ok apt"
useradd -m saucerprobe && mkdir /srv/data && chown -R saucerprobe: /srv/data
[ "$(setpriv --reuid saucerprobe --regid saucerprobe --init-groups sh -c 'touch /srv/data/mine; id -un')" = saucerprobe ]
[ "$(stat -c %U /srv/data/mine)" = saucerprobe ] && [ "$(su saucerprobe -c 'id -un')" = saucerprobe ] && echo "ok users"
sleep 30 & pid=$!
ps -p $pid >/dev/null && kill $pid && ! wait $pid && top -bn1 >/dev/null && echo "ok processes"
sed -i 's/hello/bye/' repo/f && vim -Es -c '%s/bye/vim/' -c wq repo/f && grep -q vim repo/f
find / -xdev -path /proc -prune -o -name passwd -print | grep -q '^/etc/passwd$' && awk -F: '$1 == "saucerprobe"' /etc/passwd | grep -q saucerprobe
sort /etc/passwd | sha256sum >/dev/null && seq 1000 | xargs -n 100 echo | wc -l | grep -q 10 && echo "ok text"
python3 -m http.server --bind 127.0.0.1 8123 >/dev/null 2>&1 & web=$!
curl -fs --retry 50 --retry-connrefused --retry-delay 1 --max-time 60 -o /dev/null http://127.0.0.1:8123/repo.tgz && echo "ok curl"
kill $web
`

// unknownCalls makes system calls the filter does not allow: 467
// (open_tree_attr, Linux 6.15, a mount call), 469 (file_setattr, Linux
// 6.17, newer than the filter's table) and 1000 (no call), and prints
// "nr errno".
const unknownCalls = `python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for nr in (467, 469, 1000):
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    print(nr, ctypes.get_errno() if r < 0 else 0)'`

// A system call unknown to the filter is refused inside, while what tasks
// ordinarily run still works.
func TestUnknownCallsAreRefusedOrdinaryProgramsRun(t *testing.T) {
	s := need(t, Options{Work: t.TempDir()})
	for _, tool := range []string{"bash", "python3", "git", "tar", "dpkg-deb", "apt-get", "useradd", "curl", "vim", "zip", "ps"} {
		if out, _ := run(t, s, "command -v "+tool); out == "" {
			t.Fatalf("the sandbox's root has no %s: the workload needs the image root (docs/sandbox.md builds it)", tool)
		}
	}
	out, code := run(t, s, unknownCalls)
	if code != 0 {
		t.Fatalf("probe: exit %d: %s", code, out)
	}
	eperm, enosys := strconv.Itoa(int(syscall.EPERM)), strconv.Itoa(int(syscall.ENOSYS))
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if nr, errno, ok := strings.Cut(line, " "); ok {
			got[nr] = errno
		}
	}
	for _, nr := range []string{"467", "469", "1000"} {
		if got[nr] != eperm && got[nr] != enosys {
			t.Errorf("call %s inside: errno %q, want %s (EPERM) or %s (ENOSYS)", nr, got[nr], eperm, enosys)
		}
	}
	if got["1000"] != enosys {
		t.Errorf("call 1000 (none) inside: errno %q, want ENOSYS", got["1000"])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := s.Command(ctx, "", nil, "/bin/bash", "-c", workload)
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	for _, step := range []string{"python", "pip", "git", "tar", "zip", "dpkg", "apt", "users", "processes", "text", "curl"} {
		if !strings.Contains(string(b), "ok "+step+"\n") {
			t.Errorf("the workload's %s step did not finish", step)
		}
	}
	if err != nil || t.Failed() {
		t.Errorf("workload: %v\n%s", err, b)
	}
}
