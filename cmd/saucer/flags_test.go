package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsAreCheckedAsTheConfigIs: a flag that stands for a config key
// is refused (exit 2) for a value the config file is refused for, with
// the config's message and the flag's name; numeric flags with no config
// key are refused out of their range; a valid flag still works.
func TestFlagsAreCheckedAsTheConfigIs(t *testing.T) {
	demo := "scripted:../../examples/demo.yaml"
	cfgFile := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfgFile, []byte("agent:\n  max_steps: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := saucer(t, "run", "-c", cfgFile, "-m", demo, "-C", t.TempDir(), "task")
	const configSays = "agent: max_rounds and max_steps must be at least 1"
	if code != 2 || !strings.Contains(out, configSays) {
		t.Fatalf("the config file's max_steps -1: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"run", "-m", demo, "-C", t.TempDir(), "--max-steps", "-1", "task"}, []string{"--max-steps -1", "agent.max_steps", configSays}},
		{[]string{"run", "-m", demo, "-C", t.TempDir(), "--max-rounds", "0", "task"}, []string{"--max-rounds 0", "agent.max_rounds", configSays}},
		{[]string{"eval", "-j", "0", "suite.yaml"}, []string{"--jobs 0 is out of range", "at least 1"}},
		{[]string{"eval", "-j", "-3", "suite.yaml"}, []string{"--jobs -3 is out of range"}},
		{[]string{"eval", "--trials", "0", "suite.yaml"}, []string{"--trials 0 is out of range"}},
		{[]string{"eval", "--timeout", "-1s", "suite.yaml"}, []string{"--timeout -1s is out of range", "positive duration"}},
		{[]string{"eval", "--min-success", "1.5", "suite.yaml"}, []string{"--min-success 1.5 is out of range", "from 0 to 1"}},
		{[]string{"eval", "merge", "--min-success", "-0.1", "-o", t.TempDir(), "shard"}, []string{"--min-success -0.1 is out of range"}},
		{[]string{"client", "--server", "ws://127.0.0.1:1/ws", "--request", " \n "}, []string{"--request is empty"}},
		{[]string{"client", "--server", "ws://127.0.0.1:1/ws", "--request", "x", "--connect-wait", "0s"}, []string{"--connect-wait 0s is out of range"}},
	} {
		out, code := saucer(t, tc.args...)
		ok := code == 2
		for _, s := range tc.says {
			ok = ok && strings.Contains(out, s)
		}
		if !ok || strings.Contains(out, "could not reach") {
			t.Errorf("saucer %s: exit %d, want 2 saying %q\n%s", strings.Join(tc.args, " "), code, tc.says, out)
		}
	}
	// In range, a flag replaces the config's value.
	dir := t.TempDir()
	out, code = saucer(t, "run", "-m", demo, "-C", dir, "--max-steps", "1", "--max-rounds", "5",
		"Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder")
	if code == 2 || !strings.Contains(out, "reached the limit of 1 steps") || !strings.Contains(out, "Round 2 of 5.") {
		t.Fatalf("--max-steps 1 --max-rounds 5: exit %d, want both limits in force\n%s", code, out)
	}
}
