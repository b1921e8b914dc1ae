// Package owner names what a process leaves behind it (a temporary
// folder, a cgroup) with that process: "PID.START", its PID and its start
// time in clock ticks since boot. A later process tells from the name
// whether the owner still runs (a reused PID has another start time) and
// removes only what owners that are gone left.
package owner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Tag is this process's owner tag, PID.START.
var Tag = sync.OnceValue(func() string {
	return fmt.Sprintf("%d.%d", os.Getpid(), StartTime(os.Getpid()))
})

// StartTime is a process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), or 0 if it is not running.
func StartTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold anything.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // fields 3...
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// Alive reports whether the owner named by tag (PID.START) still runs;
// ok is false for a tag that names no owner: what carries one is left
// alone.
func Alive(tag string) (alive, ok bool) {
	pidText, startText, found := strings.Cut(tag, ".")
	pid, err1 := strconv.Atoi(pidText)
	start, err2 := strconv.ParseUint(startText, 10, 64)
	if !found || err1 != nil || err2 != nil || pid <= 0 {
		return false, false
	}
	return StartTime(pid) == start, true
}
