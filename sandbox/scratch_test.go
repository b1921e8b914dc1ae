package sandbox

import (
	"os"
	"strings"
	"testing"
)

func TestScratch(t *testing.T) {
	line := os.Getenv("SCRATCH")
	if line == "" {
		t.Skip()
	}
	o := Options{Work: t.TempDir()}
	if r := os.Getenv("SCRATCH_ROOT"); r != "" {
		o.Root = r
	}
	s := need(t, o)
	for _, l := range strings.Split(line, "\n@@\n") {
		out, code := run(t, s, l)
		t.Logf("$ %s\n[%d]\n%s", l, code, out)
	}
}
