package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/saucerhq/saucer/trajectory"
)

// TestMain keeps every run this package's tests make from recording into
// the source tree: runs go to a temporary directory unless --runs says
// otherwise.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "saucer-runs-")
	if err != nil {
		panic(err)
	}
	os.Setenv("SAUCER_RUNS", dir)
	// The tests' runs learn from, and are given, only what a test stores.
	os.Setenv("SAUCER_KNOWLEDGE", filepath.Join(dir, "knowledge"))
	code := m.Run()
	os.RemoveAll(dir)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func demoArgs(workdir string, extra ...string) []string {
	return append([]string{"run", "--model", "scripted:../../examples/demo.yaml", "--workdir", workdir}, append(extra,
		"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")...)
}

func onlyRun(t *testing.T, runs string) string {
	t.Helper()
	all, err := os.ReadDir(runs)
	var entries []os.DirEntry // runs are directories (saucer serve keeps its database file beside them)
	for _, e := range all {
		if e.IsDir() {
			entries = append(entries, e)
		}
	}
	if err != nil || len(entries) != 1 {
		t.Fatalf("runs dir %s: %v %v", runs, all, err)
	}
	return filepath.Join(runs, entries[0].Name())
}

func TestRunRecordsAndReplays(t *testing.T) {
	runs := t.TempDir()
	t.Setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnopqrstuvwxyz")
	out, code := saucer(t, demoArgs(t.TempDir(), "--runs", runs)...)
	if code != 0 || !strings.Contains(out, "recorded to "+runs) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	dir := onlyRun(t, runs)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Session()
	if s.Model != "scripted:../../examples/demo.yaml" || s.Mode != "tools" || s.Device == nil || s.Apps["shell"] == "" ||
		!strings.Contains(s.Config, "max_steps: 20") || s.Version == "" || tr.End().Status != "FINISH" {
		t.Errorf("session %+v end %+v", s, tr.End())
	}
	// The key in the environment is in no file of the recording.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); !d.IsDir() && bytes.Contains(b, []byte("sk-test-abcdefghijklmnopqrstuvwxyz")) {
			t.Errorf("%s holds the API key", p)
		}
		return nil
	})
	validateAgainstSchema(t, dir)

	out, code = saucer(t, "replay", dir)
	if code != 0 || !strings.Contains(out, "identical to the recording: 7 model calls") || !strings.Contains(out, "[app:shell#2 step 1] CONTINUE") {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}

	// A tampered result: replay exits 1 and shows the diff.
	p := filepath.Join(dir, trajectory.EventsFile)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte(`"bytes_written":18`), []byte(`"bytes_written":17`), 1), 0o644)
	out, code = saucer(t, "replay", "-q", dir)
	if code != 1 || !strings.Contains(out, "DIVERGED") || !strings.Contains(out, `bytes_written\":17`) {
		t.Fatalf("tampered replay: exit %d\n%s", code, out)
	}
}

func TestRunNoRecord(t *testing.T) {
	runs := t.TempDir()
	out, code := saucer(t, demoArgs(t.TempDir(), "--runs", runs, "--no-record")...)
	if code != 0 || strings.Contains(out, "recorded to") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 0 {
		t.Errorf("--no-record recorded %v", entries)
	}
	// By default runs go to $SAUCER_RUNS (set by TestMain).
	runs = t.TempDir()
	t.Setenv("SAUCER_RUNS", runs)
	if _, code := saucer(t, demoArgs(t.TempDir())...); code != 0 {
		t.Fatal(code)
	}
	onlyRun(t, runs)
}

func validateAgainstSchema(t *testing.T, dir string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(trajectory.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AddResource(trajectory.SchemaID, doc)
	sch, err := c.Compile(trajectory.SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, trajectory.EventsFile))
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err == nil {
			err = sch.Validate(v)
		}
		if err != nil {
			t.Errorf("line %d: %v", i+1, err)
		}
	}
}

func TestReplayLiveModel(t *testing.T) {
	runs := t.TempDir()
	if _, code := saucer(t, demoArgs(t.TempDir(), "--runs", runs)...); code != 0 {
		t.Fatal(code)
	}
	dir := onlyRun(t, runs)
	// A "new model" that goes straight to the shell: the recorded device
	// answers its ls with the recorded listing.
	script := filepath.Join(t.TempDir(), "new.yaml")
	os.WriteFile(script, []byte(`replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "List the notes folder with sizes (ls -l notes)."}}]
  - tool_calls: [{name: execute_command, arguments: {command: "ls -l notes"}}]
  - expect: hello.txt
    tool_calls: [{name: finish_task, arguments: {result: "one file"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "notes holds hello.txt"}}]
`), 0o644)
	out, code := saucer(t, "replay", "--live-model", "--model", "scripted:"+script, dir)
	if code != 0 || !strings.Contains(out, "(live), recorded device") || !strings.Contains(out, "[app:shell#1 step 1] CONTINUE") ||
		!strings.Contains(out, "notes holds hello.txt") || strings.Contains(out, "not in the recording") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// A run whose recording cannot be written (here: a file size limit, as a
// full disk would do) stops with exit status 3, and what was recorded
// reads back as a trajectory.
func TestRecordingFailureStopsTheRun(t *testing.T) {
	bin := saucerBinary(t)
	dir, runs := t.TempDir(), t.TempDir()
	// bash: ignore SIGXFSZ, so that a write past the limit fails with EFBIG
	// instead of killing the process; 16 KiB is reached within the demo.
	script := `trap '' XFSZ; ulimit -f 16; exec "$0" "$@"`
	cmd := exec.Command("bash", "-c", script, bin, "run", "--model", "scripted:../../examples/demo.yaml", "-C", dir, "--runs", runs,
		"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "the recording in") {
		t.Fatalf("exit %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(runs)
	if len(entries) != 1 {
		t.Fatalf("runs: %v", entries)
	}
	tr, err := trajectory.Read(filepath.Join(runs, entries[0].Name()))
	if err != nil {
		t.Fatalf("what was recorded does not read back: %v", err)
	}
	if len(tr.Events) < 2 || tr.Events[0].Type != trajectory.TypeSessionStart {
		t.Errorf("recorded %d events", len(tr.Events))
	}
	// It replays up to where it stops, and says where that is.
	replayed, code := saucer(t, "replay", filepath.Join(runs, entries[0].Name()))
	if code != 0 || !strings.Contains(replayed, "incomplete recording, identical up to where it stops") ||
		!strings.Contains(replayed, fmt.Sprintf("stops after event %d", len(tr.Events))) || strings.Contains(replayed, "DIVERGED") {
		t.Errorf("replay of the cut recording: exit %d\n%s", code, replayed)
	}
}

// Recordings replay in either mode: in json mode (tool schemas in the
// prompt) and with a tool result big enough to be stored as an artifact
// (its keys sorted by the recording), the replayed requests are the
// recorded bytes.
func TestRecordThenReplayEveryMode(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 400) // 6.4 KB: an artifact
	for mode, reply := range map[string]string{
		"json": `
replies:
  - json: {status: ASSIGN, actions: [{function: assign_subtask, arguments: {app: files, subtask: "read big.txt"}}]}
  - json: {status: CONTINUE, actions: [{function: read_file, arguments: {path: big.txt}}]}
  - expect: "0123456789abcdef"
    json: {status: FINISH, result: "read it"}
  - json: {status: FINISH, result: "big.txt read"}
`,
		"tools": `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "read big.txt"}}]
  - tool_calls: [{name: read_file, arguments: {path: big.txt}}]
  - expect: "0123456789abcdef"
    tool_calls: [{name: finish_task, arguments: {result: "read it"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "big.txt read"}}]
`,
	} {
		t.Run(mode, func(t *testing.T) {
			dir, runs := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644)
			script := filepath.Join(t.TempDir(), "s.yaml")
			os.WriteFile(script, []byte(reply), 0o644)
			out, code := saucer(t, "run", "--mode", mode, "--model", "scripted:"+script, "-C", dir, "--runs", runs, "read big.txt")
			if code != 0 {
				t.Fatalf("run: exit %d\n%s", code, out)
			}
			run := onlyRun(t, runs)
			arts, _ := os.ReadDir(filepath.Join(run, "artifacts"))
			if len(arts) == 0 {
				t.Fatal("no artifact: the big result was not stored apart")
			}
			out, code = saucer(t, "replay", run)
			if code != 0 || !strings.Contains(out, "identical to the recording: 4 model calls") {
				t.Errorf("replay: exit %d\n%s", code, out)
			}
		})
	}
}

// TestRunPrunesOldRuns: record.keep in the config removes an old finished
// run before a run starts, says so, and leaves a recent one and the new run.
func TestRunPrunesOldRuns(t *testing.T) {
	runs := t.TempDir()
	old := time.Now().Add(-60 * 24 * time.Hour)
	for _, name := range []string{"old", "recent"} {
		w, err := trajectory.Create(filepath.Join(runs, name), trajectory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(trajectory.Event{Type: trajectory.TypeSessionStart, Session: &trajectory.Session{Format: trajectory.Format}})
		w.Write(trajectory.Event{Type: trajectory.TypeSessionEnd, End: &trajectory.End{Status: "FINISH"}})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	os.Chtimes(filepath.Join(runs, "old", trajectory.EventsFile), old, old)
	cfg := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(cfg, []byte("record:\n  keep:\n    age: 720h\n"), 0o644)
	out, code := saucer(t, demoArgs(t.TempDir(), "--runs", runs, "--config", cfg)...)
	if code != 0 || !strings.Contains(out, "record.keep removed 1 old runs") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	entries, _ := os.ReadDir(runs)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) != 2 || slices.Contains(left, "old") || !slices.Contains(left, "recent") {
		t.Fatalf("runs left: %v", left)
	}
}
