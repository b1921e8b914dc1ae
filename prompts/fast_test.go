package prompts

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
)

// slowRender is Render by text/template alone, the definition the fast
// path must match.
func slowRender(s *Set, name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := s.root.Lookup(name).Execute(&buf, data); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

// fastOnly is the fast path alone; errSlow when it hands over.
func fastOnly(s *Set, name string, data any) (string, error) {
	return s.renderFast(s.root.Lookup(name), data)
}

// promptData is a spread of what the agents render the templates with:
// empty and full lists, both modes, white space and lines to trim and
// indent, the last step, no limit, odd devices and tools.
func promptData(r *rand.Rand) []any {
	str := func(parts ...string) string { return parts[r.IntN(len(parts))] }
	text := func() string {
		return str("", " ", "plain", "  padded \n", "two\nlines", "a\n\n  indented\n\tb\n", "ünïcödé ✓", "{{.Not}} a template", "<b>&amp;</b>", "line\r\nwith CR")
	}
	notes := func() []Note {
		var out []Note
		for i := r.IntN(4); i > 0; i-- {
			out = append(out, Note{Subtask: text(), App: str("files", "shell", ""), Status: str("FINISH", "FAIL"), Result: text()})
		}
		return out
	}
	dev := func() command.DeviceInfo {
		d := command.DeviceInfo{Platform: str("", "linux"), Hostname: str("", "box"), OSVersion: str("", "Debian 12"), Arch: str("", "amd64"),
			CPUCount: r.IntN(3) * 4, CPUModel: str("", "EPYC"), MemoryTotalGB: []float64{0, 15.5, 32, 1e21}[r.IntN(4)]}
		if r.IntN(2) == 0 {
			d.Features = []string{"screenshot", "a11y"}[:r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			d.Custom = map[string]any{"b": 2, "a": []any{"x", 1.5, nil}}
		}
		return d
	}
	tools := func() []command.ToolInfo {
		var out []command.ToolInfo
		for i := r.IntN(4); i > 0; i-- {
			t := command.ToolInfo{Key: "files.read_file", Name: str("read_file", "write_file"), Namespace: "files", Description: text(),
				ToolType: command.ToolType(str("action", "data_collection")), InputSchema: json.RawMessage(str("", `{"type":"object","properties":{"z":{},"a":{"type":"string"}}}`, `{}`))}
			switch r.IntN(4) {
			case 0:
				t.Annotations = map[string]any{"readOnlyHint": true}
			case 1:
				t.Annotations = map[string]any{"destructiveHint": true, "readOnlyHint": false}
			case 2:
				t.Annotations = map[string]any{}
			}
			out = append(out, t)
		}
		return out
	}
	var out []any
	for _, mode := range []string{ModeTools, ModeJSON} {
		max := r.IntN(4)
		host := HostData{Request: text(), Device: dev(), Mode: mode, Round: r.IntN(4) + 1, MaxRounds: max, Notes: notes()}
		for i := r.IntN(3); i > 0; i-- {
			host.Apps = append(host.Apps, App{Name: str("files", "shell"), Description: text(), Tools: tools()})
		}
		app := AppData{Request: text(), Subtask: text(), App: str("files", "shell"), Tools: tools(), Device: dev(), Notes: notes(),
			Mode: mode, Step: r.IntN(4) + 1, MaxSteps: max}
		for i := r.IntN(3); i > 0; i-- {
			app.Observations = append(app.Observations, Observation{Name: str("list_dir", "screenshot"), Content: text()})
		}
		out = append(out, host, app)
	}
	cons := ConstellationData{Request: text(), Graph: text(), Step: r.IntN(4) + 1, MaxSteps: r.IntN(4)}
	for i := r.IntN(3); i > 0; i-- {
		cons.Devices = append(cons.Devices, ConstellationDevice{ID: str("a", "b"), Platform: str("", "linux"), Apps: []string{"files", "shell"}[:r.IntN(3)]})
		cons.Events = append(cons.Events, text())
	}
	return append(out, cons)
}

// Every built-in template renders on the fast path, and renders exactly
// what text/template renders, over many shapes of data.
func TestFastPathRendersAsTextTemplate(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range s.Names() {
		if !s.fast[name] {
			t.Errorf("the built-in template %s is not rendered on the fast path", name)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for i := 0; i < 50; i++ {
		for _, data := range promptData(r) {
			for _, name := range s.Names() {
				want, werr := slowRender(s, name, data)
				got, gerr := fastOnly(s, name, data)
				if gerr == errSlow {
					if werr == nil && wantsFast(name, data) {
						t.Fatalf("%s with %+v: the fast path handed over a render text/template makes", name, data)
					}
					continue
				}
				fast++
				if gerr != nil || werr != nil || got != want {
					t.Fatalf("%s with %+v:\nfast (%v):\n%s\ntext/template (%v):\n%s", name, data, gerr, got, werr, want)
				}
			}
		}
	}
	if fast < 500 {
		t.Errorf("only %d renders took the fast path", fast)
	}
}

// wantsFast says which renders of the built-in templates the fast path
// must make itself: each template with the data of its own agent
// (partials are called with theirs).
func wantsFast(name string, data any) bool {
	switch data.(type) {
	case HostData:
		return strings.HasPrefix(name, "host_")
	case AppData:
		return strings.HasPrefix(name, "app_")
	case ConstellationData:
		return strings.HasPrefix(name, "constellation_")
	}
	return false
}

// Overrides that use what the fast path does not know, or that fail, are
// rendered (or fail) as text/template renders them.
func TestFastPathHandsOverWhatItDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		// Not known: printf, a method, break, a map range, assignment.
		"app_status.tmpl":    `{{printf "%03d" .Step}} {{.Validate}} {{range .Observations}}{{break}}{{end}}{{range $k, $v := .Device.Custom}}{{$k}}={{$v}} {{end}}{{$x := 1}}{{$x = 2}}{{$x}}`,
		"host_status.tmpl":   `{{with .Notes}}{{range .}}{{.App}}{{end}}{{else}}none{{end}} {{index .Apps 0}}`,
		"app_user.tmpl":      `{{.Request | trim}} {{len .Tools}} {{eq .Mode "json" "tools"}} {{ne .Step 3}} {{lt .Step .MaxSteps}} {{not .Notes}} {{and .Step .Notes}} {{or .Notes .Subtask}}`,
		"host_user.tmpl":     `{{.Request}}{{template "part" .Notes}}`,
		"part.tmpl":          `{{range $i, $n := .}}{{if $i}};{{end}}{{$i}}:{{$n.Status}}{{end}}`,
		"app_examples.tmpl":  `{{.Device}} {{.Device.MemoryTotalGB}} {{.Device.Features}} {{eq .Device.CPUCount 0}} {{json .Device.Custom}} {{index .Device.Custom "a"}}`,
		"host_examples.tmpl": `{{range .Apps}}{{.Name}}{{range .Tools}}{{index .Annotations "readOnlyHint"}}{{end}}{{end}}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.fast["app_status"] {
		t.Error("app_status uses printf, a method, break and assignment, yet is marked for the fast path")
	}
	for _, name := range []string{"host_status", "app_user", "host_user", "part", "app_examples", "host_examples"} {
		if !s.fast[name] {
			t.Errorf("%s is not marked for the fast path", name)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 40; i++ {
		for _, data := range promptData(r) {
			for _, name := range []string{"app_status", "host_status", "app_user", "host_user", "app_examples", "host_examples"} {
				if !wantsFast(name, data) {
					continue
				}
				want, werr := slowRender(s, name, data)
				got, gerr := s.Render(name, data)
				if (werr == nil) != (gerr == nil) || werr == nil && got != want {
					t.Fatalf("%s with %+v:\nRender (%v):\n%s\ntext/template (%v):\n%s", name, data, gerr, got, werr, want)
				}
			}
		}
	}
	// A render text/template fails (index out of range) fails with its
	// error, naming the file.
	if _, err := s.Render("host_status", HostData{Mode: ModeTools}); err == nil || !strings.Contains(err.Error(), "host_status.tmpl") || !strings.Contains(err.Error(), "index") {
		t.Errorf("error %v", err)
	}
}

// FuzzFastPath: whatever the text, the fast path renders what
// text/template renders, or hands over.
func FuzzFastPath(f *testing.F) {
	f.Add("a", "b\n  c", "json", 2, 3)
	f.Add("", " ", "tools", 0, 0)
	f.Fuzz(func(t *testing.T, a, b, mode string, step, max int) {
		s, err := Load("")
		if err != nil {
			t.Fatal(err)
		}
		if mode != ModeJSON {
			mode = ModeTools
		}
		data := []any{
			AppData{Request: a, Subtask: b, App: a, Mode: mode, Step: step, MaxSteps: max, Notes: []Note{{Subtask: a, App: b, Status: a, Result: b}},
				Observations: []Observation{{Name: a, Content: b}}, Tools: []command.ToolInfo{{Name: a, Description: b}}},
			HostData{Request: b, Mode: mode, Round: step, MaxRounds: max, Notes: []Note{{Subtask: b, Result: a}}, Apps: []App{{Name: a, Description: b}}},
		}
		for _, d := range data {
			for _, name := range s.Names() {
				if !wantsFast(name, d) {
					continue
				}
				want, werr := slowRender(s, name, d)
				got, gerr := fastOnly(s, name, d)
				if gerr == errSlow {
					continue
				}
				if gerr != nil || werr != nil || got != want {
					t.Fatalf("%s: fast (%v) %q, text/template (%v) %q", name, gerr, got, werr, want)
				}
			}
		}
	})
}
