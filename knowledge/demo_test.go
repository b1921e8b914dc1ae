package knowledge_test

import (
	"archive/zip"
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/trajectory"
)

// psrFixture is a Steps Recorder recording written for these tests in the
// format psr.exe saves (an MHTML file, CRLF lines): five steps, three in
// Notepad's main window and its Save as dialog, one in File Explorer; two
// comments, one holding a password and another a literal secret; five
// placeholder JPEG screenshots.
const psrFixture = "testdata/psr/save-note.mht"

// The planted secrets: one the built-in patterns find (password=...), one
// only the configured secrets name.
const (
	psrPatternSecret = "Hunter2-Plaice-77"
	psrLiteralSecret = "correct-horse-battery-staple"
)

// zipOf writes a zip archive holding the named files.
func zipOf(t *testing.T, files map[string][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(files[name])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "Recording.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFixture(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(psrFixture)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A Steps Recorder .zip becomes one demonstration: the request as its
// title, the program most steps ran in as its app, the numbered steps in
// plain words with the person's comments, the file and its step range as
// its source. Secrets in the steps are redacted; screenshots are not kept.
func TestDemonstrationFromPSR(t *testing.T) {
	mht := readFixture(t)
	zipped := zipOf(t, map[string][]byte{"Recording_20261207_1002.mht": mht})
	red, err := trajectory.NewRedactor([]string{psrLiteralSecret}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	const request = "Save the note as notes.txt in Documents"
	e, err := knowledge.DemonstrationFromPSR(zipped, request, red)
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != knowledge.Demonstration || e.Title != request || e.App != "notepad" || strings.Join(e.Apps, ",") != "explorer,notepad" || e.Outcome != "" {
		t.Errorf("entry: kind %q title %q app %q apps %q outcome %q", e.Kind, e.Title, e.App, e.Apps, e.Outcome)
	}
	if got, want := e.Source.String(), zipped+" § steps 1-5"; got != want {
		t.Errorf("source %q, want %q", got, want)
	}
	wantText := `Request: Save the note as notes.txt in Documents
Shown by a person with Windows Steps Recorder: 5 steps in explorer, notepad. What was typed is not recorded, except in the person's comments.
Steps:
1. notepad: Left click on "File (menu item)" in "Untitled - Notepad"
2. notepad: Left click on "Save as (menu item)" in "Untitled - Notepad"
3. notepad: Keyboard input on "File name: (edit)" in "Save as" [... Ctrl-A ...]
   Comment: I typed "notes.txt" over the old name; the share asked for password=[REDACTED]
4. notepad: Left click on "Save (button)" in "Save as"
   Comment: Saved into Documents, signed in as [REDACTED]
5. explorer: Left double click on "notes.txt (list item)" in "Documents - File Explorer"
`
	if e.Text != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", e.Text, wantText)
	}
	for _, leak := range []string{psrPatternSecret, psrLiteralSecret, "/9j/", "screenshot", ".JPEG"} {
		if strings.Contains(e.Title+e.Text+e.Source.String(), leak) {
			t.Errorf("the entry keeps %q", leak)
		}
	}

	// The .mht itself gives the same entry (the same id: learning the
	// recording again, from wherever, replaces it), with its own source.
	file := filepath.Join(t.TempDir(), "Recording_20261207_1002.mht")
	os.WriteFile(file, mht, 0o644)
	m, err := knowledge.DemonstrationFromPSR(file, request, red)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != e.ID || m.Text != e.Text || m.Source.Path != file {
		t.Errorf("from the .mht: id %s (zip: %s), source %s, text:\n%s", m.ID, e.ID, m.Source, m.Text)
	}

	// A nil redactor still applies the built-in patterns.
	n, err := knowledge.DemonstrationFromPSR(zipped, request, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(n.Text, psrPatternSecret) || !strings.Contains(n.Text, "password=[REDACTED]") {
		t.Errorf("nil redactor:\n%s", n.Text)
	}
}

// A report without the recorder's XML (saved by something else, or
// edited) still gives its steps, from the HTML, without their programs.
func TestDemonstrationFromPSRWithoutXML(t *testing.T) {
	mht := readFixture(t)
	island := regexp.MustCompile(`(?s)<xml id="recordeddata">.*</xml>`)
	if !island.Match(mht) {
		t.Fatal("the fixture has no XML island")
	}
	zipped := zipOf(t, map[string][]byte{"r.mht": island.ReplaceAll(mht, nil)})
	e, err := knowledge.DemonstrationFromPSR(zipped, "save a note", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.App != "" || !strings.Contains(e.Text, "\n1. Left click on \"File (menu item)\" in \"Untitled - Notepad\"\n") ||
		!strings.Contains(e.Text, "\n5. Left double click on \"notes.txt (list item)\"\n") ||
		!strings.Contains(e.Text, "   Comment: I typed \"notes.txt\" over the old name") || e.Source.Section != "steps 1-5" {
		t.Errorf("app %q, source %s, text:\n%s", e.App, e.Source, e.Text)
	}
}

// Bad input is an error that says what was wrong and what to give.
func TestDemonstrationFromPSRErrors(t *testing.T) {
	dir := t.TempDir()
	notZip := filepath.Join(dir, "notes.zip")
	os.WriteFile(notZip, []byte("these are notes, not an archive\n"), 0o644)
	notMHT := filepath.Join(dir, "page.mht")
	os.WriteFile(notMHT, []byte("<html><body>Step 1: nothing</body></html>\n"), 0o644)
	noMHT := zipOf(t, map[string][]byte{"readme.txt": []byte("hello"), "screenshot0001.JPEG": {0xff, 0xd8}})
	// An MHT whose report lists no step: a recording stopped at once.
	empty := strings.Join([]string{
		"MIME-Version: 1.0",
		`Content-Type: multipart/related; type="text/html"; boundary="b0undary"`,
		"",
		"--b0undary",
		`Content-Type: text/html; charset="UTF-8"`,
		"Content-Location: main.htm",
		"",
		`<html><body><xml id="recordeddata"><script type="text/xml"><Report><UserActionData><RecordSession ActionCount="0"></RecordSession></UserActionData></Report></script></xml>`,
		`<div id="Steps"><h1>Steps</h1></div></body></html>`,
		"--b0undary--",
		"",
	}, "\r\n")
	noSteps := zipOf(t, map[string][]byte{"Recording.mht": []byte(empty)})
	twoMHT := zipOf(t, map[string][]byte{"a.mht": readFixture(t), "b.mht": readFixture(t)})

	for _, c := range []struct {
		file, request string
		want          []string
	}{
		{notZip, "x", []string{notZip + " is not a zip archive", "give the .zip that Steps Recorder saved"}},
		{notMHT, "x", []string{notMHT + " is not a Steps Recorder .mht file", "not an MHTML archive"}},
		{noMHT, "x", []string{noMHT + " holds no .mht file (it holds ", "readme.txt", "not a Steps Recorder recording"}},
		{noSteps, "x", []string{noSteps + " has no recorded steps", "record the task again with Steps Recorder"}},
		{twoMHT, "x", []string{"holds 2 .mht files (a.mht, b.mht)", "unzip it"}},
		{filepath.Join(dir, "missing.zip"), "x", []string{"missing.zip", "no such file"}},
		{noSteps, "  ", []string{"needs the request the person carried out"}},
	} {
		_, err := knowledge.DemonstrationFromPSR(c.file, c.request, nil)
		if err == nil {
			t.Errorf("%s: no error", c.file)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.file, err, w)
			}
		}
	}
}
