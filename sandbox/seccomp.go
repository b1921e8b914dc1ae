package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// The seccomp filter every process in a sandbox runs under. It is an
// allow list in the manner of Docker's default profile: the system calls
// an ordinary program makes are allowed, some only with harmless
// arguments; every other call the filter knows is refused with EPERM
// (never a kill), and a call it does not know (newer than its table, or
// no call at all) fails with ENOSYS, which is what a kernel without the
// call says and what makes the C library fall back to an older one. So a
// call added to the kernel later is refused until it is named here. The
// namespaces and the dropped capabilities are the boundary; the filter
// takes away kernel interfaces that root inside does not need and that
// namespaces do not cover (the kernel keyring, new user namespaces, BPF,
// perf, io_uring), and whatever the kernel adds next. docs/sandbox.md
// lists the calls.

// allowed are the system calls allowed with any arguments, by the names
// of the native tables (x86_64 and aarch64; a name one of them lacks is
// skipped there). They are those of Docker's default profile for a
// container with its default capabilities, less the ones refused below,
// plus setns and chroot (nsenter makes them on its way in, under the
// filter; without CAP_SYS_ADMIN the kernel refuses setns to what runs
// inside, and chroot stays within the sandbox's root).
var allowed = [][]string{
	// Files and descriptors.
	{"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
		"lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl", "flock", "ioctl", "pipe", "pipe2",
		"stat", "fstat", "lstat", "newfstatat", "fstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
		"faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "mkdir",
		"mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
		"symlinkat", "truncate", "ftruncate", "fallocate", "fadvise64", "readahead", "fsync", "fdatasync", "sync",
		"syncfs", "sync_file_range", "umask", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
		"utimensat", "futimesat", "sendfile", "splice", "tee", "vmsplice", "copy_file_range", "name_to_handle_at",
		"cachestat", "setxattr", "lsetxattr", "fsetxattr", "getxattr", "lgetxattr", "fgetxattr", "listxattr",
		"llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr", "setxattrat", "getxattrat",
		"listxattrat", "removexattrat", "statmount", "listmount"},
	// Waiting for events; asynchronous I/O (not io_uring).
	{"select", "pselect6", "poll", "ppoll", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
		"epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4", "timerfd_create",
		"timerfd_settime", "timerfd_gettime", "inotify_init", "inotify_init1", "inotify_add_watch",
		"inotify_rm_watch", "fanotify_mark", "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
		"io_pgetevents"},
	// Memory.
	{"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "mlock", "mlock2", "munlock",
		"mlockall", "munlockall", "remap_file_pages", "memfd_create", "memfd_secret", "membarrier", "pkey_alloc",
		"pkey_free", "pkey_mprotect", "map_shadow_stack", "mseal"},
	// Processes, threads, scheduling, limits.
	{"execve", "execveat", "fork", "vfork", "exit", "exit_group", "wait4", "waitid", "kill", "tkill", "tgkill",
		"getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid", "set_tid_address",
		"set_robust_list", "get_robust_list", "futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
		"rseq", "restart_syscall", "prctl", "arch_prctl", "modify_ldt", "set_thread_area", "get_thread_area",
		"getpriority", "setpriority", "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
		"sched_setparam", "sched_getscheduler", "sched_setscheduler", "sched_get_priority_max",
		"sched_get_priority_min", "sched_rr_get_interval", "sched_getattr", "sched_setattr", "getcpu",
		"getrusage", "getrlimit", "setrlimit", "prlimit64", "times", "sysinfo", "uname", "ioprio_get",
		"ioprio_set", "pidfd_open", "pidfd_send_signal", "process_mrelease", "seccomp", "landlock_create_ruleset",
		"landlock_add_rule", "landlock_restrict_self", "capget", "capset", "uretprobe", "getrandom"},
	// Users and groups (root inside has CAP_SETUID and CAP_SETGID).
	{"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid", "setgid",
		"setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups"},
	// Signals, timers, clocks (reading them).
	{"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait", "rt_sigqueueinfo",
		"rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack", "pause", "alarm", "nanosleep", "clock_nanosleep",
		"getitimer", "setitimer", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
		"timer_delete", "time", "gettimeofday", "clock_gettime", "clock_getres"},
	// Sockets (socket itself is a rule below) and System V and POSIX IPC
	// (the sandbox has an IPC namespace of its own).
	{"socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername", "sendto",
		"recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "setsockopt", "getsockopt", "shutdown",
		"msgget", "msgctl", "msgrcv", "msgsnd", "semget", "semctl", "semop", "semtimedop", "shmget", "shmctl",
		"shmat", "shmdt", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"},
	// Entering: nsenter joins the sandbox's namespaces and root under the
	// filter.
	{"setns", "chroot"},
}

// filterRule refuses the named calls with errno; a rule with conditions
// refuses only the calls whose arguments match every one of them and
// allows the rest.
type filterRule struct {
	why   string
	names []string
	errno syscall.Errno
	when  []argTest
}

// argTest is a condition on argument arg's low 32 bits (the arguments
// tested are ints, modes and flags that fit in them): any of bits set,
// equal to one of in, or equal to none of notIn.
type argTest struct {
	arg   int
	bits  uint32
	in    []uint32
	notIn []uint32
}

const (
	cloneNewNamespaces = syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC |
		syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | 0x02000000 // CLONE_NEWCGROUP
	setID      = syscall.S_ISUID | syscall.S_ISGID
	openCreate = syscall.O_CREAT | 0x400000 // O_CREAT or __O_TMPFILE: the mode is used
	afALG      = 38
	afVSOCK    = 40
)

var filterRules = []filterRule{
	// Refused outright (a known call that is neither allowed nor here is
	// refused too; these are named for the reason, and for docs).
	{why: "the kernel keyring is shared with the host", errno: syscall.EPERM,
		names: []string{"keyctl", "add_key", "request_key"}},
	{why: "no new namespaces (a new user namespace gives back every capability)", errno: syscall.EPERM,
		names: []string{"unshare"}},
	{why: "clone3's flags cannot be read by a filter: ENOSYS makes the C library use clone", errno: syscall.ENOSYS,
		names: []string{"clone3"}},
	{why: "no mounts", errno: syscall.EPERM,
		names: []string{"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
			"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}},
	{why: "no kernel programs or tracing of the kernel", errno: syscall.EPERM,
		names: []string{"bpf", "perf_event_open", "lookup_dcookie", "userfaultfd", "fanotify_init"}},
	{why: "no io_uring (a large kernel surface that Docker refuses too)", errno: syscall.EPERM,
		names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}},
	{why: "no tracing or reading of other processes", errno: syscall.EPERM,
		names: []string{"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd"}},
	{why: "no kernels or modules", errno: syscall.EPERM,
		names: []string{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
			"create_module", "get_kernel_syms", "query_module"}},
	{why: "no host-wide settings", errno: syscall.EPERM,
		names: []string{"reboot", "swapon", "swapoff", "acct", "syslog", "vhangup", "quotactl", "quotactl_fd",
			"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "iopl", "ioperm", "nfsservctl", "_sysctl",
			"uselib", "ustat", "sysfs", "open_by_handle_at", "sethostname", "setdomainname"}},
	{why: "no NUMA memory policies (CAP_SYS_NICE, which root inside lacks)", errno: syscall.EPERM,
		names: []string{"mbind", "get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages", "move_pages"}},
	{why: "no security-module attributes (CAP_SYS_ADMIN in Docker's profile)", errno: syscall.EPERM,
		names: []string{"lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules"}},
	{why: "openat2's mode cannot be read by a filter: ENOSYS makes programs use openat", errno: syscall.ENOSYS,
		names: []string{"openat2"}},

	// Allowed but for some arguments.
	{why: "no new namespaces", errno: syscall.EPERM,
		names: []string{"clone"}, when: []argTest{{arg: 0, bits: cloneNewNamespaces}}},
	{why: "only the execution domains Docker allows (Linux, 32-bit, uname26, and the query)", errno: syscall.EPERM,
		names: []string{"personality"}, when: []argTest{{arg: 0, notIn: []uint32{0, 0x8, 0x20000, 0x20008, 0xffffffff}}}},
	{why: "no kernel crypto or VM sockets (AF_ALG, AF_VSOCK), as in Docker", errno: syscall.EPERM,
		names: []string{"socket"}, when: []argTest{{arg: 0, in: []uint32{afALG, afVSOCK}}}},
	// A setuid-root file left in the working folder, a host folder, would
	// give root to whoever runs it there: no call may make one.
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"chmod", "fchmod"}, when: []argTest{{arg: 1, bits: setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"fchmodat", "fchmodat2", "mknodat"}, when: []argTest{{arg: 2, bits: setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"mknod", "creat"}, when: []argTest{{arg: 1, bits: setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"open"}, when: []argTest{{arg: 1, bits: openCreate}, {arg: 2, bits: setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"openat"}, when: []argTest{{arg: 2, bits: openCreate}, {arg: 3, bits: setID}}},
}

// filterArches are the system call tables the filter tells apart on this
// machine: the native one, whose calls the rules judge, and the 32-bit one
// the kernel also accepts (i386 through int 0x80 on x86_64, arm on arm64),
// whose every call is refused: a 64-bit process has no use for it, and a
// second table is a second way round the rules. x32 calls on x86_64 and
// calls of any other architecture fail with ENOSYS.
func filterArches() (native, compat *arch.Info, err error) {
	switch runtime.GOARCH {
	case "amd64":
		return arch.X86_64, arch.I386, nil
	case "arm64":
		return arch.AARCH64, arch.ARM, nil
	}
	return nil, nil, fmt.Errorf("%w: the sandbox's seccomp filter is made for amd64 and arm64, not %s", ErrUnsupported, runtime.GOARCH)
}

const (
	retAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO | errno
	// Offsets in struct seccomp_data (little-endian machines).
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// verdict is what the filter does with one call number of the native
// table: return ret, or run the conditional rule.
type verdict struct {
	ret  uint32
	rule *filterRule
}

// callTable is the filter's view of a native table: the calls it knows, by
// number. The aarch64 table also names the 32-bit arm time64 calls, which
// arm64 lacks: they are left unknown.
func callTable(a *arch.Info) map[int]string {
	out := make(map[int]string, len(a.SyscallNumbers))
	for nr, name := range a.SyscallNumbers {
		if a == arch.AARCH64 && (strings.HasSuffix(name, "time64") || name == "arch_specific_syscall") {
			continue
		}
		out[nr] = name
	}
	return out
}

// verdicts judges every call number of a native table: allowed, a rule's,
// refused with EPERM (known, not allowed), and, beyond the returned
// slice's end and in its gaps, ENOSYS. A name both allowed and in a rule,
// or in two rules, is a mistake in this file.
func verdicts(a *arch.Info) ([]verdict, error) {
	table := callTable(a)
	how := map[string]verdict{}
	for _, group := range allowed {
		for _, name := range group {
			if _, dup := how[name]; dup {
				return nil, fmt.Errorf("sandbox: seccomp: %s is allowed twice", name)
			}
			how[name] = verdict{ret: retAllow}
		}
	}
	for i := range filterRules {
		r := &filterRules[i]
		for _, name := range r.names {
			if _, dup := how[name]; dup {
				return nil, fmt.Errorf("sandbox: seccomp: %s is both allowed and in a rule, or in two rules", name)
			}
			if len(r.when) == 0 {
				how[name] = verdict{ret: retErrno | uint32(r.errno)}
			} else {
				how[name] = verdict{rule: r}
			}
		}
	}
	top := 0
	for nr := range table {
		top = max(top, nr)
	}
	out := make([]verdict, top+1)
	for nr := range out {
		name, known := table[nr]
		switch v, named := how[name]; {
		case !known:
			out[nr] = verdict{ret: retErrno | uint32(syscall.ENOSYS)}
		case named:
			out[nr] = v
		default:
			out[nr] = verdict{ret: retErrno | uint32(syscall.EPERM)}
		}
	}
	return out, nil
}

// assembleFilter builds the filter as classic BPF instructions: dispatch
// on the architecture, then a binary search over runs of call numbers
// with the same verdict (a few comparisons per call, where a chain of
// several hundred would be tested in turn).
func assembleFilter(native, compat *arch.Info) ([]bpf.Instruction, error) {
	vs, err := verdicts(native)
	if err != nil {
		return nil, err
	}
	// Leaves: runs of equal constant verdicts, and each ruled call alone.
	type leaf struct {
		lo   uint32
		code []bpf.Instruction
	}
	var leaves []leaf
	for nr := 0; nr < len(vs); {
		v := vs[nr]
		if v.rule != nil {
			leaves = append(leaves, leaf{uint32(nr), ruleInstructions(*v.rule)})
			nr++
			continue
		}
		end := nr + 1
		for end < len(vs) && vs[end].rule == nil && vs[end].ret == v.ret {
			end++
		}
		leaves = append(leaves, leaf{uint32(nr), []bpf.Instruction{bpf.RetConstant{Val: v.ret}}})
		nr = end
	}
	// Beyond the table (x32 calls, bit 30 set, among them): unknown.
	leaves = append(leaves, leaf{uint32(len(vs)), []bpf.Instruction{bpf.RetConstant{Val: retErrno | uint32(syscall.ENOSYS)}}})

	// search: the accumulator holds the call number; every leaf returns.
	var search func(ls []leaf) []bpf.Instruction
	search = func(ls []leaf) []bpf.Instruction {
		if len(ls) == 1 {
			return ls[0].code
		}
		mid := len(ls) / 2
		low, high := search(ls[:mid]), search(ls[mid:])
		// nr >= ls[mid].lo: the long jump over the low half; else the low half.
		out := []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: ls[mid].lo, SkipTrue: 0, SkipFalse: 1},
			bpf.Jump{Skip: uint32(len(low))}}
		out = append(out, low...)
		return append(out, high...)
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 3},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(compat.ID), SkipFalse: 1},
		bpf.RetConstant{Val: retErrno | uint32(syscall.EPERM)},  // the 32-bit ABI
		bpf.RetConstant{Val: retErrno | uint32(syscall.ENOSYS)}, // another architecture
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	prog = append(prog, search(leaves)...)
	if len(prog) > 4096 { // BPF_MAXINSNS
		return nil, fmt.Errorf("sandbox: seccomp filter of %d instructions, more than the kernel takes", len(prog))
	}
	return prog, nil
}

// ruleInstructions test a conditional rule's arguments for a call already
// known by its number: every test holds, refuse; else allow.
func ruleInstructions(r filterRule) []bpf.Instruction {
	size := func(t argTest) int {
		switch {
		case t.bits != 0:
			return 2
		case t.in != nil:
			return 1 + len(t.in)
		}
		return 1 + len(t.notIn)
	}
	starts := []int{0}
	for _, t := range r.when {
		starts = append(starts, starts[len(starts)-1]+size(t))
	}
	deny := starts[len(starts)-1] // then allow, right after
	allow := deny + 1
	var out []bpf.Instruction
	skip := func(to int) uint8 { return uint8(to - len(out) - 1) }
	for i, t := range r.when {
		next := starts[i+1]
		out = append(out, bpf.LoadAbsolute{Off: uint32(offArgs + 8*t.arg), Size: 4})
		switch {
		case t.bits != 0:
			out = append(out, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: t.bits, SkipTrue: skip(next), SkipFalse: skip(allow)})
		case t.in != nil:
			for k, v := range t.in {
				no := len(out) + 1 // the next value's test
				if k == len(t.in)-1 {
					no = allow
				}
				out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: skip(next), SkipFalse: skip(no)})
			}
		default:
			for _, v := range t.notIn {
				out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: skip(allow), SkipFalse: 0})
			}
		}
	}
	return append(out, bpf.RetConstant{Val: retErrno | uint32(r.errno)}, bpf.RetConstant{Val: retAllow})
}

var filterOnce = sync.OnceValues(func() ([]byte, error) {
	native, compat, err := filterArches()
	if err != nil {
		return nil, err
	}
	prog, err := assembleFilter(native, compat)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	// struct sock_filter, as bwrap --seccomp and seccomp(2) read it.
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out, nil
})

// seccompFilter is the filter as struct sock_filter entries, native
// (little-endian) byte order.
func seccompFilter() ([]byte, error) { return filterOnce() }
