package desktop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/godbus/dbus/v5"
)

// Effect is what an action changed, so that the model sees the result of
// its step without observing again.
type Effect struct {
	// Did says how the action was carried out.
	Did string `json:"did"`
	// Ready says, for a launch, what it waited for before the window
	// counted as ready (a page or document loading, a tree settling), or
	// when it gave up.
	Ready string `json:"ready,omitempty"`
	// Point is where the action landed, in the pixels of the window's
	// screenshot (for reports that mark it).
	Point *Point `json:"point,omitempty"`
	// Window is the window acted on, as it is now (absent once closed).
	Window *Window `json:"window,omitempty"`
	// Focused is the control that has the keyboard focus now.
	Focused *Control `json:"focused,omitempty"`
	// Target is the control acted on, as it is now.
	Target *Control `json:"target,omitempty"`
	// Changed lists controls whose name, text, value or states changed.
	Changed []Change `json:"changed,omitempty"`
	// Appeared and Disappeared say which controls came and went.
	Appeared    *Controls `json:"appeared,omitempty"`
	Disappeared *Controls `json:"disappeared,omitempty"`
	// NewWindows and ClosedWindows are top-level windows that opened or
	// closed.
	NewWindows    []Window `json:"new_windows,omitempty"`
	ClosedWindows []Window `json:"closed_windows,omitempty"`
}

// Point is a position in a window's screenshot.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// pointIn is the centre of box (on the screen) in window w's screenshot.
func pointIn(box Rect, w Window) *Point {
	x, y := box.centre()
	return &Point{x - w.Bounds.X, y - w.Bounds.Y}
}

// Change is one control's change.
type Change struct {
	ID     int    `json:"id,omitempty"`
	Role   string `json:"role"`
	Name   string `json:"name,omitempty"`
	Field  string `json:"field"`
	Before string `json:"before"`
	After  string `json:"after"`
}

const maxChanges = 20

// Controls says which controls came or went: how many, and a few of them
// by role and name, so that the model knows what a dialog that opened or
// closed held without observing again, while an effect stays short when
// a hundred controls change.
type Controls struct {
	Count int `json:"count"`
	// Some are up to maxNamed of them, in the window's order, those with
	// a name first: `[41] push button "Save"` as observe lists one that
	// appeared (its id acts on it), `push button "Save"` for one gone.
	Some []string `json:"some"`
}

// maxNamed is how many controls that came or went an effect names;
// maxNameRunes cuts each name.
const (
	maxNamed     = 5
	maxNameRunes = 60
)

// someControls names cs for an effect, nil when there are none.
func someControls(cs []Control, withID bool) *Controls {
	if len(cs) == 0 {
		return nil
	}
	out := &Controls{Count: len(cs)}
	for _, named := range []bool{true, false} {
		for _, c := range cs {
			if len(out.Some) == maxNamed {
				return out
			}
			if (c.Name != "") != named {
				continue
			}
			s := c.Role
			if c.Name != "" {
				s += " " + strconv.Quote(cutRunes(c.Name, maxNameRunes))
			}
			if withID {
				s = fmt.Sprintf("[%d] %s", c.ID, s)
			}
			out.Some = append(out.Some, s)
		}
	}
	return out
}

// cutRunes cuts s to n runes, marking the cut.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// act runs do on window w and reports what changed in it and on the
// desktop. before is w's observation before the action.
func (d *Desktop) act(ctx context.Context, w Window, target Target, do func() (string, error)) (*Effect, error) {
	wins, err := d.windows(ctx)
	if err != nil {
		return nil, err
	}
	before := d.last[w.ref]
	if before == nil {
		if before, err = d.observe(ctx, w, ObserveOptions{}); err != nil {
			return nil, err
		}
	}
	did, err := do()
	if err != nil {
		return nil, err
	}
	// An application answers in its own time: read what changed after
	// the settle time, and again (up to five times) until a window opened
	// or closed, or two reads agree (a button's press may show before the
	// dialog it belongs to closes).
	var (
		eff  *Effect
		obs  *Observation
		prev string
	)
	for attempt := 0; ; attempt++ {
		select {
		case <-time.After(d.opts.Settle):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		eff = &Effect{Did: did}
		after, err := d.windows(ctx)
		if err != nil {
			return nil, err
		}
		eff.NewWindows, eff.ClosedWindows = diffWindows(wins, after)
		var now *Window
		for i := range after {
			if after[i].ref == w.ref {
				now = &after[i]
			}
		}
		if now == nil {
			delete(d.last, w.ref)
			return eff, nil
		}
		eff.Window = now
		if now.Title != w.Title {
			eff.Changed = append(eff.Changed, Change{Role: now.Role, Name: now.Title, Field: "window title", Before: w.Title, After: now.Title})
		}
		if obs, err = d.observe(ctx, *now, ObserveOptions{}); err != nil {
			return eff, nil // the window went away while we looked
		}
		diffControls(eff, before, obs)
		windowsMoved := len(eff.NewWindows)+len(eff.ClosedWindows) > 0
		text := obs.Text()
		if windowsMoved || attempt == 4 || (attempt > 0 && text == prev) {
			break
		}
		prev = text
	}
	if c, ok := obs.byID[target.ID]; ok && !target.isCell() {
		cc := *c
		eff.Target = &cc
	} else if target.ID != 0 {
		// A cell: read where it is now, listed or not.
		if rv, err := d.control(ctx, target); err == nil {
			eff.Target = &rv.c
		}
	}
	for _, c := range obs.Controls {
		if c.st.has(stFocused) {
			cc := c
			eff.Focused = &cc
		}
	}
	// A new window (a dialog) usually takes the focus: say which control.
	for _, nw := range eff.NewWindows {
		if o, err := d.observe(ctx, nw, ObserveOptions{}); err == nil {
			for _, c := range o.Controls {
				if c.st.has(stFocused) {
					cc := c
					eff.Focused = &cc
				}
			}
		}
	}
	return eff, nil
}

func diffWindows(before, after []Window) (opened, closed []Window) {
	in := func(ws []Window, w Window) bool {
		return slices.ContainsFunc(ws, func(x Window) bool { return x.ref == w.ref })
	}
	for _, w := range after {
		if !in(before, w) {
			opened = append(opened, w)
		}
	}
	for _, w := range before {
		if !in(after, w) {
			closed = append(closed, w)
		}
	}
	return opened, closed
}

func diffControls(eff *Effect, before, after *Observation) {
	var came, went []Control
	for _, a := range after.Controls {
		b, ok := before.byID[a.ID]
		if !ok {
			came = append(came, a)
			continue
		}
		add := func(field, was, is string) {
			if was != is && len(eff.Changed) < maxChanges {
				eff.Changed = append(eff.Changed, Change{ID: a.ID, Role: a.Role, Name: a.Name, Field: field, Before: was, After: is})
			}
		}
		add("name", b.Name, a.Name)
		add("text", b.Text, a.Text)
		add("value", fmtValue(b.Value), fmtValue(a.Value))
		add("states", strings.Join(b.States, ","), strings.Join(a.States, ","))
	}
	for _, b := range before.Controls {
		if _, ok := after.byID[b.ID]; !ok {
			went = append(went, b)
		}
	}
	eff.Appeared, eff.Disappeared = someControls(came, true), someControls(went, false)
}

func fmtValue(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%g", *v)
}

// clickActions are AT-SPI action names that mean "activate", in order of
// preference.
var clickActions = []string{"click", "press", "activate", "toggle", "jump", "open"}

// Click clicks a control: button "left" (default), "right" or "middle",
// count 1 or 2. A single left click uses the control's own activate action
// where it has one (reliable whatever covers the control); otherwise, and
// always on a table's cell (whose "activate" opens it), the pointer
// clicks the control's centre through XTest.
func (d *Desktop) Click(ctx context.Context, t Target, button string, count int) (*Effect, error) {
	btn, count, err := clickOf(button, count)
	if err != nil {
		return nil, err
	}
	rv, unlock, err := d.lockedControl(ctx, t)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, w := rv.c, rv.w
	var at Rect
	eff, err := d.act(ctx, w, t, func() (string, error) {
		if btn == 1 && count == 1 && c.Cell == nil {
			if i := actionIndex(c.Actions, clickActions...); i >= 0 {
				// An item that can be selected and activated (a colour
				// swatch, an icon) is selected by a click; activating it is
				// what a double click does (a GTK swatch's "activate" does
				// not pick its colour).
				if j := actionIndex(c.Actions, "select"); j >= 0 && strings.EqualFold(c.Actions[i], "activate") {
					i = j
				}
				at = c.Bounds
				return d.doAction(ctx, c, i)
			}
		}
		x, y, box, err := d.centre(ctx, c, w)
		if err != nil {
			return "", err
		}
		at = box
		if err := d.x.click(x, y, btn, count); err != nil {
			return "", err
		}
		return fmt.Sprintf("clicked %s at %d,%d with the %s button %d time(s)", describe(c), x, y, orDefault(button, "left"), count), nil
	})
	if eff != nil {
		eff.Point = pointIn(at, w)
	}
	return eff, err
}

// lockedControl locks the desktop and finds the target control in it; the
// caller unlocks once its action is done.
func (d *Desktop) lockedControl(ctx context.Context, t Target) (resolved, func(), error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return resolved{}, nil, err
	}
	rv, err := d.control(ctx, t)
	if err != nil {
		unlock()
		return resolved{}, nil, err
	}
	return rv, unlock, nil
}

// doAction does a control's action i. An action that opens a modal
// dialog may not return until the dialog closes: past the application's
// deadline it is taken as done, and the effect shows the dialog.
func (d *Desktop) doAction(ctx context.Context, c Control, i int) (string, error) {
	var ok bool
	did := fmt.Sprintf("did the %q action of %s", c.Actions[i], describe(c))
	err := d.a.do(ctx, c.ref, ifAction+".DoAction", &ok, int32(i))
	if errors.Is(err, errNotResponding) {
		return did + " (the application has not confirmed it yet: it may be showing a dialog)", nil
	}
	if err != nil {
		return "", d.controlErr(c, "do its action "+c.Actions[i], err)
	}
	return did, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func actionIndex(actions []string, names ...string) int {
	for _, n := range names {
		for i, a := range actions {
			if strings.EqualFold(a, n) {
				return i
			}
		}
	}
	return -1
}

// centre is the control's centre on the screen now, with its window
// raised and focused so that the pointer reaches it. A cell scrolled out
// of view is scrolled into it first, where its table can.
func (d *Desktop) centre(ctx context.Context, c Control, w Window) (int, int, Rect, error) {
	var e extents
	if err := d.a.do(ctx, c.ref, ifComponent+".GetExtents", &e, uint32(0)); err != nil {
		return 0, 0, Rect{}, d.controlErr(c, "read its position", err)
	}
	r := e.rect().add(w.dx, w.dy)
	if !r.overlaps(d.screenArea(w)) && c.Cell != nil {
		// A cell out of view is brought into it: by ScrollTo where the
		// toolkit has it (LibreOffice), else by giving it the focus, which
		// moves a list's cursor there and scrolls to it (GTK's tree view
		// has no ScrollTo for its cells, and scrolls at its next frame).
		var ok bool
		const scrollAnywhere = 6 // ATSPI_SCROLL_ANYWHERE
		if (d.a.do(ctx, c.ref, ifComponent+".ScrollTo", &ok, uint32(scrollAnywhere)) == nil && ok) ||
			(d.a.do(ctx, c.ref, ifComponent+".GrabFocus", &ok) == nil && ok) {
			for deadline := time.Now().Add(time.Second); d.a.do(ctx, c.ref, ifComponent+".GetExtents", &e, uint32(0)) == nil; {
				if r = e.rect().add(w.dx, w.dy); r.overlaps(d.screenArea(w)) || time.Now().After(deadline) {
					break
				}
				select {
				case <-time.After(25 * time.Millisecond):
				case <-ctx.Done():
					return 0, 0, r, ctx.Err()
				}
			}
		}
	}
	if !r.overlaps(d.screenArea(w)) {
		return 0, 0, r, fmt.Errorf("control %d (%s) is not on the screen now (hidden or scrolled away): scroll it into view, or observe again", c.ID, describe(c))
	}
	if xw, ok := d.xwindow(w); ok {
		if err := d.x.activate(xw); err != nil {
			return 0, 0, r, err
		}
	}
	v := clip(r, d.screenArea(w))
	x, y := v.centre()
	return x, y, r, nil
}

// selectCell clicks a table's cell and waits until the cell, read again,
// is focused or selected: the click reached it. A sheet that moved
// between reading the cell's box and the click (LibreOffice lays itself
// out late) had another cell clicked: the cell is read and clicked
// again, up to three times.
func (d *Desktop) selectCell(ctx context.Context, c Control, w Window) error {
	cell := Target{ID: c.Cell.Table, Row: c.Cell.Row, Column: c.Cell.Column}
	for try := 0; try < 3; try++ {
		x, y, _, err := d.centre(ctx, c, w)
		if err != nil {
			return err
		}
		if err := d.x.click(x, y, 1, 1); err != nil {
			return err
		}
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			rv, err := d.control(ctx, cell)
			if err != nil {
				return err
			}
			if rv.c.st.has(stFocused) || rv.c.st.has(stSelected) {
				return nil
			}
			c = rv.c
			select {
			case <-time.After(25 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return fmt.Errorf("clicking %s did not select it (three tries): the table may be moving or covered; observe again", describe(c))
}

// focusFor gives the keyboard focus to the target (none: leave the focus
// where it is, in window) and refuses a terminal unless allowed. A cell is
// clicked, which selects it.
func (d *Desktop) focusFor(ctx context.Context, t Target, window string, terminal bool) (Window, resolved, error) {
	var (
		w   Window
		rv  resolved
		err error
	)
	if t.ID != 0 {
		if rv, err = d.control(ctx, t); err != nil {
			return w, rv, err
		}
		w = rv.w
	} else if w, _, err = d.window(ctx, window); err != nil {
		return w, rv, err
	}
	if w.NotResponding {
		return w, rv, fmt.Errorf("window %s %q: %w", w.ID, w.Title, notRespondingErr(d.apps[w.ref.Bus]))
	}
	if xw, ok := d.xwindow(w); ok {
		if err := d.x.activate(xw); err != nil {
			return w, rv, err
		}
	}
	c := rv.c
	if c.Cell != nil {
		if err := d.selectCell(ctx, c, w); err != nil {
			return w, rv, err
		}
	} else if t.ID != 0 && !c.st.has(stFocused) {
		var ok bool
		if d.a.do(ctx, c.ref, ifComponent+".GrabFocus", &ok) != nil || !ok {
			x, y, _, err := d.centre(ctx, c, w)
			if err != nil {
				return w, rv, err
			}
			if err := d.x.click(x, y, 1, 1); err != nil {
				return w, rv, err
			}
		}
	}
	obs, err := d.observe(ctx, w, ObserveOptions{})
	if err != nil {
		return w, rv, err
	}
	isTerminal := c.Role == "terminal"
	for _, fc := range obs.Controls {
		if fc.st.has(stFocused) && fc.Role == "terminal" {
			isTerminal = true
		}
	}
	if isTerminal && !terminal {
		return w, rv, errors.New("the keyboard focus is in a terminal, where typing runs commands: use the shell tool, or type_in_terminal (a destructive action that may need approval)")
	}
	return w, rv, nil
}

// Type types text into the target (none: wherever the focus is in the
// window, "" the active one). terminal allows typing into a terminal.
// Text goes through the keyboard map, with characters it lacks bound to
// spare keys; text with more distinct such characters than there are
// spare keys is inserted through the focused control's editable text.
func (d *Desktop) Type(ctx context.Context, t Target, window, text string, terminal bool) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, rv, err := d.focusFor(ctx, t, window, terminal)
	if err != nil {
		return nil, err
	}
	if d.x.canType(text) {
		return d.act(ctx, w, t, func() (string, error) {
			// Under Wayland, where a compositor may offer no keyboard,
			// through AT-SPI's EditableText first.
			if did, ok, err := d.insertText(ctx, rv.c, w, text); ok || err != nil {
				return did, err
			}
			if err := d.x.typeText(text); err != nil {
				return "", err
			}
			return fmt.Sprintf("typed %d characters", len([]rune(text))), nil
		})
	}
	ed, err := d.editable(ctx, rv, w)
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, t, func() (string, error) {
		var caret int32
		if err := d.a.get(ctx, ed, ifText, "CaretOffset", &caret); err != nil {
			return "", fmt.Errorf("read the caret of the focused control: %w", err)
		}
		var ok bool
		n := int32(len([]rune(text)))
		// InsertText's length counts bytes (of UTF-8), the caret characters.
		if err := d.a.do(ctx, ed, ifEditableText+".InsertText", &ok, caret, text, int32(len(text))); err != nil || !ok {
			return "", fmt.Errorf("the focused control refused the text (it may be read-only): %v", err)
		}
		_ = d.a.do(ctx, ed, ifText+".SetCaretOffset", &ok, caret+n)
		return fmt.Sprintf("inserted %d characters through the control's editable text (they need more keys than the keyboard map has free)", n), nil
	})
}

// editable is the object to insert text into: the target if it has
// editable text, else the window's focused control if it has.
func (d *Desktop) editable(ctx context.Context, rv resolved, w Window) (ref, error) {
	if rv.c.ref != (ref{}) && rv.ifs&hasEditableText != 0 {
		return rv.c.ref, nil
	}
	if obs := d.last[w.ref]; obs != nil {
		for _, c := range obs.Controls {
			if !c.st.has(stFocused) {
				continue
			}
			var names []string
			if d.a.do(ctx, c.ref, ifAccessible+".GetInterfaces", &names) == nil && ifacesOf(names)&hasEditableText != 0 {
				return c.ref, nil
			}
		}
	}
	return ref{}, fmt.Errorf("the text has more distinct characters outside the keyboard map than %s, and the focused control has no editable text to insert it into: type it in parts", d.x.freeKeys())
}

// Keys presses key chords in order ("ctrl+s", "Return").
func (d *Desktop) Keys(ctx context.Context, t Target, window string, chords []string, terminal bool) (*Effect, error) {
	return d.withChords(ctx, t, window, chords, terminal, func() (string, error) {
		for _, ch := range chords {
			mods, key, _ := parseChord(ch)
			if err := d.x.press(mods, key); err != nil {
				return "", err
			}
		}
		return "pressed " + strings.Join(chords, ", "), nil
	})
}

// withChords checks chords, focuses the target (or the window) and runs
// do there as an action with its effect: Keys and HoldKeys.
func (d *Desktop) withChords(ctx context.Context, t Target, window string, chords []string, terminal bool, do func() (string, error)) (*Effect, error) {
	for _, ch := range chords {
		if _, _, err := parseChord(ch); err != nil {
			return nil, err
		}
	}
	if len(chords) == 0 {
		return nil, errors.New("no keys given: pass chords such as [\"ctrl+s\"] or [\"Return\"]")
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, _, err := d.focusFor(ctx, t, window, terminal)
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, t, do)
}

// MaxHold bounds how long HoldKeys holds a chord, in seconds.
const MaxHold = 10

// HoldKeys holds each chord down for seconds (at most MaxHold), one after
// another: its modifiers, then its key, released in reverse order (a
// long press, a game's movement, shift held while something else acts).
func (d *Desktop) HoldKeys(ctx context.Context, t Target, window string, chords []string, seconds float64) (*Effect, error) {
	if seconds <= 0 || seconds > MaxHold {
		return nil, fmt.Errorf("hold %g s: give seconds above 0 and at most %d", seconds, MaxHold)
	}
	return d.withChords(ctx, t, window, chords, false, func() (string, error) {
		for _, ch := range chords {
			mods, key, _ := parseChord(ch)
			if err := d.holdChord(ctx, mods, key, time.Duration(seconds*float64(time.Second))); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("held %s for %g s", strings.Join(chords, ", "), seconds), nil
	})
}

// holdChord holds a chord's modifiers and key for d, and releases them
// whatever failed (a key left held changes every later key and click).
func (d *Desktop) holdChord(ctx context.Context, mods []xproto.Keysym, key xproto.Keysym, hold time.Duration) error {
	for _, m := range modifierKeys {
		if key == m { // a modifier held alone ("shift"): held as one
			mods, key = append(mods, key), 0
			break
		}
	}
	if len(mods) > 0 {
		if err := d.x.hold(mods, true); err != nil {
			return err
		}
		defer d.x.hold(mods, false)
	}
	if key == 0 { // a chord of modifiers alone ("shift")
		return sleepCtx(ctx, hold)
	}
	if err := d.x.key(mods, key, true); err != nil {
		return err
	}
	err := sleepCtx(ctx, hold)
	if e := d.x.key(mods, key, false); err == nil {
		err = e
	}
	return err
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetValue sets a control's text (editable text) or number (a value). An
// editable spreadsheet cell without editable text is set as a person
// does: clicked, typed into, and Return.
func (d *Desktop) SetValue(ctx context.Context, t Target, value string) (*Effect, error) {
	rv, unlock, err := d.lockedControl(ctx, t)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, w := rv.c, rv.w
	switch {
	case rv.ifs&hasEditableText != 0:
		if c.Role == "terminal" {
			return nil, errors.New("control is a terminal: setting its text may run commands; use type_in_terminal")
		}
		return d.act(ctx, w, t, func() (string, error) {
			var ok bool
			if err := d.a.do(ctx, c.ref, ifEditableText+".SetTextContents", &ok, value); err != nil {
				return "", d.controlErr(c, "set its text", err)
			}
			if !ok {
				return "", fmt.Errorf("control %d (%s) refused the text (it may be read-only)", c.ID, describe(c))
			}
			return fmt.Sprintf("set the text of %s", describe(c)), nil
		})
	case c.Cell != nil && c.st.has(stEditable):
		if !d.x.canType(value + "\n") {
			return nil, fmt.Errorf("the value has more distinct characters outside the keyboard map than %s: set it in parts", d.x.freeKeys())
		}
		return d.act(ctx, w, t, func() (string, error) {
			if err := d.selectCell(ctx, c, w); err != nil {
				return "", err
			}
			if err := d.x.typeText(value + "\n"); err != nil {
				return "", err
			}
			return fmt.Sprintf("selected %s, typed %d characters and pressed Return", describe(c), len([]rune(value))), nil
		})
	case rv.ifs&hasValue != 0:
		var f float64
		if _, err := fmt.Sscan(value, &f); err != nil {
			return nil, fmt.Errorf("control %d (%s) takes a number, not %q", c.ID, describe(c), value)
		}
		return d.act(ctx, w, t, func() (string, error) {
			if err := d.a.do(ctx, c.ref, "org.freedesktop.DBus.Properties.Set", nil, ifValue, "CurrentValue", dbus.MakeVariant(f)); err != nil {
				return "", d.controlErr(c, "set its value", err)
			}
			return fmt.Sprintf("set the value of %s to %g", describe(c), f), nil
		})
	}
	return nil, fmt.Errorf("control %d (%s) has neither editable text nor a value: click it and type instead", c.ID, describe(c))
}

// Select selects an item (a list item, tab, menu item) through its
// container's selection, else its own action; a table's cell is clicked,
// as a person selects one.
func (d *Desktop) Select(ctx context.Context, t Target) (*Effect, error) {
	rv, unlock, err := d.lockedControl(ctx, t)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, w := rv.c, rv.w
	if c.Cell != nil {
		return d.act(ctx, w, t, func() (string, error) {
			if err := d.selectCell(ctx, c, w); err != nil {
				return "", err
			}
			return fmt.Sprintf("selected %s by clicking it", describe(c)), nil
		})
	}
	return d.act(ctx, w, t, func() (string, error) {
		var parent childRef
		var idx int32
		var ok bool
		if d.a.get(ctx, c.ref, ifAccessible, "Parent", &parent) == nil && parent.Path != nullPath &&
			d.a.do(ctx, c.ref, ifAccessible+".GetIndexInParent", &idx) == nil &&
			d.a.do(ctx, parent.ref(), ifSelection+".SelectChild", &ok, idx) == nil && ok {
			return fmt.Sprintf("selected %s (item %d of its container)", describe(c), idx), nil
		}
		if i := actionIndex(c.Actions, append([]string{"select"}, clickActions...)...); i >= 0 {
			return d.doAction(ctx, c, i)
		}
		return "", fmt.Errorf("control %d (%s) cannot be selected: its container has no selection and it has no action; click it instead", c.ID, describe(c))
	})
}

// Scroll turns the mouse wheel over a control (none: the window's centre).
func (d *Desktop) Scroll(ctx context.Context, t Target, window, direction string, amount int) (*Effect, error) {
	btn := map[string]byte{"up": 4, "down": 5, "left": 6, "right": 7}[direction]
	if btn == 0 {
		return nil, fmt.Errorf("direction %q: use up, down, left or right", direction)
	}
	if amount <= 0 {
		amount = 3
	}
	if amount > 50 {
		return nil, fmt.Errorf("amount %d: at most 50 wheel steps at once", amount)
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var w Window
	var x, y int
	if t.ID != 0 {
		rv, err := d.control(ctx, t)
		if err != nil {
			return nil, err
		}
		if x, y, _, err = d.centre(ctx, rv.c, rv.w); err != nil {
			return nil, err
		}
		w = rv.w
	} else {
		if w, _, err = d.window(ctx, window); err != nil {
			return nil, err
		}
		if xw, ok := d.xwindow(w); ok {
			if err := d.x.activate(xw); err != nil {
				return nil, err
			}
		}
		x, y = clip(w.Bounds, d.screenArea(w)).centre()
	}
	return d.act(ctx, w, t, func() (string, error) {
		if err := d.x.click(x, y, btn, amount); err != nil {
			return "", err
		}
		return fmt.Sprintf("scrolled %s %d steps at %d,%d", direction, amount, x, y), nil
	})
}

// FocusWindow raises a window and gives it the keyboard focus.
func (d *Desktop) FocusWindow(ctx context.Context, window string) (*Effect, error) {
	return d.onWindow(ctx, window, "focus", func(w Window, xw xwin) (string, error) {
		return fmt.Sprintf("raised and focused window %s %q", w.ID, w.Title), d.x.activate(xw)
	})
}

// CloseWindow asks a window's application to close it, as a window
// manager's close button does, and waits up to 3s for it to go. An
// application may ask first (save changes?): the new dialog is reported.
func (d *Desktop) CloseWindow(ctx context.Context, window string) (*Effect, error) {
	return d.onWindow(ctx, window, "close", func(w Window, xw xwin) (string, error) {
		if err := d.x.close(xw.id); err != nil {
			return "", err
		}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			ws, err := d.windows(ctx)
			if err != nil {
				return "", err
			}
			if !slices.ContainsFunc(ws, func(x Window) bool { return x.ref == w.ref }) {
				return fmt.Sprintf("closed window %s %q", w.ID, w.Title), nil
			}
			if len(ws) > 0 && ws[len(ws)-1].PID == w.PID && ws[len(ws)-1].ref != w.ref && ws[len(ws)-1].Role == "dialog" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return fmt.Sprintf("asked window %s %q to close; it is still open (see new_windows: the application may be asking something)", w.ID, w.Title), nil
	})
}

// maxWindowSide bounds a window's width and height, against typos.
const maxWindowSide = 16384

// ResizeWindow makes a window's content width x height pixels, its
// top-left corner kept.
func (d *Desktop) ResizeWindow(ctx context.Context, window string, width, height int) (*Effect, error) {
	if width < 1 || height < 1 || width > maxWindowSide || height > maxWindowSide {
		return nil, fmt.Errorf("a window of %dx%d pixels: give a width and a height from 1 to %d (list_windows gives the screen's windows and their sizes)", width, height, maxWindowSide)
	}
	return d.onWindow(ctx, window, "resize", func(w Window, xw xwin) (string, error) {
		return d.setBox(ctx, w, xw, Rect{xw.box.X, xw.box.Y, width, height}, "resized")
	})
}

// MoveWindow puts a window's top-left corner at x, y of the screen.
func (d *Desktop) MoveWindow(ctx context.Context, window string, x, y int) (*Effect, error) {
	return d.onWindow(ctx, window, "move", func(w Window, xw xwin) (string, error) {
		box, screen := Rect{x, y, xw.box.W, xw.box.H}, d.x.area()
		if !box.overlaps(screen) {
			return "", fmt.Errorf("window %s at %d,%d (%dx%d) would be off the %dx%d screen: give a corner on it", w.ID, x, y, box.W, box.H, screen.W, screen.H)
		}
		return d.setBox(ctx, w, xw, box, "moved")
	})
}

// MaximizeWindow makes a window fill the screen (with a window manager,
// its work area).
func (d *Desktop) MaximizeWindow(ctx context.Context, window string) (*Effect, error) {
	return d.onWindow(ctx, window, "maximise", func(w Window, xw xwin) (string, error) {
		if err := d.x.maximize(xw); err != nil {
			return "", err
		}
		now, err := d.awaitBounds(ctx, w, func(b Rect) bool { return b.W >= d.x.area().W*9/10 })
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("maximised window %s %q: it is %dx%d at %d,%d", w.ID, w.Title, now.W, now.H, now.X, now.Y), nil
	})
}

// setBox puts window w's content at box and waits for its application
// to take it; it says where the window is then.
func (d *Desktop) setBox(ctx context.Context, w Window, xw xwin, box Rect, verb string) (string, error) {
	if err := d.x.setBox(xw, box); err != nil {
		return "", err
	}
	now, err := d.awaitBounds(ctx, w, func(b Rect) bool { return b == box })
	if err != nil {
		return "", err
	}
	if now != box {
		return fmt.Sprintf("asked to put window %s %q at %d,%d, %dx%d; it is %dx%d at %d,%d (its application or the window manager keeps another size or place)",
			w.ID, w.Title, box.X, box.Y, box.W, box.H, now.W, now.H, now.X, now.Y), nil
	}
	return fmt.Sprintf("%s window %s %q: it is %dx%d at %d,%d", verb, w.ID, w.Title, now.W, now.H, now.X, now.Y), nil
}

// awaitBounds waits up to 2 s for window w's box to satisfy ok, and
// returns the box it has then.
func (d *Desktop) awaitBounds(ctx context.Context, w Window, ok func(Rect) bool) (Rect, error) {
	last := w.Bounds
	for deadline := time.Now().Add(2 * time.Second); ; {
		ws, err := d.windows(ctx)
		if err != nil {
			return last, err
		}
		for _, x := range ws {
			if x.ref == w.ref {
				last = x.Bounds
			}
		}
		if ok(last) || time.Now().After(deadline) {
			return last, nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// onWindow does a window manager's action (verb) on a window, by id or
// the one window names by default, and its X window, with the desktop
// locked; it reports what changed.
func (d *Desktop) onWindow(ctx context.Context, window, verb string, do func(w Window, xw xwin) (string, error)) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, _, err := d.window(ctx, window)
	if err != nil {
		return nil, err
	}
	xw, ok := d.xwindow(w)
	if !ok {
		return nil, fmt.Errorf("window %s %q has no X window of its process %d to %s", w.ID, w.Title, w.PID, verb)
	}
	return d.act(ctx, w, Target{}, func() (string, error) { return do(w, xw) })
}
