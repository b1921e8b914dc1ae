package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Secrets never reach the console, saucer config or a recording: MCP
// headers and secret environment values in the config, AWS keys and URL
// passwords in the environment, and tool output that prints them.
func TestSecretsAreRedactedEverywhere(t *testing.T) {
	const (
		header  = "Bearer header-secret-0123456789"
		mcpTok  = "mcp-env-token-abcdef"
		awsKey  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		awsID   = "AKIAIOSFODNN7EXAMPLE"
		dbPass  = "db-pass-w0rd"
		dbURL   = "postgres://saucer:" + dbPass + "@127.0.0.1:5432/app"
		toolOut = "tool-printed-secret-42"
	)
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsKey)
	t.Setenv("AWS_ACCESS_KEY_ID", awsID)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("MY_SERVICE_TOKEN", toolOut)
	dir := t.TempDir()
	runs := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	// The shell's commands see the credentials here (the default scrubs
	// them), so that what they print must be redacted.
	os.WriteFile(cfgFile, []byte(`
mcp:
  policy: {shell: {scrub_env: [], scrub_url_passwords: false}}
  servers:
    search: {kind: http, url: "http://127.0.0.1:9/mcp", headers: {Authorization: "`+header+`"}}
    notes: {kind: stdio, command: notes-server, env: {NOTES_TOKEN: "`+mcpTok+`", MODE: "fast", DB: "`+dbURL+`"}}
`), 0o644)
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte(`
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "print the environment"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo $MY_SERVICE_TOKEN $AWS_SECRET_ACCESS_KEY $AWS_ACCESS_KEY_ID $DATABASE_URL"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "printed"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "printed"}}]
`), 0o644)

	cfgOut, code := saucer(t, "config", "-c", cfgFile, "-C", dir)
	if code != 0 || !strings.Contains(cfgOut, "MODE: fast") || !strings.Contains(cfgOut, "postgres://saucer:[redacted]@127.0.0.1:5432/app") {
		t.Errorf("saucer config: exit %d\n%s", code, cfgOut)
	}
	runOut, code := saucer(t, "run", "-c", cfgFile, "--model", "scripted:"+script, "-C", dir, "--runs", runs, "print it")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, runOut)
	}
	var recorded strings.Builder
	filepath.Walk(runs, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			recorded.Write(b)
		}
		return nil
	})
	if !strings.Contains(recorded.String(), "[REDACTED]") || !strings.Contains(runOut, "[REDACTED]") {
		t.Errorf("nothing was redacted?\n%s", runOut)
	}
	for _, secret := range []string{header, "header-secret-0123456789", mcpTok, awsKey, awsID, dbPass, toolOut} {
		for where, text := range map[string]string{"saucer config": cfgOut, "the console": runOut, "the recording": recorded.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %q", where, secret)
			}
		}
	}
}
