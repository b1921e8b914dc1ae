package desktop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCoverage compares, window by window, the controls observe lists
// with those an independent AT-SPI walk finds (testdata/atspi_walk.py:
// pyatspi, one call at a time, every child, tables scanned row by row),
// under the one definition of a control in docs/desktop.md. A walk's
// control is seen when observe lists a control of the same role and box,
// or, for a table's cell, when observe reports the cell's table with the
// cell in view (a spreadsheet lists only its cells with text, and any
// cell in view is addressable by row and column). Each window must be
// seen at 95% or more.
func TestCoverage(t *testing.T) {
	// The file chooser is shared by the test binary's runs (-count): its
	// folder must outlive this one.
	files := filepath.Join(sharedDir(t), "chooser")
	os.Mkdir(files, 0o755)
	for i := range 14 {
		os.WriteFile(filepath.Join(files, fmt.Sprintf("file%02d.txt", i)), []byte("x"), 0o644)
	}
	os.Mkdir(filepath.Join(files, "folder"), 0o755)
	for _, tc := range []struct {
		name string
		cmd  []string
		// min is the least number of controls the walk must find: a
		// window that came up empty proves nothing.
		min int
	}{
		{"gnome-calculator", []string{"gnome-calculator"}, 50},
		{"gnome-text-editor", []string{"gnome-text-editor"}, 10},
		{"file-chooser", []string{"/usr/bin/python3", "testdata/file_chooser.py", files}, 40},
		{"long-list", []string{"/usr/bin/python3", "testdata/long_list.py", "5000"}, 20},
		{"libreoffice-calc", []string{"localc", "--norestore"}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, d, w := sharedApp(t, tc.name, tc.cmd...)
			// A window still laying itself out (LibreOffice's infobar
			// comes late) is compared once it holds still: the same
			// observation before and after the walk.
			var obs *Observation
			var ref walked
			for try := 0; ; try++ {
				before, err := d.Observe(context.Background(), w.ID, ObserveOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ref = walk(t, s, w)
				if obs, err = d.Observe(context.Background(), w.ID, ObserveOptions{}); err != nil {
					t.Fatal(err)
				}
				if obs.Text() == before.Text() {
					break
				}
				if try == 5 {
					t.Fatalf("the window changed during each of 6 walks; last:\n%s", obs.Text())
				}
			}
			if len(ref.Controls) < tc.min {
				t.Fatalf("the walk found %d controls, fewer than %d: the window is not what the test expects", len(ref.Controls), tc.min)
			}
			seen, missed := coverage(obs, ref)
			pct := 100 * float64(seen) / float64(len(ref.Controls))
			t.Logf("%s: observe lists %d controls (%d objects read, %s); the walk finds %d; seen %d (%.1f%%)",
				tc.name, len(obs.Controls), obs.Nodes, obs.Fetch, len(ref.Controls), seen, pct)
			if pct < 95 {
				t.Errorf("observe saw %.1f%% of the walk's controls, want at least 95%%; missed: %v\nobserved:\n%s", pct, missed, obs.Text())
			}
		})
	}
}

// coverage counts the walk's controls that obs sees, and names up to 20
// it misses.
func coverage(obs *Observation, ref walked) (int, []string) {
	type key struct {
		role       string
		x, y, w, h int
	}
	w := obs.Window.Bounds
	listed := map[key]int{}
	tables := map[key]*Table{}
	for _, c := range obs.Controls {
		k := key{c.Role, c.Bounds.X - w.X, c.Bounds.Y - w.Y, c.Bounds.W, c.Bounds.H}
		listed[k]++
		if c.Table != nil {
			tables[key{"", k.x, k.y, k.w, k.h}] = c.Table
		}
	}
	seen := 0
	var missed []string
	for _, c := range ref.Controls {
		k := key{c.Role, c.X, c.Y, c.W, c.H}
		if listed[k] > 0 {
			listed[k]--
			seen++
			continue
		}
		if c.Row != nil && c.Table != nil {
			if tab := tables[key{"", c.Table.X, c.Table.Y, c.Table.W, c.Table.H}]; tab != nil && tab.FirstRow > 0 &&
				*c.Row+1 >= tab.FirstRow && *c.Row+1 <= tab.LastRow && *c.Column+1 >= tab.FirstColumn && *c.Column+1 <= tab.LastColumn {
				seen++
				continue
			}
		}
		if len(missed) < 20 {
			missed = append(missed, fmt.Sprintf("%s %q @%d,%d %dx%d", c.Role, c.Name, c.X, c.Y, c.W, c.H))
		}
	}
	return seen, missed
}
