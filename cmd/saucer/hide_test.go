//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A command the shell tool runs cannot read Saucer's API keys from its
// parent's environment block, and the run still has them (the scripted
// provider does not need one, so the check is that the variable reached
// the shell's view of Go's environment before scrub_env removed it).
func TestCommandsCannotReadKeysFromTheParent(t *testing.T) {
	bin := saucerBinary(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte(`
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "look at the parent"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "tr '\\0' '\\n' < /proc/$PPID/environ > parent.txt; env > own.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "looked"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "looked"}}]
`), 0o644)
	cfg := filepath.Join(dir, "c.yaml")
	// Keep one secret-named variable for the shell, to prove the values
	// are still in Saucer's own environment after the re-execution.
	os.WriteFile(cfg, []byte("mcp:\n  policy:\n    shell:\n      scrub_env: [\"*_API_KEY\"]\n"), 0o644)
	cmd := exec.Command(bin, "run", "-q", "-c", cfg, "--no-record", "--model", "scripted:"+script, "-C", dir, "look")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-parent-leak-0123456789", "DEPLOY_TOKEN=tok-kept-for-tools-42")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	parent, err := os.ReadFile(filepath.Join(dir, "parent.txt"))
	if err != nil || !strings.Contains(string(parent), "PATH=") {
		t.Fatalf("the command did not read its parent's environment: %v %q", err, parent)
	}
	for _, s := range []string{"sk-parent-leak", "tok-kept-for-tools"} {
		if strings.Contains(string(parent), s) {
			t.Errorf("%s is in Saucer's /proc/PID/environ:\n%s", s, parent)
		}
	}
	own, _ := os.ReadFile(filepath.Join(dir, "own.txt"))
	if strings.Contains(string(own), "sk-parent-leak") {
		t.Error("scrub_env let the API key through")
	}
	if !strings.Contains(string(own), "DEPLOY_TOKEN=tok-kept-for-tools-42") {
		t.Errorf("Saucer lost the credentials it hid: the shell's environment lacks DEPLOY_TOKEN:\n%s", own)
	}
}
