// The example programs are built and run here, as a user would run them,
// and their output checked: each shows an extension point working through
// the one assembly.
package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runExample(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "./"+name).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "MYCORP_KEY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return string(out)
}

func TestExamples(t *testing.T) {
	for name, want := range map[string][]string{
		"custom-strategy": {"status: FINISH", `time.txt: "the time the clock read\n"`},
		"prompts-fs":      {"status: FINISH", "answer: The device is in the example lab, at bench 4.", "model calls: 1"},
		"provider": {`registering again: provider: "mycorp" is already registered`, "status: FINISH",
			"answer: falcon-2 answered (key from MYCORP_KEY: false)."},
		"go-tool": {"status: FINISH", "answer: There are 5 words."},
		"middleware": {"status: FAIL", "answer: a.txt was not deleted: this program's shell may not delete files.", "a.txt still there: true", "app:shell#1 observe         1",
			"app:shell#1 execute         1", "host remember                2"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := runExample(t, name)
			flat := strings.Join(strings.Fields(out), " ") // column widths aside
			for _, w := range want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
