package sandbox

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Commands enter a running sandbox through nsenter, which is not a child
// of the sandbox's first process and so does not inherit the seccomp
// filter bwrap gave it. The filter has to be put on each of them before it
// runs anything, by a process that calls seccomp(2) and then exec(2).
// Neither nsenter nor setpriv (util-linux 2.38) can, a Go program cannot do
// it between fork and exec, and re-running Saucer's own binary as that
// helper costs ~20 ms of CPU per command (its package initialisers) and
// runs whatever initialisers a program that embeds Saucer has. So the
// helper is a static executable of ~100 instructions, written here as
// machine code for amd64 and arm64 and kept in a memory file:
//
//	prctl(PR_SET_NO_NEW_PRIVS, 1)
//	seccomp(SECCOMP_SET_MODE_FILTER, 0, &filter)
//	execve(argv[1], argv+1, envp)
//	on any failure: write a line to stderr, exit 126
//
// It runs first, on the host, as root: what it execs (nsenter, setpriv,
// the command) runs under the filter, which lets nsenter join the
// sandbox's namespaces (setns is allowed; without CAP_SYS_ADMIN, which root
// inside lacks, the kernel refuses it to the command).

const helperBase = 0x400000 // load address of the helper's one segment

const helperFailure = "saucer sandbox: could not put the seccomp filter on a command (prctl or seccomp failed), or exec failed\n"

// buildHelper is the helper's executable for this machine, filter inside.
func buildHelper(filter []byte) ([]byte, error) {
	var machine elf.Machine
	var code func(fprog, msg uint64, msgLen uint32) []byte
	switch runtime.GOARCH {
	case "amd64":
		machine, code = elf.EM_X86_64, helperAMD64
	case "arm64":
		machine, code = elf.EM_AARCH64, helperARM64
	default:
		return nil, fmt.Errorf("%w: no seccomp helper for %s", ErrUnsupported, runtime.GOARCH)
	}
	const headers = 64 + 56 // ELF header, one program header
	// Layout: headers, code, message, struct sock_fprog, filter. The code's
	// length does not depend on the addresses it holds.
	codeLen := len(code(0, 0, 0))
	msgOff := headers + codeLen
	fprogOff := align8(msgOff + len(helperFailure))
	filterOff := fprogOff + 16
	size := filterOff + len(filter)

	var b bytes.Buffer
	le := binary.LittleEndian
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Entry: helperBase + headers, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&b, le, hdr)
	binary.Write(&b, le, elf.Prog64{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Off: 0, Vaddr: helperBase, Paddr: helperBase,
		Filesz: uint64(size), Memsz: uint64(size), Align: 0x1000,
	})
	b.Write(code(helperBase+uint64(fprogOff), helperBase+uint64(msgOff), uint32(len(helperFailure))))
	b.WriteString(helperFailure)
	b.Write(make([]byte, fprogOff-b.Len()))
	// struct sock_fprog { unsigned short len; struct sock_filter *filter; }
	binary.Write(&b, le, uint16(len(filter)/8))
	b.Write(make([]byte, 6))
	binary.Write(&b, le, uint64(helperBase+filterOff))
	b.Write(filter)
	if b.Len() != size {
		return nil, fmt.Errorf("sandbox: seccomp helper is %d bytes, want %d", b.Len(), size)
	}
	return b.Bytes(), nil
}

func align8(n int) int { return (n + 7) &^ 7 }

// helperAMD64 is the helper's code for x86-64 (Linux system call numbers
// of x86-64; at the entry point the stack holds argc, argv..., 0, envp...).
func helperAMD64(fprog, msg uint64, msgLen uint32) []byte {
	var c []byte
	u32 := func(v uint32) { c = binary.LittleEndian.AppendUint32(c, v) }
	u64 := func(v uint64) { c = binary.LittleEndian.AppendUint64(c, v) }
	var toFail []int // positions of rel8 jumps to the failure path
	jne := func() { c = append(c, 0x75, 0); toFail = append(toFail, len(c)) }

	c = append(c, 0xb8)
	u32(157) // mov eax, SYS_prctl
	c = append(c, 0xbf)
	u32(38) // mov edi, PR_SET_NO_NEW_PRIVS
	c = append(c, 0xbe)
	u32(1)                          // mov esi, 1
	c = append(c, 0x31, 0xd2)       // xor edx, edx
	c = append(c, 0x45, 0x31, 0xd2) // xor r10d, r10d
	c = append(c, 0x45, 0x31, 0xc0) // xor r8d, r8d
	c = append(c, 0x0f, 0x05)       // syscall
	c = append(c, 0x85, 0xc0)       // test eax, eax
	jne()                           // jne fail
	c = append(c, 0xb8)
	u32(317) // mov eax, SYS_seccomp
	c = append(c, 0xbf)
	u32(1)                    // mov edi, SECCOMP_SET_MODE_FILTER
	c = append(c, 0x31, 0xf6) // xor esi, esi
	c = append(c, 0x48, 0xba)
	u64(fprog)                                  // movabs rdx, fprog
	c = append(c, 0x0f, 0x05)                   // syscall
	c = append(c, 0x85, 0xc0)                   // test eax, eax
	jne()                                       // jne fail
	c = append(c, 0x48, 0x8b, 0x0c, 0x24)       // mov rcx, [rsp]          argc
	c = append(c, 0x48, 0x8d, 0x74, 0x24, 0x10) // lea rsi, [rsp+16]       argv+1
	c = append(c, 0x48, 0x8b, 0x3e)             // mov rdi, [rsi]          argv[1]
	c = append(c, 0x48, 0x8d, 0x54, 0xcc, 0x10) // lea rdx, [rsp+rcx*8+16] envp
	c = append(c, 0xb8)
	u32(59)                   // mov eax, SYS_execve
	c = append(c, 0x0f, 0x05) // syscall (returns only on failure)
	fail := len(c)
	c = append(c, 0xb8)
	u32(1) // mov eax, SYS_write
	c = append(c, 0xbf)
	u32(2) // mov edi, 2
	c = append(c, 0x48, 0xbe)
	u64(msg) // movabs rsi, msg
	c = append(c, 0xba)
	u32(msgLen)               // mov edx, msgLen
	c = append(c, 0x0f, 0x05) // syscall
	c = append(c, 0xbf)
	u32(126) // mov edi, 126
	c = append(c, 0xb8)
	u32(231)                  // mov eax, SYS_exit_group
	c = append(c, 0x0f, 0x05) // syscall
	for _, at := range toFail {
		c[at-1] = byte(fail - at)
	}
	return c
}

// helperARM64 is the helper's code for AArch64 (the generic system call
// numbers; at the entry point sp points at argc, argv..., 0, envp...).
func helperARM64(fprog, msg uint64, msgLen uint32) []byte {
	var ins []uint32
	movz := func(rd uint32, imm uint16) { ins = append(ins, 0xd2800000|uint32(imm)<<5|rd) } // mov xd, #imm
	svc := func() { ins = append(ins, 0xd4000001) }                                         // svc #0
	var toFail []int
	cbnz := func() { toFail = append(toFail, len(ins)); ins = append(ins, 0xb5000000) } // cbnz x0, fail
	// ldr xd, =addr: a literal placed after the code.
	type literal struct {
		at   int
		addr uint64
	}
	var lits []literal
	ldr := func(rd uint32, addr uint64) {
		lits = append(lits, literal{len(ins), addr})
		ins = append(ins, 0x58000000|rd)
	}

	movz(0, 38)  // PR_SET_NO_NEW_PRIVS
	movz(1, 1)   //
	movz(2, 0)   //
	movz(3, 0)   //
	movz(4, 0)   //
	movz(8, 167) // SYS_prctl
	svc()
	cbnz()
	movz(0, 1) // SECCOMP_SET_MODE_FILTER
	movz(1, 0)
	ldr(2, fprog)
	movz(8, 277) // SYS_seccomp
	svc()
	cbnz()
	ins = append(ins, 0xf94003e9) // ldr x9, [sp]            argc
	ins = append(ins, 0x910043e1) // add x1, sp, #16          argv+1
	ins = append(ins, 0xf9400020) // ldr x0, [x1]             argv[1]
	ins = append(ins, 0x8b296fe2) // add x2, sp, x9, uxtx #3  sp + 8*argc
	ins = append(ins, 0x91004042) // add x2, x2, #16          envp
	movz(8, 221)                  // SYS_execve
	svc()
	fail := len(ins)
	movz(0, 2)
	ldr(1, msg)
	movz(2, uint16(msgLen))
	movz(8, 64) // SYS_write
	svc()
	movz(0, 126)
	movz(8, 94) // SYS_exit_group
	svc()
	for _, at := range toFail {
		ins[at] |= uint32(fail-at) << 5
	}
	// Literals, 8-byte aligned (the code starts 8-byte aligned).
	if len(ins)%2 == 1 {
		ins = append(ins, 0xd503201f) // nop
	}
	code := make([]byte, 0, 4*len(ins)+8*len(lits))
	for i, l := range lits {
		litIndex := len(ins) + 2*i // in instructions
		ins[l.at] |= uint32(litIndex-l.at) << 5
	}
	for _, w := range ins {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	for _, l := range lits {
		code = binary.LittleEndian.AppendUint64(code, l.addr)
	}
	return code
}

// helperPath is a path the host can exec the helper by: a memory file of
// this process, made once. It lives as long as the process, as do its
// sandboxes.
var helperPath = sync.OnceValues(func() (string, error) {
	filter, err := seccompFilter()
	if err != nil {
		return "", err
	}
	exe, err := buildHelper(filter)
	if err != nil {
		return "", err
	}
	fd, err := unix.MemfdCreate("saucer-sandbox-enter", unix.MFD_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("sandbox: seccomp helper: %w", err)
	}
	f := os.NewFile(uintptr(fd), "saucer-sandbox-enter")
	if _, err := f.Write(exe); err != nil {
		f.Close()
		return "", fmt.Errorf("sandbox: seccomp helper: %w", err)
	}
	// Kept open for good: the path below names it.
	helperFile = f
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd), nil
})

var helperFile *os.File
