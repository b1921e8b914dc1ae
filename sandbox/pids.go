package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// HostPID is the host's id of the process that has id pid inside the
// sandbox, or 0 when no process inside has it. Processes inside know
// themselves, and each other, by their ids in the sandbox's PID namespace
// (what a bus or a display server inside reports of its peers); the host
// (signals, /proc) knows them by others. The kernel lists a process's id
// in every namespace it is in on the NSpid line of /proc/PID/status,
// outermost first: the one inside is the last.
func (s *Sandbox) HostPID(pid int) int {
	if pid <= 0 {
		return 0
	}
	inst, err := s.running(context.Background())
	if err != nil {
		return 0
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", inst.pid))
	if err != nil {
		return 0
	}
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	if h, ok := s.hostPIDs[pid]; ok && insidePID(h, ns) == pid {
		return h
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		h, err := strconv.Atoi(e.Name())
		if err != nil || h <= 0 {
			continue
		}
		if insidePID(h, ns) == pid {
			if s.hostPIDs == nil {
				s.hostPIDs = map[int]int{}
			}
			s.hostPIDs[pid] = h
			return h
		}
	}
	return 0
}

// insidePID is host process h's id in the PID namespace ns ("pid:[N]",
// as /proc/PID/ns/pid reads), or 0 when h is not in it. A process forked
// inside a sandbox lives in its namespace alone (no deeper one: the
// seccomp filter refuses new namespaces), so the namespace of h's own ids
// is the sandbox's exactly when its link reads ns.
func insidePID(h int, ns string) int {
	if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", h)); err != nil || l != ns {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(v)
			if len(f) < 2 {
				return 0 // the host's own namespace: not inside
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}
