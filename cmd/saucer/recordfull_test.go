package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/trajectory"
)

// TestRunStopsWhenTheRecordingCannotBeWritten: saucer run records to a
// small tmpfs that its first command fills. The next command, a
// command chosen in the step after, must not run: its model call and
// decision cannot reach the recording, so the run stops before it with
// exit code 3, saying why, and what was recorded before the disk filled
// stays readable.
func TestRunStopsWhenTheRecordingCannotBeWritten(t *testing.T) {
	disk := storetest.TinyDisk(t, 1<<20)
	runs := filepath.Join(disk, "runs")
	work := t.TempDir()
	// The second step's reply is long enough that its lines cannot fit in
	// what is left of the recording's last page.
	long := strings.Repeat("I have filled the disk; now I write the note. ", 200)
	script := fmt.Sprintf(`replies:
  - tool_calls:
      - name: assign_subtask
        arguments: {app: shell, subtask: "Fill the disk, then write notes/after.txt."}
  - tool_calls:
      - name: execute_command
        arguments: {command: "head -c 8000000 /dev/zero > %s/filler; true"}
  - text: %q
    tool_calls:
      - name: execute_command
        arguments: {command: "mkdir -p notes && echo written after the recording failed > notes/after.txt"}
  - tool_calls:
      - name: finish_task
        arguments: {result: "done"}
  - tool_calls:
      - name: finish_task
        arguments: {result: "done"}
`, disk, long)
	model := filepath.Join(t.TempDir(), "model.yaml")
	if err := os.WriteFile(model, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := saucer(t, "run", "--model", "scripted:"+model, "--workdir", work, "--runs", runs, "--yes",
		"Fill the disk, then write notes/after.txt")
	if _, err := os.Stat(filepath.Join(work, "notes", "after.txt")); !os.IsNotExist(err) {
		t.Errorf("the second command ran after the recording had failed (stat: %v)\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(disk, "filler")); err != nil {
		t.Fatalf("the first command did not run: %v\n%s", err, out)
	}
	if code != 3 || !strings.Contains(out, "the recording in "+runs) || !strings.Contains(out, "could not be written") {
		t.Errorf("exit %d, want 3 saying the recording could not be written\n%s", code, out)
	}
	tr, err := trajectory.Read(onlyRun(t, runs))
	if err != nil {
		t.Fatalf("what was recorded is not readable: %v\n%s", err, out)
	}
	if n := len(tr.Calls()); n < 2 {
		t.Errorf("the recording holds %d model calls, want the two made before the disk filled", n)
	}
	for _, c := range tr.Calls() {
		if c.Response != nil && strings.Contains(c.Response.Message.Content, "now I write the note") {
			t.Errorf("the recording holds the reply whose lines could not be written")
		}
	}
}
