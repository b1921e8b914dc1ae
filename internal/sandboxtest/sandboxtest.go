// Package sandboxtest is what tests of sandboxed devices share.
package sandboxtest

import (
	"os"
	"testing"

	"github.com/saucerhq/saucer/sandbox"
)

// Require skips t where this host cannot make sandboxes (with what
// sandbox.Check says is missing), and fails it when CI is set: CI must be
// able to make them.
func Require(t testing.TB) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must be able to create sandboxes: %v", err)
		}
		t.Skip(err)
	}
}
