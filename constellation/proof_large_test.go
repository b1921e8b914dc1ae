//go:build !race

package constellation

import "testing"

// A 1,000-node layered graph across a server restart, with a sandboxed
// device that reconnects late: every node runs once. Without the race
// detector (its thousand real tasks take minutes under it); .ci/run runs
// it on its own.
func TestProofLayered1000(t *testing.T) { proveOnce(t, 1000, 50) }
