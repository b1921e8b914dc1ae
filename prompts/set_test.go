package prompts

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func shellTools() []command.ToolInfo {
	return []command.ToolInfo{
		{
			Name: "run_command", Namespace: "shell", ToolType: command.Action,
			Description: "Run a shell command with /bin/sh -c and return its exit code, stdout and stderr.\nOutput longer than 64 KiB is cut.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"command": {"type": "string", "description": "The command line to run."},
					"cwd": {"type": "string", "description": "Working directory; the home directory if empty."},
					"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 600, "default": 60}
				},
				"required": ["command"],
				"additionalProperties": false
			}`),
			Annotations: map[string]any{"destructiveHint": true},
		},
		{
			Name: "which", Namespace: "shell", ToolType: command.DataCollection,
			Description: "Find the full path of a program on PATH.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"program":{"type":"string"}},"required":["program"]}`),
		},
	}
}

func filesTools() []command.ToolInfo {
	return []command.ToolInfo{
		{
			Name: "read_file", Namespace: "files", ToolType: command.DataCollection,
			Description: "Read a text file and return its content.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Absolute path of the file."},"max_bytes":{"type":"integer"}},"required":["path"]}`),
			Annotations: map[string]any{"readOnlyHint": true},
		},
		{
			Name: "write_file", Namespace: "files", ToolType: command.Action,
			Description: "Create or replace a text file. Parent directories must exist.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"append":{"type":"boolean","default":false}},"required":["path","content"]}`),
		},
	}
}

func testDevice() command.DeviceInfo {
	return command.DeviceInfo{
		DeviceID: "dev-7", Platform: "linux", OSVersion: "Debian GNU/Linux 13 (trixie)", Arch: "amd64",
		CPUCount: 8, CPUModel: "AMD Ryzen 7 5800U", MemoryTotalGB: 15.5, Hostname: "atlas",
		Features: []string{"shell", "files"}, Custom: map[string]any{"timezone": "Europe/Berlin"},
		User: "alice", UID: "1000", Home: "/home/alice", WorkDir: "/home/alice/reports",
	}
}

func testNotes() []Note {
	return []Note{
		{Subtask: "Run `df -h /` and report the space available on the root filesystem.", App: "shell", Status: "FINISH", Result: "41G available on /"},
		{Subtask: "Read /etc/hostname and report its content.", App: "files", Status: "FAIL", Result: "read_file failed: permission denied\n(tried twice)"},
	}
}

func hostData(mode string) HostData {
	return HostData{
		Request: "How much free space is left on the root disk? Save the figure in /tmp/disk.txt.",
		Device:  testDevice(),
		Apps: []App{
			{Name: "shell", Description: "Runs shell commands on the device.\nUse for system information and programs.", Tools: shellTools()},
			{Name: "files", Description: "Reads and writes files.", Tools: filesTools()},
		},
		Notes: testNotes(), Mode: mode, Round: 3, MaxRounds: 10,
	}
}

func appData(mode string) AppData {
	return AppData{
		Request: "How much free space is left on the root disk? Save the figure in /tmp/disk.txt.",
		Subtask: "Write the text \"41G\" to /tmp/disk.txt, then read it back and report its content.",
		App:     "files", Tools: filesTools(), Device: testDevice(),
		Observations: []Observation{
			{Name: "write_file", Content: `{"bytes_written": 3}`},
			{Name: "read_file", Content: "41G\n"},
		},
		EarlierNotes: testNotes()[:1], Notes: testNotes()[1:], Mode: mode, Step: 3, MaxSteps: 15,
	}
}

func mustLoad(t *testing.T, dir string) *Set {
	t.Helper()
	s, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%q): %v", dir, err)
	}
	return s
}

// TestGolden renders every top-level template in both modes and compares
// with testdata/golden; run `go test ./prompts -update` to rewrite them.
func TestGolden(t *testing.T) {
	s := mustLoad(t, "")
	for _, mode := range []string{ModeJSON, ModeTools} {
		for _, name := range []string{"host_system", "host_user", "host_examples", "host_status", "app_system", "app_user", "app_examples", "app_status"} {
			t.Run(name+"."+mode, func(t *testing.T) {
				var data any = hostData(mode)
				if strings.HasPrefix(name, "app_") {
					data = appData(mode)
				}
				got, err := s.Render(name, data)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", name+"."+mode+".txt"), got)
			})
		}
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./prompts -update to create it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("%s differs from the rendered text (run go test ./prompts -update if the change is intended)\n--- got ---\n%s", path, got)
	}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOverrideReplacesOnlyThatTemplate(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "app_examples.tmpl", "## Examples\nOur own example for the {{.App}} app.\n")
	writeFile(t, dir, "notes.txt", "{{ this is not a template file and must be ignored")
	base, over := mustLoad(t, ""), mustLoad(t, dir)
	data := appData(ModeJSON)

	want := "## Examples\nOur own example for the files app."
	if got, err := over.Render("app_examples", data); err != nil || got != want {
		t.Fatalf("app_examples = %q, %v; want %q", got, err, want)
	}
	baseSys, err := base.Render("app_system", data)
	if err != nil {
		t.Fatal(err)
	}
	overSys, err := over.Render("app_system", data)
	if err != nil {
		t.Fatal(err)
	}
	baseExamples, _ := base.Render("app_examples", data)
	if wantSys := strings.Replace(baseSys, baseExamples, want, 1); overSys != wantSys {
		t.Errorf("app_system with the override differs beyond the examples:\n%s", overSys)
	}
	for _, name := range []string{"host_system", "host_user", "app_user"} {
		var d any = hostData(ModeTools)
		if strings.HasPrefix(name, "app_") {
			d = data
		}
		a, _ := base.Render(name, d)
		b, err := over.Render(name, d)
		if err != nil || a != b {
			t.Errorf("%s changed by an app_examples override (err %v)", name, err)
		}
	}
}

func TestOverrideAddsPartial(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "house_rules.tmpl", "House rules: never touch {{.}}.\n")
	writeFile(t, dir, "host_examples.tmpl", `{{template "house_rules" "/etc"}}`+"\n")
	s := mustLoad(t, dir)
	if !slices.Contains(s.Names(), "house_rules") {
		t.Errorf("Names() = %v, lacks the added partial", s.Names())
	}
	got, err := s.Render("host_system", hostData(ModeJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, "House rules: never touch /etc.") || strings.Contains(got, "## Example") {
		t.Errorf("host_system does not end with the overriding examples:\n%s", got)
	}
}

func TestOverrideEmptyFileBlanksTemplate(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "app_examples.tmpl", "")
	s := mustLoad(t, dir)
	got, err := s.Render("app_system", appData(ModeTools))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "## Examples") || !strings.HasSuffix(got, "You may think briefly in text first.") {
		t.Errorf("app_system still has examples:\n%s", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"syntax error names file and line", map[string]string{"app_examples.tmpl": "line one\nline two {{if .App}}\n"},
			[]string{"app_examples.tmpl", "app_examples:2"}},
		{"unknown function", map[string]string{"host_user.tmpl": "{{.Request | shout}}"},
			[]string{"host_user.tmpl", `"shout" not defined`}},
		{"missing partial is found at load time", map[string]string{"app_examples.tmpl": "x\n{{if .App}}{{template \"nowhere\" .}}{{end}}"},
			[]string{"app_examples.tmpl", "app_examples:2", `"nowhere"`, "not defined"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				writeFile(t, dir, name, text)
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}

	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Load of a missing directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file.tmpl")
	writeFile(t, filepath.Dir(file), "file.tmpl", "x")
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Load of a file: %v", err)
	}
}

func TestRenderErrors(t *testing.T) {
	s := mustLoad(t, "")
	if _, err := s.Render("app_sytem", appData(ModeJSON)); err == nil || !strings.Contains(err.Error(), "app_system, app_user") {
		t.Errorf("unknown template: %v", err)
	}
	if _, err := s.Render("app_system", appData("xml")); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Errorf("unknown mode: %v", err)
	}
	// missingkey=error: a map without the key fails instead of printing "<no value>".
	dir := t.TempDir()
	writeFile(t, dir, "greet.tmpl", "Hello {{.name}}")
	s = mustLoad(t, dir)
	if _, err := s.Render("greet", map[string]string{"nom": "x"}); err == nil || !strings.Contains(err.Error(), "greet.tmpl") {
		t.Errorf("missing key: %v", err)
	}
}

func TestNames(t *testing.T) {
	want := []string{"app_examples", "app_status", "app_system", "app_user", "constellation_status", "constellation_system", "device", "host_examples", "host_status", "host_system", "host_user", "notes", "tools"}
	if got := mustLoad(t, "").Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestStepAndRoundLines(t *testing.T) {
	s := mustLoad(t, "")
	first := appData(ModeJSON)
	first.Step, first.Observations, first.Notes = 1, nil, nil
	last := appData(ModeTools)
	last.Step = last.MaxSteps
	unlimited := hostData(ModeJSON)
	unlimited.MaxRounds, unlimited.Notes = 0, nil
	lastRound := hostData(ModeJSON)
	lastRound.Round = lastRound.MaxRounds
	tests := []struct {
		name, template string
		data           any
		want, notWant  []string
	}{
		{"first step", "app_status", first, []string{"Nothing has run yet.", "Step 1 of 15.", "Reply with the JSON object."}, []string{"Notes from", "Results of"}},
		{"last step", "app_status", last, []string{"Step 15 of 15. This is your last step", "finish_task", "Call the next tool."}, []string{"Nothing has run yet."}},
		{"no round limit", "host_status", unlimited, []string{"Round 3.\n"}, []string{"of 0", "Notes from"}},
		{"last round", "host_status", lastRound, []string{"Round 10 of 10. This is the last round", "FINISH"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Render(tt.template, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestToolsPartialMarksToolKinds(t *testing.T) {
	got, err := mustLoad(t, "").Render("tools", append(shellTools(), command.ToolInfo{Name: "bare"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"### run_command (destructive)\nRun a shell command",
		"### which (read-only)\n",
		`Input schema: {"additionalProperties":false,"properties":{"command":{"description":"The command line to run.","type":"string"}`,
		"### bare\nInput schema: {}",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

func TestFuncs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.tmpl", `{{json .M}}|{{pretty .R}}|{{indent 2 .S}}|{{join ", " .L}}|{{upper "a"}}{{lower "B"}}|{{trim "  x  "}}|{{firstLine "\n first \nsecond"}}|{{add 1 2}}`)
	s := mustLoad(t, dir)
	got, err := s.Render("f", map[string]any{
		"M": map[string]any{"a": "<b>"}, "R": json.RawMessage(`{"k": [1]}`), "S": "x\n\ny", "L": []int{1, 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":"<b>"}|{` + "\n" + `  "k": [` + "\n    1\n  ]\n}|  x\n\n  y|1, 2|Ab|x|first|3"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestRenderConcurrently(t *testing.T) {
	s := mustLoad(t, "")
	want, err := s.Render("app_system", appData(ModeJSON))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			got, err := s.Render("app_system", appData(ModeJSON))
			if err == nil && got != want {
				err = errors.New("a concurrent render produced different text")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
