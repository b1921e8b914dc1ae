package desktop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// A container that manages its descendants (a spreadsheet's sheet, a
// long list or tree view, a file chooser's files) may have millions of
// children that exist only when asked for: it is never enumerated.
// Through its Table interface Saucer reads its size, finds the cells in
// view (the cell at its top-left corner, then along the first row and
// column until they leave the view) and reads those, at most maxCells.

// grid is what a managed container shows.
type grid struct {
	rows, cols int
	// The cells in view, 0-based and inclusive; r0 is -1 when none is.
	r0, r1, c0, c1 int
	headers        []gridItem
	cells          []gridItem
	cut            int // cells in view not read (the bound)
	// selected counts the rows selected whole (Table's NSelectedRows),
	// and selectedRows names them (0-based) when there are at most
	// maxSelectedRows: a list's selection may lie out of view.
	selected     int
	selectedRows []int
}

// maxSelectedRows is the most selected rows named one by one (a
// spreadsheet's select-all selects a million).
const maxSelectedRows = 20

// gridItem is one cell (or column header) read.
type gridItem struct {
	node     *node
	row, col int // -1 for a header's row
	det      details
}

// inView reports whether the cell at row, col (0-based) is in view.
func (g *grid) inView(row, col int) bool {
	return g.r0 >= 0 && row >= g.r0 && row <= g.r1 && col >= g.c0 && col <= g.c1
}

// cellRef is the stable name Saucer gives a table's cell: its table and
// coordinates (a toolkit may make a new object for the same cell each
// time it is asked).
func cellRef(table ref, row, col int) ref {
	return ref{table.Bus, table.Path + dbus.ObjectPath(fmt.Sprintf("#%d,%d", row, col))}
}

// parseCellRef reverses cellRef.
func parseCellRef(r ref) (table ref, row, col int, ok bool) {
	p, coords, found := strings.Cut(string(r.Path), "#")
	if !found {
		return ref{}, 0, 0, false
	}
	rs, cs, _ := strings.Cut(coords, ",")
	row, err1 := strconv.Atoi(rs)
	col, err2 := strconv.Atoi(cs)
	return ref{r.Bus, dbus.ObjectPath(p)}, row, col, err1 == nil && err2 == nil
}

// readGrid reads what the managed container n shows within area (the
// window's area, in the application's coordinates): its size, the range
// of cells in view, and those cells if there are at most maxListedCells
// of them or cells is set (then at most maxCells).
func (a *a11y) readGrid(ctx context.Context, n *node, area Rect, cells bool) (*grid, error) {
	g := &grid{r0: -1}
	b := a.batch(ctx)
	var ext call
	if !n.hasBox {
		ext = b.call(n.ref, ifComponent+".GetExtents", uint32(0))
	}
	nr, nc, ns := b.prop(n.ref, ifTable, "NRows"), b.prop(n.ref, ifTable, "NColumns"), b.prop(n.ref, ifTable, "NSelectedRows")
	if err := b.wait(); err != nil {
		return nil, err
	}
	var selected int32
	if ns.storeVariant(&selected) == nil && selected > 0 {
		g.selected = int(selected)
		var rows []int32
		if selected <= maxSelectedRows && a.do(ctx, n.ref, ifTable+".GetSelectedRows", &rows) == nil {
			for _, r := range rows {
				g.selectedRows = append(g.selectedRows, int(r))
			}
		}
	}
	if ext.c != nil {
		var e extents
		if err := ext.store(&e); err != nil {
			return nil, err
		}
		n.box, n.hasBox = e.rect(), true
	}
	view := clip(n.box, area)
	var rows, cols int32
	if err := errors.Join(nr.storeVariant(&rows), nc.storeVariant(&cols)); err != nil {
		return nil, err
	}
	g.rows, g.cols = int(rows), int(cols)
	if view.empty() {
		return g, nil
	}
	if g.rows <= 0 || g.cols <= 0 {
		return g, nil
	}
	r0, c0, r1, c1, err := a.corners(ctx, n.ref, view, g)
	if err != nil || r0 < 0 {
		return g, err
	}
	// Without the bottom-right corner (a list shorter than its view), go
	// along the first column and the first row until the view ends.
	last := func(fixed int, alongRows bool) (int, error) {
		end := r0
		if !alongRows {
			end = c0
		}
		for {
			from, to := end+1, end+64
			if alongRows {
				to = min(to, g.rows-1)
			} else {
				to = min(to, g.cols-1)
			}
			if from > to {
				return end, nil
			}
			boxes, err := a.cellBoxes(ctx, n.ref, fixed, from, to, alongRows)
			if err != nil {
				return end, err
			}
			for _, bx := range boxes {
				if !bx.overlaps(view) {
					return end, nil
				}
				end++
			}
		}
	}
	if r1 < r0 || c1 < c0 {
		if r1, err = last(c0, true); err != nil {
			return g, err
		}
		if c1, err = last(r0, false); err != nil {
			return g, err
		}
	}
	g.r0, g.r1, g.c0, g.c1 = r0, r1, c0, c1
	if (r1-r0+1)*(c1-c0+1) > maxListedCells && !cells {
		return g, nil // a spreadsheet's view: its cells are read when asked for
	}
	return g, a.readCells(ctx, n, view, g)
}

// corners finds the cells at the view's top-left and bottom-right
// corners: the first of a few points in from each corner (a header may
// cover the top, a scroll bar the edge) that the table says is on a cell.
// r1 and c1 are -1 when no point near the bottom-right is on a cell (a
// list shorter than its view). A table that cannot say what is at a
// point is scanned from its first row, in chunks, up to 1024 rows.
func (a *a11y) corners(ctx context.Context, table ref, view Rect, g *grid) (r0, c0, r1, c1 int, err error) {
	const probes = 12
	b := a.batch(ctx)
	var at [2 * probes]call
	for k := range probes {
		at[k] = b.call(table, ifComponent+".GetAccessibleAtPoint", int32(view.X+2), int32(view.Y+2+6*k), uint32(0))
		at[probes+k] = b.call(table, ifComponent+".GetAccessibleAtPoint", int32(view.X+view.W-3), int32(view.Y+view.H-3-6*k), uint32(0))
	}
	if err := b.wait(); err != nil {
		return -1, -1, -1, -1, err
	}
	hits := make([]ref, len(at))
	b = a.batch(ctx)
	idx := make([]call, len(at))
	for k := range at {
		var r childRef
		if at[k].store(&r) == nil && r.Path != nullPath && r.Path != "" && r.ref() != table {
			hits[k] = r.ref()
			idx[k] = b.call(hits[k], ifAccessible+".GetIndexInParent")
		}
	}
	if err := b.wait(); err != nil {
		return -1, -1, -1, -1, err
	}
	b = a.batch(ctx)
	type rc struct{ row, col call }
	rcs := make([]rc, len(at))
	for k := range at {
		var index int32
		if idx[k].c != nil && idx[k].store(&index) == nil && index >= 0 {
			rcs[k] = rc{b.call(table, ifTable+".GetRowAtIndex", index), b.call(table, ifTable+".GetColumnAtIndex", index)}
		}
	}
	if err := b.wait(); err != nil {
		return -1, -1, -1, -1, err
	}
	r0, c0, r1, c1 = -1, -1, -1, -1
	for k, x := range rcs {
		var r, c int32
		if x.row.c == nil || x.row.store(&r) != nil || x.col.store(&c) != nil || r < 0 || c < 0 {
			continue
		}
		if k < probes && r0 < 0 {
			r0, c0 = int(r), int(c)
		}
		if k >= probes && r1 < 0 {
			r1, c1 = int(r), int(c)
		}
	}
	if r0 >= 0 {
		return r0, c0, r1, c1, nil
	}
	// No answer at any point: scan the first column from the top.
	for from := 0; from < min(g.rows, 1024); from += 64 {
		to := min(from+63, g.rows-1)
		boxes, err := a.cellBoxes(ctx, table, 0, from, to, true)
		if err != nil {
			return -1, -1, -1, -1, err
		}
		for i, bx := range boxes {
			if bx.Y+bx.H > view.Y && bx.Y < view.Y+view.H && !bx.empty() {
				// This row is in view; its first column in view follows.
				row := from + i
				for cfrom := 0; cfrom < min(g.cols, 256); cfrom += 64 {
					cboxes, err := a.cellBoxes(ctx, table, row, cfrom, min(cfrom+63, g.cols-1), false)
					if err != nil {
						return -1, -1, -1, -1, err
					}
					for j, cb := range cboxes {
						if cb.overlaps(view) {
							return row, cfrom + j, -1, -1, nil
						}
					}
				}
				return -1, -1, -1, -1, nil
			}
		}
	}
	return -1, -1, -1, -1, nil
}

// cellBoxes reads the boxes of the cells from..to of a column (alongRows)
// or of a row; a cell the table does not give has an empty box.
func (a *a11y) cellBoxes(ctx context.Context, table ref, fixed, from, to int, alongRows bool) ([]Rect, error) {
	b := a.batch(ctx)
	at := make([]call, 0, to-from+1)
	for i := from; i <= to; i++ {
		r, c := i, fixed
		if !alongRows {
			r, c = fixed, i
		}
		at = append(at, b.call(table, ifTable+".GetAccessibleAt", int32(r), int32(c)))
	}
	if err := b.wait(); err != nil {
		return nil, err
	}
	b = a.batch(ctx)
	ext := make([]call, len(at))
	for i, c := range at {
		var r childRef
		if c.store(&r) == nil && r.Path != nullPath && r.Path != "" {
			ext[i] = b.call(r.ref(), ifComponent+".GetExtents", uint32(0))
		}
	}
	if err := b.wait(); err != nil {
		return nil, err
	}
	out := make([]Rect, len(at))
	for i, c := range ext {
		var e extents
		if c.c != nil && c.store(&e) == nil {
			out[i] = e.rect()
		}
	}
	return out, nil
}

// readCells reads the cells in view (at most maxCells, row by row) and
// the column headers above them.
func (a *a11y) readCells(ctx context.Context, n *node, view Rect, g *grid) error {
	type pos struct{ row, col int }
	var want []pos
	for r := g.r0; r <= g.r1; r++ {
		for c := g.c0; c <= g.c1; c++ {
			if len(want) == maxCells {
				g.cut++
				continue
			}
			want = append(want, pos{r, c})
		}
	}
	b := a.batch(ctx)
	at := make([]call, len(want))
	for i, p := range want {
		at[i] = b.call(n.ref, ifTable+".GetAccessibleAt", int32(p.row), int32(p.col))
	}
	hdr := make([]call, 0, g.c1-g.c0+1)
	for c := g.c0; c <= g.c1; c++ {
		hdr = append(hdr, b.call(n.ref, ifTable+".GetColumnHeader", int32(c)))
	}
	if err := b.wait(); err != nil {
		return err
	}
	var items []gridItem
	for i, c := range at {
		var r childRef
		if c.store(&r) == nil && r.Path != nullPath && r.Path != "" {
			items = append(items, gridItem{node: &node{ref: r.ref()}, row: want[i].row, col: want[i].col})
		}
	}
	nCells := len(items)
	for i, c := range hdr {
		var r childRef
		if c.store(&r) == nil && r.Path != nullPath && r.Path != "" {
			items = append(items, gridItem{node: &node{ref: r.ref()}, row: -1, col: g.c0 + i})
		}
	}
	if err := a.readItems(ctx, items); err != nil {
		return err
	}
	for i, it := range items {
		if !it.det.box.overlaps(view) || it.node.states.has(stDefunct) {
			continue
		}
		if i >= nCells {
			if it.node.states.has(stShowing) {
				g.headers = append(g.headers, it)
			}
			continue
		}
		g.cells = append(g.cells, it)
	}
	return nil
}

// readItems reads the role, name, states, box and text of cells. A cell
// that is only a holder of others (GTK 3's cell of an icon and a text)
// takes its name from theirs.
func (a *a11y) readItems(ctx context.Context, items []gridItem) error {
	type pending struct{ role, name, state, ext, text, count call }
	b := a.batch(ctx)
	ps := make([]pending, len(items))
	for i, it := range items {
		r := it.node.ref
		ps[i] = pending{b.call(r, ifAccessible+".GetRole"), b.prop(r, ifAccessible, "Name"), b.call(r, ifAccessible+".GetState"),
			// -1: to the end (LibreOffice refuses an end past it); a cell's
			// text is short.
			b.call(r, ifComponent+".GetExtents", uint32(0)), b.call(r, ifText+".GetText", int32(0), int32(-1)),
			b.prop(r, ifAccessible, "ChildCount")}
	}
	if err := b.wait(); err != nil {
		return err
	}
	var holders []*node
	for i, p := range ps {
		n := items[i].node
		var words []uint32
		var e extents
		var count int32
		if errors.Join(p.role.store(&n.role), p.name.storeVariant(&n.name), p.state.store(&words), p.ext.store(&e)) != nil {
			n.states = 1 << stDefunct
			continue
		}
		n.states, n.known = statesOf(words), true
		items[i].det.box = e.rect()
		_ = p.text.store(&items[i].det.text)
		items[i].det.text = capText(items[i].det.text)
		if p.count.storeVariant(&count) == nil && count > 0 && count <= 8 && strings.TrimSpace(n.name+items[i].det.text) == "" {
			n.childCount = int(count)
			holders = append(holders, n)
		}
	}
	if len(holders) == 0 {
		return nil
	}
	kids, err := a.children(ctx, holders)
	if err != nil {
		return err
	}
	b = a.batch(ctx)
	names := make([][]call, len(holders))
	for i := range holders {
		for _, k := range kids[i] {
			names[i] = append(names[i], b.prop(k, ifAccessible, "Name"))
		}
	}
	if err := b.wait(); err != nil {
		return err
	}
	for i, n := range holders {
		var parts []string
		for _, c := range names[i] {
			var s string
			if c.storeVariant(&s) == nil && strings.TrimSpace(s) != "" {
				parts = append(parts, strings.TrimSpace(s))
			}
		}
		n.name = strings.Join(parts, " ")
	}
	return nil
}

// cellName is a cell's address in a spreadsheet's terms (B7), from its
// 0-based row and column.
func cellName(row, col int) string {
	return columnName(col) + strconv.Itoa(row+1)
}

// columnName is A, B, ..., Z, AA, ... for 0, 1, ...
func columnName(col int) string {
	s := ""
	for col++; col > 0; col = (col - 1) / 26 {
		s = string(rune('A'+(col-1)%26)) + s
	}
	return s
}

// parseCell reads a spreadsheet address (B7, aa12) as 0-based row and
// column.
func parseCell(s string) (row, col int, err error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	i := 0
	for i < len(s) && s[i] >= 'A' && s[i] <= 'Z' {
		col = col*26 + int(s[i]-'A'+1)
		i++
	}
	n, err := strconv.Atoi(s[i:])
	if i == 0 || i > 3 || err != nil || n < 1 {
		return 0, 0, fmt.Errorf("cell %q is not an address such as B7 (column letters, then the row number)", s)
	}
	return n - 1, col - 1, nil
}
