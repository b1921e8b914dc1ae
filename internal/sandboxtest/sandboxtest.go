// Package sandboxtest is what tests of sandboxed devices share.
package sandboxtest

import (
	"testing"

	"github.com/saucerhq/saucer/internal/hosttest"

	"github.com/saucerhq/saucer/sandbox"
)

// Require skips t where this host cannot make sandboxes (with what
// sandbox.Check says is missing), and fails it when CI is set: CI must be
// able to make them.
func Require(t testing.TB) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		hosttest.Missing(t, "sandboxes cannot be made here: %v", err)
	}
}
