package desktop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeNonASCII types text with characters outside the keyboard map
// into GTK 3's mousepad and GTK 4's gnome-text-editor, saves it, and
// compares the file's bytes. "café naïve Grüße 日本" goes through the
// keyboard map, each missing character bound to a spare keycode of its
// own (an application reads a key press with the map it holds when it
// reads the event: rebinding one keycode per character typed "Grüße" as
// "Grßße"); 24 Greek letters, more than the spare keycodes, go through
// the text field's EditableText.
func TestTypeNonASCII(t *testing.T) {
	const mixed = "café naïve Grüße 日本"
	const greek = "αβγδεζηθικλμνξοπρστυφχψω"
	for _, editor := range []string{"mousepad", "gnome-text-editor"} {
		t.Run(editor, func(t *testing.T) {
			_, d := start(t, editor)
			ctx := context.Background()
			w := launch(t, d, editor)
			eff, err := d.Type(ctx, Target{}, w.ID, mixed+"\n", false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(eff.Did, "typed") {
				t.Errorf("the mixed text was not typed through the keyboard: %s", eff.Did)
			}
			eff, err = d.Type(ctx, Target{}, w.ID, greek, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(eff.Did, "editable text") {
				t.Errorf("24 distinct characters outside the map were not inserted through the editable text: %s", eff.Did)
			}
			file := filepath.Join(t.TempDir(), "typed.txt")
			saveAs(t, d, w, file)
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if want := mixed + "\n" + greek; strings.TrimSuffix(string(got), "\n") != want {
				t.Fatalf("the saved file holds %q, want %q", got, want)
			}
		})
	}
}

// saveAs saves the document of editor window w as file: ctrl+s, the
// dialog's name field set to the path, Return.
func saveAs(t *testing.T, d *Desktop, w Window, file string) {
	t.Helper()
	ctx := context.Background()
	before, err := d.Windows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Keys(ctx, Target{}, w.ID, []string{"ctrl+s"}, false); err != nil {
		t.Fatal(err)
	}
	// The dialog may come after the action's effect was read (GTK 4's
	// file chooser is slow to open on a loaded machine): wait for it.
	var opened []Window
	for deadline := time.Now().Add(30 * time.Second); len(opened) == 0; {
		now, err := d.Windows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if opened, _ = diffWindows(before, now); len(opened) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("ctrl+s opened no dialog in 30s: %+v", now)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	dlg, err := d.Observe(ctx, opened[0].ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := nameField(t, dlg)
	if _, err := d.SetValue(ctx, Target{ID: name.ID}, file); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Keys(ctx, Target{ID: name.ID}, "", []string{"Return"}, false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(file); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Return in the save dialog's name field did not write %s in 30s", file)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
