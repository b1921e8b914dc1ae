package prompts

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/saucerhq/saucer/command"
)

// RenderAgain gives what Render gives for the same data, whether the data
// is the kept render's own lists and maps, equal copies of them, or
// differs from it anywhere deep inside (a tool's annotation, a byte of
// its schema, a device feature, a note), and past the renders it keeps.
func TestRenderAgainIsRender(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	tool := command.ToolInfo{Name: "read_file", Namespace: "files", ToolType: command.Action, Description: "Read a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Annotations: map[string]any{"readOnlyHint": false}}
	base := AppData{Request: "tidy up", Subtask: "list notes", App: "files", Tools: []command.ToolInfo{tool}, Mode: ModeJSON,
		Device: command.DeviceInfo{Platform: "linux", Hostname: "vm", Features: []string{"cli"}, Custom: map[string]any{"rack": []any{"4"}}},
		Notes:  []Note{{Subtask: "s", App: "shell", Status: "FINISH", Result: "r"}}, Step: 1, MaxSteps: 6}
	copyOf := func(d AppData) AppData {
		d.Tools = slices.Clone(d.Tools)
		for i := range d.Tools {
			d.Tools[i].Annotations = maps.Clone(d.Tools[i].Annotations)
			d.Tools[i].InputSchema = slices.Clone(d.Tools[i].InputSchema)
		}
		d.Device.Features, d.Device.Custom = slices.Clone(d.Device.Features), maps.Clone(d.Device.Custom)
		d.Device.Custom["rack"] = slices.Clone(d.Device.Custom["rack"].([]any))
		d.Notes = slices.Clone(d.Notes)
		return d
	}
	variants := map[string]func(*AppData){
		"the same":      func(*AppData) {},
		"an annotation": func(d *AppData) { d.Tools[0].Annotations["readOnlyHint"] = true },
		"a byte of a schema": func(d *AppData) {
			copy(d.Tools[0].InputSchema[bytes.Index(d.Tools[0].InputSchema, []byte("string")):], "strinG")
		},
		"a device feature":    func(d *AppData) { d.Device.Features[0] = "gui" },
		"a nested custom":     func(d *AppData) { d.Device.Custom["rack"] = []any{"5"} },
		"another app":         func(d *AppData) { d.App = "shell" },
		"the mode":            func(d *AppData) { d.Mode = ModeTools },
		"one tool more":       func(d *AppData) { d.Tools = append(d.Tools, tool) },
		"no device features":  func(d *AppData) { d.Device.Features = nil },
		"an empty annotation": func(d *AppData) { d.Tools[0].Annotations = map[string]any{} },
	}
	for _, name := range []string{"app_system", "app_user"} {
		for round := range 2 { // the second round finds renders kept, or pushed out
			for what, change := range variants {
				d := copyOf(base)
				change(&d)
				want, err := s.Render(name, d)
				if err != nil {
					t.Fatal(err)
				}
				for _, data := range []AppData{d, copyOf(d)} {
					if got, err := s.RenderAgain(name, data); err != nil || got != want {
						t.Fatalf("%s, round %d, %s: RenderAgain differs from Render (%v):\n%s\nwant\n%s", name, round, what, err, got, want)
					}
				}
			}
		}
	}
}

// sameTools compares every field of a tool, and a version reads every
// one (versionHash.tools): one added to command.ToolInfo must be read
// there too, or a render kept for another tool could be given.
func TestSameToolsKnowsEveryField(t *testing.T) {
	if n := reflect.TypeFor[command.ToolInfo]().NumField(); n != 10 {
		t.Fatalf("command.ToolInfo has %d fields, sameTools and versionHash.tools read 10: read the new ones", n)
	}
}

// A template called from another is rendered once for each data it meets
// (the notes, the same at every step until a subtask finishes), and never
// given for other data: not when the caller changed its list in place
// since, nor for a list that differs in one field.
func TestPartialsFollowTheirData(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	notes := []Note{{Subtask: "write it", App: "files", Status: "FINISH", Result: "wrote 18 bytes"}, {Subtask: "list", App: "shell", Status: "FAIL", Result: "no folder"}}
	data := HostData{Request: "tidy up", Notes: notes, Mode: ModeTools, Round: 2, MaxRounds: 4}
	check := func(what string) {
		t.Helper()
		want, err := slowRender(s, "host_status", data)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Render("host_status", data); err != nil || got != want {
			t.Fatalf("%s: the fast path rendered (%v)\n%s\nwant\n%s", what, err, got, want)
		}
	}
	check("first")
	check("again")
	notes[1].Result = "listed 1 file" // in place: the same list
	check("a note changed in place")
	data.Notes = append(slices.Clone(notes), Note{Subtask: "read", App: "files", Status: "FINISH", Result: "ok"})
	check("a note more")
	data.Notes = data.Notes[:2]
	data.Notes[0].Status = "FAIL"
	check("a status")
}

// A list or map of the data changed in place between two calls, as a
// middleware editing the tool list would, gives the prompt of the data as
// it is now, not the render kept for the same lists before the change.
func TestRenderAgainSeesChangesInPlace(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	tools := []command.ToolInfo{{Name: "read_file", Namespace: "files", ToolType: command.Action, Description: "Read a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Annotations: map[string]any{"readOnlyHint": true}}}
	data := AppData{Request: "tidy up", Subtask: "list notes", App: "files", Tools: tools, Mode: ModeJSON,
		Device: command.DeviceInfo{Platform: "linux", Features: []string{"cli"}}, EarlierNotes: []Note{{Subtask: "s", App: "shell", Status: "FINISH", Result: "r"}}}
	changes := []struct {
		what   string
		change func()
	}{
		{"a tool's description", func() { tools[0].Description = "Read a text file whole." }},
		{"a tool's annotation", func() { tools[0].Annotations["readOnlyHint"] = false }},
		{"a byte of a tool's schema", func() { tools[0].InputSchema[bytes.IndexByte(tools[0].InputSchema, 'p')] = 'P' }},
		{"a device feature", func() { data.Device.Features[0] = "gui" }},
		{"an earlier note", func() { data.EarlierNotes[0].Result = "listed 3 files" }},
	}
	for _, name := range []string{"app_system", "app_user"} {
		for _, c := range changes {
			if _, err := s.RenderAgain(name, data); err != nil {
				t.Fatal(err)
			}
			c.change()
			want, err := s.Render(name, data)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.RenderAgain(name, data); err != nil || got != want {
				t.Fatalf("%s after %s changed in place: RenderAgain gave a stale prompt (%v):\n%s\nwant\n%s", name, c.what, err, got, want)
			}
		}
	}
}
