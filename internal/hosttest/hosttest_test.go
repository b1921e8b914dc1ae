package hosttest

import (
	"os"
	"strings"
	"testing"
)

// recorder is a testing.TB that notes how a test ended instead of ending.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.failed = strings.TrimSpace(sprint(args)) }
func (r *recorder) Skip(args ...any)  { r.skipped = strings.TrimSpace(sprint(args)) }
func sprint(args []any) (s string) {
	for _, a := range args {
		s += a.(string) + " "
	}
	return s
}

func TestMissingFailsUnderCIAndSkipsElsewhere(t *testing.T) {
	t.Setenv("CI", "true")
	r := &recorder{TB: t}
	Missing(r, "no %s here", "sway")
	if !strings.Contains(r.failed, "no sway here") || r.skipped != "" {
		t.Fatalf("under CI: failed %q, skipped %q; want a failure naming what is missing", r.failed, r.skipped)
	}
	os.Unsetenv("CI")
	r = &recorder{TB: t}
	Missing(r, "no %s here", "sway")
	if r.skipped != "no sway here" || r.failed != "" {
		t.Fatalf("outside CI: failed %q, skipped %q; want a skip", r.failed, r.skipped)
	}
}

func TestProgramFindsTheFirstOnPath(t *testing.T) {
	r := &recorder{TB: t}
	if p := Program(r, "saucer-no-such-program", "sh"); !strings.HasSuffix(p, "/sh") || r.failed != "" || r.skipped != "" {
		t.Fatalf("Program = %q (failed %q, skipped %q); want sh's path", p, r.failed, r.skipped)
	}
	t.Setenv("CI", "")
	os.Unsetenv("CI")
	r = &recorder{TB: t}
	Program(r, "saucer-no-such-program", "saucer-nor-this")
	if r.skipped != "saucer-no-such-program or saucer-nor-this is not installed" {
		t.Fatalf("skipped %q", r.skipped)
	}
}
