//go:build !linux

package shell

import "syscall"

// cmdGroup is Linux-only: elsewhere a timeout kills the process group.
type cmdGroup struct{}

func newCmdGroup(string) *cmdGroup           { return nil }
func (*cmdGroup) enter(*syscall.SysProcAttr) {}
func (*cmdGroup) kill()                      {}
func (*cmdGroup) close()                     {}
func (*cmdGroup) done() <-chan struct{}      { return closedChan }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// TimeoutKill says how a timeout finds what a command started.
func TimeoutKill() string { return "a timeout kills the command's process group" }
