//go:build unix

package cputime

import (
	"testing"
	"time"
)

// TestProcessCounts: work done on this goroutine shows in the process's
// CPU time (50 million dependent multiplications take well over 10 ms on
// any machine).
func TestProcessCounts(t *testing.T) {
	before := Process()
	if before <= 0 {
		t.Fatalf("Process() = %v; a process that has started has used CPU", before)
	}
	x := uint64(1)
	for i := 0; i < 50_000_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	if after := Process(); after-before < 10*time.Millisecond || x == 0 {
		t.Fatalf("CPU time went from %v to %v over 50 million multiplications", before, after)
	}
}
