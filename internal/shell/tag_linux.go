package shell

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// dieWithParent has the process started with attr killed when the thread
// that starts it ends (PR_SET_PDEATHSIG): a command's shell dies with the
// Saucer that ran it, even one killed with SIGKILL, instead of going on as
// an orphan and finishing the command's work while it is done again
// elsewhere. Go ends a thread only when a goroutine locked to it
// (runtime.LockOSThread) returns without unlocking it; no goroutine that
// starts a command does. What the shell started is the watchdog's to kill
// (startWatchdog), or the next Saucer's (sweepGroups).
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// killTagged kills every process whose environment carries tag, as read
// from /proc. It repeats while it finds some, since a dying parent may
// fork once more; a process that cleared its environment is not found
// (docs/rough_edges.md).
func killTagged(tag string) {
	want := []byte(tagVar + "=" + tag + "\x00")
	self := os.Getpid()
	for range 5 {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				found = true
			}
		}
		if !found {
			return
		}
	}
}
