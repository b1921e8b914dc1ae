package desktop

import (
	"context"
	"errors"
	"fmt"
)

// Target names what an action acts on: a control by its id, or a cell of
// a table control by its row and column (from 1) or its address in a
// spreadsheet's terms ("B7"). A cell need not be listed: any cell in view
// can be reached through its table.
type Target struct {
	ID     int
	Row    int
	Column int
	Cell   string
}

func (t Target) isCell() bool { return t.Row != 0 || t.Column != 0 || t.Cell != "" }

// resolved is a target as it is now: its control (with a live object
// reference) and its window.
type resolved struct {
	c Control
	w Window
	// ifs are the object's interfaces, read now.
	ifs ifaces
}

// control finds the target's control and the window it was seen in, and
// checks that it still exists.
func (d *Desktop) control(ctx context.Context, t Target) (resolved, error) {
	r, known := d.ids.byID[t.ID]
	if !known {
		return resolved{}, fmt.Errorf("no control %d has been observed: observe the window and use an id from its list", t.ID)
	}
	var (
		c     Control
		w     Window
		found bool
	)
	for _, obs := range d.last {
		if cc, ok := obs.byID[t.ID]; ok {
			c, w, found = *cc, obs.Window, true
		}
	}
	app := d.apps[r.Bus]
	if app != nil && !d.awaitBusy(ctx, app) {
		return resolved{}, fmt.Errorf("control %d: %w", t.ID, notRespondingErr(app))
	}
	if t.isCell() {
		if !found || c.Table == nil {
			return resolved{}, fmt.Errorf("control %d is not a table: row, column and cell name a table's cell; give the table's id", t.ID)
		}
		return d.cell(ctx, c, w, t)
	}
	if table, row, col, ok := parseCellRef(r); ok {
		// A listed cell: found again through its table, where it is now.
		tc, tw, tfound := Control{}, Window{}, false
		for _, obs := range d.last {
			for _, cc := range obs.Controls {
				if cc.ref == table && cc.Table != nil {
					tc, tw, tfound = cc, obs.Window, true
				}
			}
		}
		if !tfound {
			return resolved{}, fmt.Errorf("control %d is a cell of a table that is no longer shown: observe again for current ids", t.ID)
		}
		return d.cell(ctx, tc, tw, Target{ID: tc.ID, Row: row + 1, Column: col + 1})
	}
	what := fmt.Sprintf("control %d", t.ID)
	if found {
		what = fmt.Sprintf("control %d (%s %q of window %s)", t.ID, c.Role, c.Name, w.ID)
	}
	b := d.a.batch(ctx)
	// Its actions too: an observation leaves out those its role implies.
	state, ifs, acts := b.call(r, ifAccessible+".GetState"), b.call(r, ifAccessible+".GetInterfaces"), b.call(r, ifAction+".GetActions")
	if err := b.wait(); err != nil {
		if app != nil && errors.Is(err, errNotResponding) {
			d.notResponding(app)
			return resolved{}, fmt.Errorf("%s: %w", what, notRespondingErr(app))
		}
		return resolved{}, err
	}
	var words []uint32
	var names []string
	err := errors.Join(state.store(&words), ifs.store(&names))
	if err != nil || statesOf(words).has(stDefunct) {
		if err != nil && !gone(err) {
			return resolved{}, fmt.Errorf("%s: %w", what, err)
		}
		return resolved{}, fmt.Errorf("%s no longer exists: its window was closed or its application rebuilt it since it was observed; observe again for current ids", what)
	}
	if !found {
		return resolved{}, fmt.Errorf("control %d is no longer shown in its window (it changed since it was observed): observe again for current ids", t.ID)
	}
	c.st = statesOf(words)
	var list []struct{ Name, Description, Key string }
	if acts.store(&list) == nil {
		c.Actions = userActions(list)
	}
	return resolved{c: c, w: w, ifs: ifacesOf(names)}, nil
}

// cell finds a cell of table control tc by its row and column or its
// address, and reads it as it is now.
func (d *Desktop) cell(ctx context.Context, tc Control, w Window, t Target) (resolved, error) {
	row, col := t.Row-1, t.Column-1
	if t.Cell != "" {
		if t.Row != 0 || t.Column != 0 {
			return resolved{}, errors.New("give a cell's address (cell) or its row and column, not both")
		}
		var err error
		if row, col, err = parseCell(t.Cell); err != nil {
			return resolved{}, err
		}
	}
	tab := tc.Table
	if row < 0 || col < 0 || row >= tab.Rows || col >= tab.Columns {
		return resolved{}, fmt.Errorf("table %d has %d rows and %d columns (counted from 1): there is no row %d, column %d",
			tc.ID, tab.Rows, tab.Columns, row+1, col+1)
	}
	var at childRef
	if err := d.a.do(ctx, tc.ref, ifTable+".GetAccessibleAt", &at, int32(row), int32(col)); err != nil {
		return resolved{}, d.controlErr(tc, fmt.Sprintf("find its cell at row %d, column %d", row+1, col+1), err)
	}
	if at.Path == nullPath || at.Path == "" {
		return resolved{}, fmt.Errorf("table %d gives no cell at row %d, column %d", tc.ID, row+1, col+1)
	}
	r := at.ref()
	b := d.a.batch(ctx)
	role, name, state, ext, ifs := b.call(r, ifAccessible+".GetRole"), b.prop(r, ifAccessible, "Name"),
		b.call(r, ifAccessible+".GetState"), b.call(r, ifComponent+".GetExtents", uint32(0)), b.call(r, ifAccessible+".GetInterfaces")
	if err := b.wait(); err != nil {
		return resolved{}, d.controlErr(tc, "read its cell", err)
	}
	var (
		rl    uint32
		nm    string
		words []uint32
		e     extents
		names []string
	)
	if err := errors.Join(role.store(&rl), name.storeVariant(&nm), state.store(&words), ext.store(&e), ifs.store(&names)); err != nil {
		return resolved{}, d.controlErr(tc, "read its cell", err)
	}
	st, is := statesOf(words), ifacesOf(names)
	c := Control{ID: d.ids.id(cellRef(tc.ref, row, col)), Role: roleName(rl), Name: cleanName(nm), States: st.shown(),
		Bounds: e.rect().add(w.dx, w.dy), Cell: &Cell{Table: tc.ID, Row: row + 1, Column: col + 1}, ref: r, st: st}
	if is&hasAction != 0 {
		var acts []struct{ Name, Description, Key string }
		if d.a.do(ctx, r, ifAction+".GetActions", &acts) == nil {
			c.Actions = userActions(acts)
		}
	}
	return resolved{c: c, w: w, ifs: is}, nil
}

func (d *Desktop) controlErr(c Control, what string, err error) error {
	if gone(err) {
		return fmt.Errorf("control %d (%s %q) no longer exists: observe again for current ids", c.ID, c.Role, c.Name)
	}
	if errors.Is(err, errNotResponding) {
		if app := d.apps[c.ref.Bus]; app != nil {
			d.notResponding(app)
			return fmt.Errorf("control %d (%s %q): %s: %w", c.ID, c.Role, c.Name, what, notRespondingErr(app))
		}
	}
	return fmt.Errorf("control %d (%s %q): %s: %w", c.ID, c.Role, c.Name, what, err)
}

// describe names a control for an effect's "did": its role and name, and
// for a cell its place.
func describe(c Control) string {
	s := fmt.Sprintf("%s %q", c.Role, c.Name)
	if c.Cell != nil && c.Cell.Row > 0 {
		s += fmt.Sprintf(" (row %d, column %d of table %d)", c.Cell.Row, c.Cell.Column, c.Cell.Table)
	}
	return s
}
