//go:build !linux

package shell

import "syscall"

// dieWithParent is Linux-only (PR_SET_PDEATHSIG).
func dieWithParent(*syscall.SysProcAttr) {}

// killTagged is Linux-only: elsewhere a timeout kills the process group.
func killTagged(string) {}
