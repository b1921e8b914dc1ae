package desktop

import (
	"fmt"
	"strconv"
	"strings"
)

// Page picks which of an observation's controls its text lists (and its
// screenshot marks): those of a role, whose name or text holds a word, or
// that overlap a region of the window; then one page of them, whole lines
// that fit MaxChars. A large window is paged, never cut off mid-list.
type Page struct {
	// Role keeps controls of this role ("push button").
	Role string
	// Name keeps controls whose name or text contains it (any case).
	Name string
	// Region keeps controls that overlap it, in the window's pixels (the
	// screenshot's).
	Region *Rect
	// Number is the page, from 1 (0 is 1).
	Number int
	// MaxChars is the most characters of text a page holds (0:
	// DefaultPageChars).
	MaxChars int
}

// DefaultPageChars is a page's size when none is asked for.
const DefaultPageChars = 12000

// minPageChars is the smallest page: the header, the footer and a few
// lines.
const minPageChars = 1000

// maxLine bounds a name or text in a control's line.
const maxLine = 200

// Page renders one page of the observation for a model and returns the
// controls it lists.
func (o *Observation) Page(p Page) (string, []Control, error) {
	if p.MaxChars == 0 {
		p.MaxChars = DefaultPageChars
	}
	if p.MaxChars < minPageChars {
		return "", nil, fmt.Errorf("max_chars %d: a page needs at least %d characters", p.MaxChars, minPageChars)
	}
	if p.Number < 0 {
		return "", nil, fmt.Errorf("page %d: pages count from 1", p.Number)
	}
	if p.Number == 0 {
		p.Number = 1
	}
	var match []Control
	for _, c := range o.Controls {
		if p.keeps(c, o.Window) {
			match = append(match, c)
		}
	}
	// Pages of whole lines, each within the budget left by the header and
	// the footer.
	budget := p.MaxChars - 600
	var pages [][]Control
	var cur []Control
	size := 0
	for _, c := range match {
		n := len(c.line()) + 1
		if size+n > budget && len(cur) > 0 {
			pages, cur, size = append(pages, cur), nil, 0
		}
		cur, size = append(cur, c), size+n
	}
	if len(cur) > 0 || len(pages) == 0 {
		pages = append(pages, cur)
	}
	if p.Number > len(pages) {
		return "", nil, fmt.Errorf("page %d: this observation has %d page(s)", p.Number, len(pages))
	}
	shown := pages[p.Number-1]
	first := 1
	for _, pg := range pages[:p.Number-1] {
		first += len(pg)
	}
	var b strings.Builder
	w := o.Window
	fmt.Fprintf(&b, "Window %s %q (%s, pid %d) at %d,%d %dx%d: %d controls", w.ID, w.Title, w.App, w.PID, w.Bounds.X, w.Bounds.Y, w.Bounds.W, w.Bounds.H, len(o.Controls))
	if f := p.filters(); f != "" {
		fmt.Fprintf(&b, ", %d with %s", len(match), f)
	}
	if len(pages) > 1 {
		fmt.Fprintf(&b, "; page %d of %d lists %d-%d", p.Number, len(pages), first, first+len(shown)-1)
	}
	b.WriteString(". Use the number in [brackets] as the control id.\n")
	if o.Stale != "" {
		b.WriteString("Note: " + o.Stale + "\n")
	}
	if o.NoScreenshot != "" {
		fmt.Fprintf(&b, "(No screenshot: %s.)\n", o.NoScreenshot)
	}
	if o.Cut > 0 {
		fmt.Fprintf(&b, "Note: %d objects of this window were not read (it is larger than an observation reads); narrow it with role, name or region, or scroll.\n", o.Cut)
	}
	for _, c := range shown {
		b.WriteString(c.line())
		b.WriteByte('\n')
	}
	if p.Number < len(pages) {
		fmt.Fprintf(&b, "More controls follow: observe with page=%d (or narrow the list with role, name or region).\n", p.Number+1)
	}
	return b.String(), shown, nil
}

// wantsCells reports whether the page asks for table cells (by role, or
// by a name, which a cell's text may hold): then a spreadsheet's cells in
// view are read, not only its size and range.
func (p Page) wantsCells() bool {
	return strings.EqualFold(p.Role, "table cell") || p.Name != ""
}

func (p Page) keeps(c Control, w Window) bool {
	if p.Role != "" && !strings.EqualFold(c.Role, p.Role) {
		return false
	}
	if p.Name != "" {
		n := strings.ToLower(p.Name)
		if !strings.Contains(strings.ToLower(c.Name), n) && !strings.Contains(strings.ToLower(c.Text), n) {
			return false
		}
	}
	if p.Region != nil && !c.Bounds.add(-w.Bounds.X, -w.Bounds.Y).overlaps(*p.Region) {
		return false
	}
	return true
}

func (p Page) filters() string {
	var f []string
	if p.Role != "" {
		f = append(f, fmt.Sprintf("role %q", p.Role))
	}
	if p.Name != "" {
		f = append(f, fmt.Sprintf("%q in the name or text", p.Name))
	}
	if r := p.Region; r != nil {
		f = append(f, fmt.Sprintf("a part in the region %d,%d %dx%d", r.X, r.Y, r.W, r.H))
	}
	return strings.Join(f, " and ")
}

// Text renders every control, one line each (the effect of an action
// compares two of these).
func (o *Observation) Text() string {
	var b strings.Builder
	for _, c := range o.Controls {
		b.WriteString(c.line())
		b.WriteByte('\n')
	}
	return b.String()
}

func shorten(s string) string {
	if r := []rune(s); len(r) > maxLine {
		return string(r[:maxLine]) + "…"
	}
	return s
}

func (c Control) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] %s", c.ID, c.Role)
	if c.Name != "" {
		fmt.Fprintf(&b, " %q", shorten(c.Name))
	}
	if c.Text != "" {
		fmt.Fprintf(&b, " text=%q", shorten(c.Text))
	}
	if c.Value != nil {
		fmt.Fprintf(&b, " value=%g", *c.Value)
	}
	if t := c.Table; t != nil {
		fmt.Fprintf(&b, " %d rows x %d columns", t.Rows, t.Columns)
		if t.FirstRow > 0 {
			fmt.Fprintf(&b, ", in view rows %d-%d, columns %d-%d", t.FirstRow, t.LastRow, t.FirstColumn, t.LastColumn)
			inView := (t.LastRow - t.FirstRow + 1) * (t.LastColumn - t.FirstColumn + 1)
			switch {
			case t.Listed == inView:
				b.WriteString(" (each listed below)")
			case !t.CellsRead:
				fmt.Fprintf(&b, " (%d cells, not read: observe with role \"table cell\" to list those with text; act on any cell by this id with row and column, or cell as in B7)", inView)
			default:
				fmt.Fprintf(&b, " (%d cells; the %d with text or the focus are listed below; act on any cell by this id with row and column, or cell as in B7)", inView, t.Listed)
			}
		}
		switch {
		case len(t.SelectedRows) > 0:
			fmt.Fprintf(&b, ", selected rows %s", joinInts(t.SelectedRows))
		case t.Selected > 0:
			fmt.Fprintf(&b, ", %d rows selected", t.Selected)
		}
	}
	if cl := c.Cell; cl != nil {
		if cl.Row == 0 {
			fmt.Fprintf(&b, " (column %d of table %d)", cl.Column, cl.Table)
		} else {
			fmt.Fprintf(&b, " (row %d, column %d of table %d)", cl.Row, cl.Column, cl.Table)
		}
	}
	if len(c.States) > 0 {
		fmt.Fprintf(&b, " {%s}", strings.Join(c.States, ", "))
	}
	if len(c.Actions) > 0 {
		fmt.Fprintf(&b, " actions=%s", strings.Join(c.Actions, ","))
	}
	fmt.Fprintf(&b, " @%d,%d %dx%d", c.Bounds.X, c.Bounds.Y, c.Bounds.W, c.Bounds.H)
	return b.String()
}

// joinInts writes numbers as "3, 7, 12".
func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}
