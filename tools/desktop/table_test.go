package desktop

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestLongListRowByCoordinates: a row of a 5,000-row list far out of view
// is addressed by the list's id and its row: selecting it selects that
// row (read back through the Table interface), and the list's view moves
// to show it, without the list ever being enumerated.
func TestLongListRowByCoordinates(t *testing.T) {
	_, d, w := sharedApp(t, "long-list", "/usr/bin/python3", "testdata/long_list.py", "5000")
	ctx := context.Background()
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var list Control
	for _, c := range obs.Controls {
		if c.Table != nil {
			list = c
		}
	}
	if list.Table == nil {
		t.Fatalf("no list in:\n%s", obs.Text())
	}
	// The list is shared: row 1 first brings its view to the top, and
	// leaves it there for the next test (TestCoverage walks the rows on
	// top when the binary runs again).
	top := func() error { _, err := d.Select(ctx, Target{ID: list.ID, Row: 1, Column: 1}); return err }
	if err := top(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := top(); err != nil {
			t.Errorf("bringing the shared list back to its top: %v", err)
		}
	})
	if obs, err = d.Observe(ctx, w.ID, ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range obs.Controls {
		if c.ID == list.ID {
			list = c
		}
	}
	if list.Table.Rows != 5000 || list.Table.LastRow >= 4000 {
		t.Fatalf("the list is %+v, want 5000 rows with row 4000 out of view:\n%s", list.Table, obs.Text())
	}
	if obs.Nodes > 1000 {
		t.Fatalf("observe read %d objects of a 5,000-row list", obs.Nodes)
	}
	eff, err := d.Select(ctx, Target{ID: list.ID, Row: 4000, Column: 1})
	if err != nil {
		t.Fatal(err)
	}
	if eff.Target == nil || eff.Target.Name != "Item 4000" || !slices.Contains(eff.Target.States, "selected") {
		t.Fatalf("selecting row 4000: %+v", eff.Target)
	}
	obs, err = d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range obs.Controls {
		if c.ID == list.ID {
			if c.Table.FirstRow > 4000 || c.Table.LastRow < 4000 {
				t.Fatalf("after selecting row 4000 the list shows rows %d-%d", c.Table.FirstRow, c.Table.LastRow)
			}
			if !slices.Equal(c.Table.SelectedRows, []int{4000}) || !strings.Contains(obs.Text(), "selected rows 4000") {
				t.Fatalf("the list's selection reads %v:\n%s", c.Table.SelectedRows, obs.Text())
			}
			return
		}
	}
	t.Fatalf("the list is gone:\n%s", obs.Text())
}
