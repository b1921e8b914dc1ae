// Package hosttest holds the one rule for tests that need something of
// the host (a program, a sandbox, a display, a built image root): where it
// is missing the test skips, and under CI (CI set) it fails instead,
// since .ci/run installs everything the tests need and a skipped test
// there would hide a broken machine.
package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Missing ends t because what it needs is missing: it fails under CI and
// skips elsewhere, saying what is missing (and, best, how to get it).
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal("CI must have what this test needs (.ci/run installs it): " + msg)
	} else {
		t.Skip(msg)
	}
}

// Program is the path of the first of names found on PATH; with none of
// them, t ends by Missing.
func Program(t testing.TB, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "%s is not installed", strings.Join(names, " or "))
	return ""
}
