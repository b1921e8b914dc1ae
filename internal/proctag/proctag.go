// Package proctag finds and kills the processes a Saucer component
// started, by a tag in their environment (NAME=value). A process that
// leaves its parent's process group (setsid, a double fork) still carries
// the environment it was started with, so the tag finds what a process
// group would lose; a process that clears its environment is not found.
// It reads /proc: elsewhere it finds nothing.
package proctag

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Each calls fn with the PID and tag value of every live process (not a
// zombie, not this one) whose environment sets name.
func Each(name string, fn func(pid int, value string)) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	prefix := []byte(name + "=")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, prefix); ok {
				if !Zombie(pid) {
					fn(pid, string(v))
				}
				break
			}
		}
	}
}

// Kill sends SIGKILL to every process whose environment sets name to
// value, and again while it finds some (a dying parent may fork once
// more), for up to wait.
func Kill(name, value string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for {
		found := false
		Each(name, func(pid int, v string) {
			if v == value && syscall.Kill(pid, syscall.SIGKILL) == nil {
				found = true
			}
		})
		if !found || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond) // SIGKILL is delivered, not awaited
	}
}

// Zombie reports whether a process has ended (and waits for its parent
// to reap it) or is gone.
func Zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
}

// Command is a process's command line, its arguments joined by spaces,
// for messages that say what was left running.
func Command(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
