// Package cputime reads the CPU time this process has used, for the
// benchmarks that report CPU per operation beside wall time: on a machine
// shared with other work, CPU time is the figure that measures the code.
package cputime

import "time"

// Process is the CPU time this process has used so far, user and system;
// 0 where the system does not say (benchmarks then report 0).
func Process() time.Duration { return process() }
