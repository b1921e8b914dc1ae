package desktop

import (
	"errors"
	"fmt"
	"image"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

func init() {
	// xgb logs to stderr when there is no ~/.Xauthority, which is the
	// normal case under Xvfb; its errors reach us as errors anyway.
	xgb.Logger = log.New(io.Discard, "", 0)
}

func envSessionBus() string { return os.Getenv("DBUS_SESSION_BUS_ADDRESS") }

// display is a connection to an X server with the XTest extension.
type display struct {
	name   string
	conn   *xgb.Conn
	screen *xproto.ScreenInfo

	mu      sync.Mutex // guards the keyboard map while typing
	minKey  xproto.Keycode
	perKey  int
	keysyms []xproto.Keysym // (maxKey-minKey+1)*perKey
	spare   xproto.Keycode  // a keycode with no keysyms, for characters the map lacks
}

func dialX(name string) (*display, error) {
	if name == "" {
		name = os.Getenv("DISPLAY")
	}
	if name == "" {
		return nil, errors.New("no X display: DISPLAY is not set")
	}
	conn, err := xgb.NewConnDisplay(name)
	if err != nil {
		return nil, fmt.Errorf("open the X display %s: %w", name, err)
	}
	if err := xtest.Init(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the X display %s lacks the XTEST extension, needed for input: %w", name, err)
	}
	setup := xproto.Setup(conn)
	d := &display{name: name, conn: conn, screen: setup.DefaultScreen(conn), minKey: setup.MinKeycode}
	if err := d.loadKeymap(setup.MaxKeycode); err != nil {
		conn.Close()
		return nil, err
	}
	return d, nil
}

func (d *display) Close() { d.conn.Close() }

func (d *display) root() xproto.Window { return d.screen.Root }

// xerr names the display in an error, and says so when it has gone away.
func (d *display) xerr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s on the X display %s: %w (if the display is gone, the desktop session has ended)", what, d.name, err)
}

// capture reads a part of the screen (clipped to it) as an image.
func (d *display) capture(r Rect) (*image.RGBA, Rect, error) {
	sw, sh := int(d.screen.WidthInPixels), int(d.screen.HeightInPixels)
	r = clip(r, Rect{0, 0, sw, sh})
	if r.empty() {
		return nil, r, fmt.Errorf("the area %+v is outside the %dx%d screen", r, sw, sh)
	}
	rep, err := xproto.GetImage(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.root()),
		int16(r.X), int16(r.Y), uint16(r.W), uint16(r.H), 0xffffffff).Reply()
	if err != nil {
		return nil, r, d.xerr("capture the screen", err)
	}
	if len(rep.Data) < r.W*r.H*4 {
		return nil, r, fmt.Errorf("the X display %s returned %d bytes for a %dx%d image at depth %d: only 24/32-bit true colour is supported",
			d.name, len(rep.Data), r.W, r.H, rep.Depth)
	}
	img := image.NewRGBA(image.Rect(0, 0, r.W, r.H))
	src, dst := rep.Data, img.Pix
	for i := 0; i < r.W*r.H; i++ { // BGRX, as X sends 32-bit pixels on little-endian servers
		dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = src[4*i+2], src[4*i+1], src[4*i], 0xff
	}
	return img, r, nil
}

func clip(r, to Rect) Rect {
	x0, y0 := max(r.X, to.X), max(r.Y, to.Y)
	x1, y1 := min(r.X+r.W, to.X+to.W), min(r.Y+r.H, to.Y+to.H)
	return Rect{x0, y0, x1 - x0, y1 - y0}
}

// XTest event types.
const (
	evKeyPress      = 2
	evKeyRelease    = 3
	evButtonPress   = 4
	evButtonRelease = 5
	evMotion        = 6
)

func (d *display) fake(typ byte, detail byte, x, y int) error {
	return xtest.FakeInputChecked(d.conn, typ, detail, 0, d.root(), int16(x), int16(y), 0).Check()
}

// click moves the pointer to (x, y) and presses button count times.
func (d *display) click(x, y int, button byte, count int) error {
	if err := d.fake(evMotion, 0, x, y); err != nil {
		return d.xerr("move the pointer", err)
	}
	for range count {
		if err := d.fake(evButtonPress, button, 0, 0); err != nil {
			return d.xerr("press a mouse button", err)
		}
		if err := d.fake(evButtonRelease, button, 0, 0); err != nil {
			return d.xerr("release a mouse button", err)
		}
	}
	xproto.GetInputFocus(d.conn).Reply() // a round trip: the events have been processed
	return nil
}

func (d *display) loadKeymap(maxKey xproto.Keycode) error {
	n := int(maxKey) - int(d.minKey) + 1
	rep, err := xproto.GetKeyboardMapping(d.conn, d.minKey, byte(n)).Reply()
	if err != nil {
		return d.xerr("read the keyboard map", err)
	}
	d.perKey, d.keysyms = int(rep.KeysymsPerKeycode), rep.Keysyms
	for i := n - 1; i >= 0; i-- {
		empty := true
		for j := 0; j < d.perKey; j++ {
			if d.keysyms[i*d.perKey+j] != 0 {
				empty = false
			}
		}
		if empty {
			d.spare = d.minKey + xproto.Keycode(i)
			break
		}
	}
	return nil
}

// keycode finds the key that types sym and whether Shift is needed.
func (d *display) keycode(sym xproto.Keysym) (xproto.Keycode, bool, bool) {
	for i := 0; i*d.perKey < len(d.keysyms); i++ {
		for col := 0; col < min(2, d.perKey); col++ {
			if d.keysyms[i*d.perKey+col] == sym {
				return d.minKey + xproto.Keycode(i), col == 1, true
			}
		}
	}
	return 0, false, false
}

// press types one chord: modifiers held while the key goes down and up.
func (d *display) press(mods []xproto.Keysym, key xproto.Keysym) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	code, shift, ok := d.keycode(key)
	if !ok {
		// Bind the spare keycode to the keysym for this press.
		if d.spare == 0 {
			return fmt.Errorf("the keyboard map of %s has no key for keysym %#x and no free key to bind it to", d.name, key)
		}
		syms := make([]xproto.Keysym, d.perKey)
		syms[0] = key
		if d.perKey > 1 {
			syms[1] = key
		}
		if err := xproto.ChangeKeyboardMappingChecked(d.conn, 1, d.spare, byte(d.perKey), syms).Check(); err != nil {
			return d.xerr("bind a key", err)
		}
		copy(d.keysyms[int(d.spare-d.minKey)*d.perKey:], syms)
		code = d.spare
	}
	var held []xproto.Keycode
	if shift {
		mods = append(mods, ksShiftL)
	}
	for _, m := range mods {
		mc, _, ok := d.keycode(m)
		if !ok {
			return fmt.Errorf("the keyboard map of %s has no key for modifier %#x", d.name, m)
		}
		if err := d.fake(evKeyPress, byte(mc), 0, 0); err != nil {
			return d.xerr("press a modifier", err)
		}
		held = append(held, mc)
	}
	err := d.fake(evKeyPress, byte(code), 0, 0)
	if err == nil {
		err = d.fake(evKeyRelease, byte(code), 0, 0)
	}
	for i := len(held) - 1; i >= 0; i-- {
		if e := d.fake(evKeyRelease, byte(held[i]), 0, 0); err == nil {
			err = e
		}
	}
	xproto.GetInputFocus(d.conn).Reply()
	return d.xerr("type a key", err)
}

// typeText types s one character at a time.
func (d *display) typeText(s string) error {
	for _, r := range s {
		if err := d.press(nil, runeKeysym(r)); err != nil {
			return err
		}
	}
	return nil
}

// Keysyms Saucer names (X11's keysymdef.h values).
const ksShiftL = 0xffe1

var namedKeys = map[string]xproto.Keysym{
	"return": 0xff0d, "enter": 0xff0d, "tab": 0xff09, "escape": 0xff1b, "esc": 0xff1b, "backspace": 0xff08,
	"delete": 0xffff, "del": 0xffff, "insert": 0xff63, "home": 0xff50, "end": 0xff57, "left": 0xff51, "up": 0xff52,
	"right": 0xff53, "down": 0xff54, "pageup": 0xff55, "page_up": 0xff55, "pagedown": 0xff56, "page_down": 0xff56,
	"space": 0x20, "menu": 0xff67, "plus": 0x2b, "minus": 0x2d,
	"f1": 0xffbe, "f2": 0xffbf, "f3": 0xffc0, "f4": 0xffc1, "f5": 0xffc2, "f6": 0xffc3, "f7": 0xffc4,
	"f8": 0xffc5, "f9": 0xffc6, "f10": 0xffc7, "f11": 0xffc8, "f12": 0xffc9,
}

var modifierKeys = map[string]xproto.Keysym{
	"ctrl": 0xffe3, "control": 0xffe3, "shift": 0xffe1, "alt": 0xffe9, "super": 0xffeb, "meta": 0xffe7, "win": 0xffeb,
}

// runeKeysym is the keysym that types r: Latin-1 keysyms are the code
// points, other characters are 0x1000000 plus the code point.
func runeKeysym(r rune) xproto.Keysym {
	switch r {
	case '\n':
		return 0xff0d
	case '\t':
		return 0xff09
	}
	if r >= 0x20 && r <= 0x7e || r >= 0xa0 && r <= 0xff {
		return xproto.Keysym(r)
	}
	return xproto.Keysym(0x1000000 + r)
}

// parseChord reads a chord such as "ctrl+s", "ctrl+shift+Tab", "Return",
// "a".
func parseChord(s string) (mods []xproto.Keysym, key xproto.Keysym, err error) {
	parts := strings.Split(s, "+")
	if strings.HasSuffix(s, "++") { // "ctrl++"
		parts = append(parts[:len(parts)-2], "+")
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		low := strings.ToLower(p)
		if i < len(parts)-1 {
			m, ok := modifierKeys[low]
			if !ok {
				return nil, 0, fmt.Errorf("%q in %q is not a modifier (ctrl, shift, alt, super)", p, s)
			}
			mods = append(mods, m)
			continue
		}
		if k, ok := namedKeys[low]; ok {
			return mods, k, nil
		}
		if k, ok := modifierKeys[low]; ok {
			return mods, k, nil
		}
		if utf8.RuneCountInString(p) == 1 {
			r, _ := utf8.DecodeRuneInString(p)
			return mods, runeKeysym(r), nil
		}
		return nil, 0, fmt.Errorf("unknown key %q in %q: use one character or a name such as Return, Tab, Escape, BackSpace, Delete, Home, End, Left, Up, Right, Down, Page_Up, Page_Down, space, F1-F12", p, s)
	}
	return nil, 0, fmt.Errorf("empty key chord")
}

// Top-level X windows, to focus, raise and close what AT-SPI lists.

func (d *display) atom(name string) (xproto.Atom, error) {
	rep, err := xproto.InternAtom(d.conn, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0, d.xerr("intern an atom", err)
	}
	return rep.Atom, nil
}

// xwin is a display server's application window: an X window, or (under
// sway) a container, whose id is then sway's.
type xwin struct {
	id    xproto.Window
	pid   uint32
	title string
	box   Rect // where its content is on the screen, where the server says (sway)
}

// topLevels lists the client windows: those a window manager lists in
// _NET_CLIENT_LIST, else the root's mapped children and their children
// (a reparenting manager's frames hold the clients).
func (d *display) topLevels() ([]xwin, error) {
	pidAtom, err := d.atom("_NET_WM_PID")
	if err != nil {
		return nil, err
	}
	nameAtom, _ := d.atom("_NET_WM_NAME")
	utf8Atom, _ := d.atom("UTF8_STRING")
	tree, err := xproto.QueryTree(d.conn, d.root()).Reply()
	if err != nil {
		return nil, d.xerr("list windows", err)
	}
	var out []xwin
	var look func(w xproto.Window, depth int)
	look = func(w xproto.Window, depth int) {
		attr, err := xproto.GetWindowAttributes(d.conn, w).Reply()
		if err != nil || attr.MapState != xproto.MapStateViewable {
			return
		}
		p, err := xproto.GetProperty(d.conn, false, w, pidAtom, xproto.AtomCardinal, 0, 1).Reply()
		if err == nil && p.ValueLen == 1 && len(p.Value) >= 4 {
			x := xwin{id: w, pid: xgb.Get32(p.Value)}
			if t, err := xproto.GetProperty(d.conn, false, w, nameAtom, utf8Atom, 0, 256).Reply(); err == nil && t.ValueLen > 0 {
				x.title = string(t.Value)
			} else if t, err := xproto.GetProperty(d.conn, false, w, xproto.AtomWmName, xproto.AtomString, 0, 256).Reply(); err == nil {
				x.title = string(t.Value)
			}
			out = append(out, x)
			return
		}
		if depth == 0 {
			if kids, err := xproto.QueryTree(d.conn, w).Reply(); err == nil {
				for _, k := range kids.Children {
					look(k, 1)
				}
			}
		}
	}
	for _, w := range tree.Children {
		look(w, 0)
	}
	return out, nil
}

// raise puts w on top and gives it the input focus; with a window
// manager running, it also asks the manager through _NET_ACTIVE_WINDOW.
func (d *display) raise(w xproto.Window) error {
	if active, err := d.atom("_NET_ACTIVE_WINDOW"); err == nil {
		ev := xproto.ClientMessageEvent{Format: 32, Window: w, Type: active,
			Data: xproto.ClientMessageDataUnionData32New([]uint32{2, 0, 0, 0, 0})}
		xproto.SendEvent(d.conn, false, d.root(), xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes()))
	}
	if err := xproto.ConfigureWindowChecked(d.conn, w, xproto.ConfigWindowStackMode, []uint32{xproto.StackModeAbove}).Check(); err != nil {
		return d.xerr("raise a window", err)
	}
	if err := xproto.SetInputFocusChecked(d.conn, xproto.InputFocusPointerRoot, w, xproto.TimeCurrentTime).Check(); err != nil {
		return d.xerr("focus a window", err)
	}
	return nil
}

// close asks w's application to close it (WM_DELETE_WINDOW), as a window
// manager's close button does: the application may ask to save first.
func (d *display) close(w xproto.Window) error {
	protocols, err := d.atom("WM_PROTOCOLS")
	if err != nil {
		return err
	}
	del, err := d.atom("WM_DELETE_WINDOW")
	if err != nil {
		return err
	}
	ev := xproto.ClientMessageEvent{Format: 32, Window: w, Type: protocols,
		Data: xproto.ClientMessageDataUnionData32New([]uint32{uint32(del), 0, 0, 0, 0})}
	if err := xproto.SendEventChecked(d.conn, false, w, xproto.EventMaskNoEvent, string(ev.Bytes())).Check(); err != nil {
		return d.xerr("close a window", err)
	}
	return nil
}
