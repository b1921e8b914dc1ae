package shell

import (
	"syscall"
	"time"

	"github.com/saucerhq/saucer/internal/proctag"
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

// killTagged kills every process whose environment carries tag, also
// those that left the command's process group (docs/rough_edges.md: not
// one that cleared its environment).
func killTagged(tag string) { proctag.Kill(tagVar, tag, 2*time.Second) }
