package desktop

import (
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"
)

// screen is what differs between display servers: the windows as the
// server knows them (to raise, close and place what AT-SPI lists), the
// pixels, and pointer and keyboard input. The tree and the actions go
// through AT-SPI, the same on every server. X11 (x11.go) and Wayland
// (wayland.go) implement it. Keys are X keysyms, which XKB shares.
type screen interface {
	// kind names the server for messages: "X11", "sway", "Wayland".
	kind() string
	// topLevels lists the application windows the server knows.
	topLevels() ([]xwin, error)
	raise(w xproto.Window) error
	// activate raises x and gives it the keyboard focus, for input.
	activate(x xwin) error
	// bringToFront raises x for a screenshot when other windows cover it,
	// waiting up to timeout for it to repaint; it returns why the picture
	// may be stale, or "".
	bringToFront(x xwin, timeout time.Duration) (stale string, err error)
	close(w xproto.Window) error
	// setBox moves and resizes x so that its content is box on the
	// screen (a window manager may adjust it); maximize makes it fill
	// the screen (with a window manager, its work area).
	setBox(x xwin, box Rect) error
	maximize(x xwin) error
	// area is the screen's extent.
	area() Rect
	// capture reads a part of the screen, clipped to it.
	capture(r Rect) (*image.RGBA, Rect, error)
	// click presses button (1 left, 2 middle, 3 right, 4-7 the wheel)
	// count times at (x, y).
	click(x, y int, button byte, count int) error
	// move puts the pointer at (x, y); button presses (down) or releases
	// button (1-3) where the pointer is: with them a drag holds a button
	// while it moves.
	move(x, y int) error
	button(b byte, down bool) error
	// hold presses (down) or releases modifier keys, held while the
	// pointer acts (a ctrl+click).
	hold(mods []xproto.Keysym, down bool) error
	// key presses (down) or releases the key of keysym key alone, the
	// modifiers held (hold) staying as they are: a key held a while.
	key(mods []xproto.Keysym, key xproto.Keysym, down bool) error
	press(mods []xproto.Keysym, key xproto.Keysym) error
	typeText(s string) error
	// pointerAt is where the pointer is on the screen (under Wayland,
	// where Saucer last put it); ok false when that is unknown.
	pointerAt() (p image.Point, ok bool)
	// canType reports whether s can be typed whole through the keyboard;
	// freeKeys says, for the message when it cannot, how many keys it has
	// free for characters outside its map.
	canType(s string) bool
	freeKeys() string
	// windowRelative reports whether toolkits give boxes relative to
	// their window, as they do under Wayland, which tells no client where
	// a window is: xwin.box then places them on the screen.
	windowRelative() bool
	// closed reports that the connection to the server has ended (it is
	// dialled again).
	closed() bool
	Close()
}

// errCannot says that the display server offers no way to do something
// (a compositor without screen capture or virtual input): the tools say
// so, and use AT-SPI where it can act instead.
var errCannot = errors.New("this display server offers no way to do it")

// dialScreen connects to the display the options or the environment
// name: X11 when an X display is named (or DISPLAY is set and no Wayland
// display is named), else Wayland.
func dialScreen(o Options) (screen, error) {
	switch {
	case o.Display != "":
		x, err := dialX(o.Display)
		if err != nil {
			return nil, err
		}
		if o.Launcher != nil {
			x.hostPID = o.Launcher.HostPID
		}
		return x, nil
	case o.Wayland != "":
		return dialWayland(o.Wayland, o.SwaySock)
	case os.Getenv("DISPLAY") != "":
		return dialX("")
	case os.Getenv("WAYLAND_DISPLAY") != "":
		return dialWayland(os.Getenv("WAYLAND_DISPLAY"), o.SwaySock)
	}
	return nil, errors.New("no display: neither DISPLAY nor WAYLAND_DISPLAY is set (start the desktop session, set one, or give the desktop a display of its own: tools.desktop.display: own)")
}

func (d *display) kind() string { return "X11" }

func (d *display) pointerAt() (image.Point, bool) {
	r, err := xproto.QueryPointer(d.conn, d.root()).Reply()
	if err != nil || !r.SameScreen {
		return image.Point{}, false
	}
	return image.Pt(int(r.RootX), int(r.RootY)), true
}

// On X11 every box is a screen position.
func (d *display) windowRelative() bool { return false }

func (d *display) area() Rect {
	return Rect{0, 0, int(d.screen.WidthInPixels), int(d.screen.HeightInPixels)}
}

func (d *display) freeKeys() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("the %d free keys of %s", len(d.spares), d.name)
}

// place moves windows whose toolkit gives boxes relative to the window
// onto the screen, by where the display server shows them; their
// controls' boxes follow (Window.dx, dy). A window that draws its own
// frame under Wayland (GTK 3's header bars, Chromium) gives boxes
// relative to its whole surface, shadow included, which is larger than
// the window the compositor places. Shadows fall below: the side's
// shadow is half the extra width, the top's that less half of what the
// extra height has more (GTK 3: 21 a side, 21 on top of 43, to a pixel;
// Chromium: 16 a side, 11 on top of 42, measured on its links). The
// window is what the compositor shows, so its screenshot is the same on
// X11 and Wayland.
func (d *Desktop) place(ws []Window) {
	if !d.x.windowRelative() || len(ws) == 0 {
		return
	}
	xs, err := d.x.topLevels()
	if err != nil {
		return
	}
	for i := range ws {
		if xw, ok := matchWindow(xs, ws[i]); ok && !xw.box.empty() {
			b := ws[i].Bounds
			ws[i].dx, ws[i].dy = xw.box.X-b.X, xw.box.Y-b.Y
			ws[i].Bounds = b.add(ws[i].dx, ws[i].dy)
			if ew, eh := b.W-xw.box.W, b.H-xw.box.H; ew > 0 && eh > 0 {
				side, top := ew/2, eh/2
				if eh > ew {
					top = side - (eh-ew)/2
				}
				ws[i].dx -= side
				ws[i].dy -= max(top, 0)
				ws[i].Bounds = xw.box
			}
		}
	}
}

// matchWindow finds the server's window of an AT-SPI window: same process
// and title, else the only window of that process.
func matchWindow(xs []xwin, w Window) (xwin, bool) {
	var same []xwin
	for _, x := range xs {
		if int(x.pid) == w.PID {
			if x.title == w.Title {
				return x, true
			}
			same = append(same, x)
		}
	}
	if len(same) == 1 {
		return same[0], true
	}
	// A window without a title for the display server (GTK 3's dialogs
	// under sway): the only one of that process whose size is the
	// window's, or smaller by a shadow under 100 pixels a side.
	var sized []xwin
	for _, x := range same {
		dw, dh := w.Bounds.W-x.box.W, w.Bounds.H-x.box.H
		if x.title == "" && dw >= 0 && dh >= 0 && dw < 200 && dh < 200 {
			sized = append(sized, x)
		}
	}
	if len(sized) == 1 {
		return sized[0], true
	}
	return xwin{}, false
}

// AT-SPI's SINGLE_LINE state.
const stSingleLine = 26

// insertText types text under a Wayland compositor that offers no
// keyboard to a client (weston) into control c (or, when c is zero, the
// control that has the focus in window w) through AT-SPI's EditableText,
// at the caret, replacing a selection. The text between line breaks is
// inserted, a one-line field is activated for each break (what Return
// does there) and a multi-line one gets the line break, and the result
// says so. ok is false where there is a keyboard (X11, sway: typed keys
// mean the same there, a file list's type-ahead and an entry's
// completion included; an insert went into the one text field of a
// Thunar window whose file list had the focus) and where there is no
// such control or no editable text: type with the keyboard instead.
func (d *Desktop) insertText(ctx context.Context, c Control, w Window, text string) (did string, ok bool, err error) {
	if _, x11 := d.x.(*display); x11 {
		return "", false, nil
	}
	if wl, ok := d.x.(*wayland); ok {
		if _, _, keyboard := wl.scr.Has(); keyboard {
			return "", false, nil
		}
	}
	if c.ID == 0 {
		// Where the focus is; before the window has had the focus (a
		// window that has just opened), its one editable text, where
		// typing would land.
		obs := d.last[w.ref]
		if obs == nil {
			return "", false, nil
		}
		var editable []Control
		for _, fc := range obs.Controls {
			if fc.st.has(stFocused) {
				c = fc
			}
			if fc.st.has(stEditable) {
				editable = append(editable, fc)
			}
		}
		if c.ID == 0 && len(editable) == 1 {
			c = editable[0]
		}
		if c.ID == 0 {
			return "", false, nil
		}
	}
	var names []string
	if err := d.a.do(ctx, c.ref, ifAccessible+".GetInterfaces", &names); err != nil {
		return "", false, d.controlErr(c, "read its interfaces", err)
	}
	if ifacesOf(names)&(hasEditableText|hasText) != hasEditableText|hasText || !c.st.has(stEditable) {
		return "", false, nil
	}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	var how []string
	for i, line := range lines {
		if line != "" {
			if err := d.insertAtCaret(ctx, c, line); err != nil {
				return "", false, err
			}
		}
		if i == len(lines)-1 {
			break
		}
		h, err := d.pressReturn(ctx, c)
		if err != nil {
			return "", false, err
		}
		if !slices.Contains(how, h) {
			how = append(how, h)
		}
	}
	did = fmt.Sprintf("inserted %d characters at the caret of %s %q through AT-SPI (EditableText), not the keyboard (%s)",
		len([]rune(strings.ReplaceAll(text, "\n", ""))), c.Role, c.Name, d.x.kind())
	if len(how) > 0 {
		did += "; for each line break " + strings.Join(how, ", then ")
	}
	return did, true, nil
}

// insertAtCaret inserts text at control c's caret and puts the caret
// after it. Selected text is replaced, as typed keys replace it: ctrl+a
// and then type_text means the same on X11 and under Wayland.
func (d *Desktop) insertAtCaret(ctx context.Context, c Control, text string) error {
	var caret int32
	if err := d.a.get(ctx, c.ref, ifText, "CaretOffset", &caret); err != nil {
		return d.controlErr(c, "read its caret", err)
	}
	if caret < 0 {
		caret = 0
	}
	var done bool
	if start, end, ok := d.selection(ctx, c); ok {
		if err := d.a.do(ctx, c.ref, ifEditableText+".DeleteText", &done, start, end); err != nil || !done {
			return fmt.Errorf("control %d (%s) kept its selected text (characters %d to %d), which typing replaces: %v", c.ID, describe(c), start, end, err)
		}
		caret = start
	}
	// InsertText's length counts bytes (of UTF-8), the caret characters.
	if err := d.a.do(ctx, c.ref, ifEditableText+".InsertText", &done, caret, text, int32(len(text))); err != nil {
		return d.controlErr(c, "insert text", err)
	}
	if !done {
		return fmt.Errorf("control %d (%s) refused the text (it may be read-only)", c.ID, describe(c))
	}
	_ = d.a.do(ctx, c.ref, ifText+".SetCaretOffset", &done, caret+int32(len([]rune(text))))
	return nil
}

// selection is the first selected range of control c's text, if it has
// a selection that is not empty.
func (d *Desktop) selection(ctx context.Context, c Control) (start, end int32, ok bool) {
	var n int32
	if d.a.do(ctx, c.ref, ifText+".GetNSelections", &n) != nil || n < 1 {
		return 0, 0, false
	}
	b := d.a.batch(ctx)
	call := b.call(c.ref, ifText+".GetSelection", int32(0))
	if b.wait() != nil || call.store(&start, &end) != nil {
		return 0, 0, false
	}
	if start > end {
		start, end = end, start
	}
	return start, end, start < end
}

// pressReturn gives control c a Return: the key, through the
// compositor's keyboard (insertText types text with a line break through
// it where there is one); with none, a one-line field's activate action
// (what Return does in one) or, in a multi-line field, a line break at
// the caret. It says which.
func (d *Desktop) pressReturn(ctx context.Context, c Control) (string, error) {
	err := d.x.press(nil, ksReturn)
	if err == nil {
		return "pressed Return", nil
	}
	if !errors.Is(err, errCannot) {
		return "", err
	}
	if c.st.has(stSingleLine) {
		if i := actionIndex(c.Actions, "activate"); i >= 0 {
			if _, err := d.doAction(ctx, c, i); err != nil {
				return "", err
			}
			return "did the field's activate action (what Return does in it: this compositor offers no keyboard)", nil
		}
		return "", fmt.Errorf("a line break in one-line field %d (%s) means Return, but this compositor offers no keyboard and the field no activate action: type the text without it, then act on the control that submits it", c.ID, describe(c))
	}
	if err := d.insertAtCaret(ctx, c, "\n"); err != nil {
		return "", err
	}
	return "inserted a line break (this compositor offers no keyboard to press Return with: an application that reads the key itself, a console or a spreadsheet cell, does not see one)", nil
}

// ksReturn is the Return key's keysym.
const ksReturn = 0xff0d
