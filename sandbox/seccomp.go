package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"syscall"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// The seccomp filter every process in a sandbox runs under: the system
// calls that Docker's default profile refuses a container without added
// capabilities, refused with EPERM (never a kill), plus the ones that would
// leave a setuid or setgid file in the host's working folder. Everything
// else is allowed: the namespaces and the dropped capabilities are the
// boundary, the filter takes away kernel interfaces that root inside does
// not need and that namespaces do not cover (the kernel keyring, new user
// namespaces, BPF, perf, io_uring). docs/sandbox.md lists the calls.

// filterRule refuses the named calls, or only those whose arguments match
// every condition.
type filterRule struct {
	why   string
	names []string
	errno syscall.Errno
	when  []argBits
}

// argBits matches a call whose argument arg has any of bits set (its low
// 32 bits: flags and modes fit in them).
type argBits struct {
	arg  int
	bits uint32
}

const (
	cloneNewNamespaces = syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC |
		syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | 0x02000000 // CLONE_NEWCGROUP
	setID      = syscall.S_ISUID | syscall.S_ISGID
	openCreate = syscall.O_CREAT | 0x400000 // O_CREAT or __O_TMPFILE: the mode is used
)

var filterRules = []filterRule{
	{why: "the kernel keyring is shared with the host", errno: syscall.EPERM,
		names: []string{"keyctl", "add_key", "request_key"}},
	{why: "no new namespaces (a new user namespace gives back every capability)", errno: syscall.EPERM,
		names: []string{"unshare"}},
	{why: "no new namespaces", errno: syscall.EPERM,
		names: []string{"clone"}, when: []argBits{{0, cloneNewNamespaces}}},
	{why: "clone3's flags cannot be read by a filter: ENOSYS makes the C library use clone", errno: syscall.ENOSYS,
		names: []string{"clone3"}},
	{why: "no mounts", errno: syscall.EPERM,
		names: []string{"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
			"fsmount", "fspick", "mount_setattr"}},
	{why: "no kernel programs or tracing of the kernel", errno: syscall.EPERM,
		names: []string{"bpf", "perf_event_open", "lookup_dcookie", "userfaultfd", "fanotify_init"}},
	{why: "no io_uring (a large kernel surface that Docker refuses too)", errno: syscall.EPERM,
		names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}},
	{why: "no tracing or reading of other processes", errno: syscall.EPERM,
		names: []string{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"}},
	{why: "no kernels or modules", errno: syscall.EPERM,
		names: []string{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
			"create_module", "get_kernel_syms", "query_module"}},
	{why: "no host-wide settings", errno: syscall.EPERM,
		names: []string{"reboot", "swapon", "swapoff", "acct", "syslog", "vhangup", "quotactl", "quotactl_fd",
			"settimeofday", "stime", "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64", "adjtimex",
			"iopl", "ioperm", "nfsservctl", "_sysctl", "uselib", "ustat", "sysfs", "vm86", "vm86old", "open_by_handle_at"}},
	// A setuid-root file left in the working folder, a host folder, would
	// give root to whoever runs it there: no call may make one.
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"chmod", "fchmod"}, when: []argBits{{1, setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"fchmodat", "fchmodat2", "mknodat"}, when: []argBits{{2, setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"mknod", "creat"}, when: []argBits{{1, setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"open"}, when: []argBits{{1, openCreate}, {2, setID}}},
	{why: "no setuid or setgid files", errno: syscall.EPERM,
		names: []string{"openat"}, when: []argBits{{2, openCreate}, {3, setID}}},
	{why: "openat2's mode cannot be read by a filter: ENOSYS makes programs use openat", errno: syscall.ENOSYS,
		names: []string{"openat2"}},
}

// filterArches are the system call tables the filter knows on this
// machine: the native one and the 32-bit one the kernel also accepts. A
// call made with any other (x32 on x86_64 among them) fails with ENOSYS.
func filterArches() ([]*arch.Info, error) {
	switch runtime.GOARCH {
	case "amd64":
		return []*arch.Info{arch.X86_64, arch.I386}, nil
	case "arm64":
		return []*arch.Info{arch.AARCH64, arch.ARM}, nil
	}
	return nil, fmt.Errorf("%w: the sandbox's seccomp filter is made for amd64 and arm64, not %s", ErrUnsupported, runtime.GOARCH)
}

const (
	retAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO | errno
	x32Bit   = 0x40000000 // __X32_SYSCALL_BIT
	// Offsets in struct seccomp_data (little-endian machines).
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// assembleFilter builds the filter as classic BPF instructions.
func assembleFilter(arches []*arch.Info) ([]bpf.Instruction, error) {
	// The program: dispatch on the architecture, then one block per
	// architecture that tests the rules in turn and allows the rest.
	var blocks [][]bpf.Instruction
	for _, a := range arches {
		var b []bpf.Instruction
		b = append(b, bpf.LoadAbsolute{Off: offNr, Size: 4})
		if a == arch.X86_64 {
			// x32 calls carry the same architecture with bit 30 set.
			b = append(b, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
				bpf.RetConstant{Val: retErrno | uint32(syscall.ENOSYS)})
		}
		for _, r := range filterRules {
			for _, name := range r.names {
				nr, ok := a.SyscallNames[name]
				if !ok {
					continue // this architecture has no such call
				}
				b = append(b, ruleInstructions(uint32(nr), r)...)
			}
		}
		b = append(b, bpf.RetConstant{Val: retAllow})
		blocks = append(blocks, b)
	}
	// Dispatch: "if arch == A_i, jump to block i"; else refuse.
	var prog []bpf.Instruction
	prog = append(prog, bpf.LoadAbsolute{Off: offArch, Size: 4})
	dispatch := 2*len(arches) + 1
	offset := 0 // from the end of the dispatch to block i
	for i, a := range arches {
		// Each test is two instructions: the comparison and a long jump.
		after := dispatch - 2*i - 2 // instructions between this jump and the blocks
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.ID), SkipFalse: 1},
			bpf.Jump{Skip: uint32(after + offset)})
		offset += len(blocks[i])
	}
	prog = append(prog, bpf.RetConstant{Val: retErrno | uint32(syscall.ENOSYS)})
	for _, b := range blocks {
		prog = append(prog, b...)
	}
	return prog, nil
}

// ruleInstructions test one call number and the rule's conditions; the
// accumulator holds whatever it held before (they reload the number).
func ruleInstructions(nr uint32, r filterRule) []bpf.Instruction {
	deny := bpf.RetConstant{Val: retErrno | uint32(r.errno)}
	if len(r.when) == 0 {
		return []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, deny}
	}
	// ld nr; jeq nr else next; (ld arg; jset bits else next)...; ret deny
	n := 2 + 2*len(r.when) + 1
	out := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(n - 2)}}
	for i, c := range r.when {
		rest := n - (2 + 2*i + 2) // instructions after this jump up to the next rule
		out = append(out, bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.arg), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.bits, SkipFalse: uint8(rest)})
	}
	return append(out, deny)
}

var filterOnce = sync.OnceValues(func() ([]byte, error) {
	arches, err := filterArches()
	if err != nil {
		return nil, err
	}
	prog, err := assembleFilter(arches)
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
