// Package cputime reads the CPU time this process has used, for the
// benchmarks that report CPU per operation beside wall time: on a machine
// shared with other work, CPU time is the figure that measures the code.
package cputime

import "time"

// Process is the CPU time this process has used so far, user and system;
// 0 where the system does not say (benchmarks then report 0).
func Process() time.Duration {
	user, system := Split()
	return user + system
}

// Split is Process in its two parts: the time spent in the process's own
// code (user) and in the kernel on its behalf (system). The kernel's part
// also depends on the machine's state (a file system's free lists, memory
// reclaim), so a figure meant to measure the code alone reads user.
func Split() (user, system time.Duration) { return split() }
