package local_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/local"
)

func TestDeviceFromMCPConfig(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/saucer.yaml"
	os.WriteFile(file, []byte(`
model: scripted:x.yaml
mcp:
  apps:
    readonly: [files]
  policy:
    shell: {deny: ["rm *"], scrub_env: ["SAUCER_TEST_*"]}
  servers:
    files: {kind: builtin, deny: [write_file], description: "files, read-only"}
`), 0o644)
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SAUCER_TEST_SECRET", "hidden")
	dev, err := local.Device(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	run := func(ns, tool string, params map[string]any) command.Result {
		return dev.Execute(context.Background(), command.Command{Namespace: ns, ToolName: tool, Parameters: params})
	}
	if r := run("shell", "execute_command", map[string]any{"command": "rm -f notes.txt"}); r.OK() || !strings.Contains(r.Error, "policy: the command matches a denied pattern (rm *)") {
		t.Errorf("shell deny: %+v", r)
	}
	if r := run("shell", "execute_command", map[string]any{"command": "env"}); !r.OK() || strings.Contains(string(r.Result), "hidden") {
		t.Errorf("scrubbed env: %+v", r)
	}
	if r := run("files", "write_file", map[string]any{"path": "a", "content": "b"}); !strings.Contains(r.Error, `unknown tool "write_file" in namespace "files"`) {
		t.Errorf("denied tool: %+v", r)
	}
	if ns := dev.Namespaces(); len(ns) != 2 || ns[1].Description != "files, read-only" || ns[1].Tools != 3 {
		t.Errorf("namespaces: %+v", ns)
	}

	app, err := local.DeviceFor(context.Background(), cfg, dir, "readonly")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if ns := app.Namespaces(); len(ns) != 1 || ns[0].Name != "files" {
		t.Errorf("app set: %+v", ns)
	}
}
