package desktop

import (
	"context"
	"strings"
	"testing"
)

// TestSpreadsheetCells drives LibreOffice Calc's sheet by cell address:
// the sheet (2^20 rows x 2^14 columns, a table that manages its cells) is
// one control with its size and the range in view; any cell is reached
// through it by row and column or by name, set, clicked and read back.
// localc is a script that starts soffice, which forks the program that
// shows the window: launch_app followed it.
func TestSpreadsheetCells(t *testing.T) {
	_, d, w := sharedApp(t, "libreoffice-calc", "localc", "--norestore")
	ctx := context.Background()
	if !d.launchedWindow(w) {
		t.Fatalf("LibreOffice's window (pid %d) is not counted as launched by localc", w.PID)
	}
	for _, p := range d.launched {
		if p.cmd.Args[0] == "localc" && p.cmd.Process.Pid == w.PID {
			t.Fatalf("the window is localc's own process %d: the test shows nothing about following a launcher", w.PID)
		}
	}
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sheet Control
	for _, c := range obs.Controls {
		if c.Table != nil && c.Table.Rows >= 1<<20 {
			sheet = c
		}
	}
	if sheet.ID == 0 {
		t.Fatalf("no sheet with its size in:\n%s", obs.Text())
	}
	tab := sheet.Table
	if tab.FirstRow != 1 || tab.FirstColumn != 1 || tab.LastRow < 10 || tab.LastColumn < 5 || tab.Columns != 1<<14 {
		t.Fatalf("the sheet reports %+v: want 2^20 x 2^14 with rows 1-10+ and columns A-E+ in view", *tab)
	}
	if !strings.Contains(sheet.line(), "not read") {
		t.Errorf("a spreadsheet's view of %d cells was read whole by default: %s", (tab.LastRow)*(tab.LastColumn), sheet.line())
	}
	if _, err := d.SetValue(ctx, Target{ID: sheet.ID, Cell: "B7"}, "café"); err != nil {
		t.Fatal(err)
	}
	eff, err := d.SetValue(ctx, Target{ID: sheet.ID, Row: 3, Column: 1}, "42")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(eff.Did, `"A3"`) {
		t.Errorf("row 3, column 1 was not A3: %s", eff.Did)
	}
	eff, err = d.Click(ctx, Target{ID: sheet.ID, Cell: "c2"}, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Target == nil || eff.Target.Name != "C2" || !eff.Target.st.has(stFocused) {
		t.Errorf("after clicking C2 the target is %+v", eff.Target)
	}
	cells, err := d.Observe(ctx, w.ID, ObserveOptions{Page: Page{Role: "table cell"}})
	if err != nil {
		t.Fatal(err)
	}
	text, listed, err := cells.Page(Page{Role: "table cell"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"B7": "café", "A3": "42"}
	for _, c := range listed {
		if v, ok := want[c.Name]; ok && strings.TrimSpace(c.Text) == v {
			delete(want, c.Name)
		}
	}
	if len(want) > 0 {
		t.Fatalf("the cells read back lack %v:\n%s", want, text)
	}
	for _, bad := range []Target{{ID: sheet.ID, Cell: "A2000000"}, {ID: sheet.ID, Row: 1, Column: 20000}, {ID: sheet.ID, Cell: "7B"}} {
		if _, err := d.Click(ctx, bad, "", 1); err == nil {
			t.Errorf("clicking %+v was accepted", bad)
		} else if !strings.Contains(err.Error(), "rows and") && !strings.Contains(err.Error(), "is not an address") {
			t.Errorf("clicking %+v: %v", bad, err)
		}
	}
	if _, err := d.Click(ctx, Target{ID: listed[0].ID, Row: 1, Column: 1}, "", 1); err == nil || !strings.Contains(err.Error(), "is not a table") {
		t.Errorf("row and column on a cell: %v", err)
	}
}
