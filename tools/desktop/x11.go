package desktop

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
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
	// spares are the keycodes the map leaves empty, least recently bound
	// first: characters the map lacks are bound to them for typing.
	spares []xproto.Keycode
	bound  map[xproto.Keysym]xproto.Keycode

	damage  bool                    // the server has the DAMAGE extension
	damages chan damage.NotifyEvent // damage events, from the event pump
	ended   atomic.Bool             // the connection has closed
	// hostPID maps the process ids windows carry (_NET_WM_PID, the id
	// in the client's PID namespace) to this process's; nil keeps them.
	hostPID func(int) int
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
	d := &display{name: name, conn: conn, screen: setup.DefaultScreen(conn), minKey: setup.MinKeycode,
		bound: map[xproto.Keysym]xproto.Keycode{}, damages: make(chan damage.NotifyEvent, 1024)}
	if err := d.loadKeymap(setup.MaxKeycode); err != nil {
		conn.Close()
		return nil, err
	}
	if damage.Init(conn) == nil {
		_, err := damage.QueryVersion(conn, 1, 1).Reply()
		d.damage = err == nil
	}
	go d.pump()
	return d, nil
}

// pump reads the connection's events for as long as it is open: damage
// reports go to whoever waits for a repaint, the rest (errors of requests
// nobody checks) are dropped, so that the queue never fills.
func (d *display) pump() {
	for {
		ev, err := d.conn.WaitForEvent()
		if ev == nil && err == nil {
			d.ended.Store(true)
			return
		}
		if dn, ok := ev.(damage.NotifyEvent); ok {
			select {
			case d.damages <- dn:
			default: // nobody is waiting for this many
			}
		}
	}
}

func (d *display) closed() bool { return d.ended.Load() }

// Close gives the spare keycodes back their empty mapping and closes the
// connection.
func (d *display) Close() {
	d.mu.Lock()
	for sym, code := range d.bound {
		_ = xproto.ChangeKeyboardMappingChecked(d.conn, 1, code, byte(d.perKey), make([]xproto.Keysym, d.perKey)).Check()
		delete(d.bound, sym)
	}
	d.mu.Unlock()
	d.conn.Close()
}

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
	for i := range count {
		if i > 0 {
			time.Sleep(clickGap)
		}
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

// clickGap is the pause between the clicks of a double or triple click:
// clicks sent at once reach the application in the same millisecond, and
// Chromium counts a press with the last one's time stamp as that press
// again, not as a second click (a person's double click takes a tenth of
// a second; the toolkits' limit is 400 ms or more).
const clickGap = 30 * time.Millisecond

// move puts the pointer at (x, y).
func (d *display) move(x, y int) error {
	if err := d.fake(evMotion, 0, x, y); err != nil {
		return d.xerr("move the pointer", err)
	}
	xproto.GetInputFocus(d.conn).Reply()
	return nil
}

// button presses or releases a mouse button where the pointer is.
func (d *display) button(b byte, down bool) error {
	typ, what := byte(evButtonRelease), "release a mouse button"
	if down {
		typ, what = evButtonPress, "press a mouse button"
	}
	if err := d.fake(typ, b, 0, 0); err != nil {
		return d.xerr(what, err)
	}
	xproto.GetInputFocus(d.conn).Reply()
	return nil
}

// hold presses (down) or releases modifier keys.
func (d *display) hold(mods []xproto.Keysym, down bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	typ := byte(evKeyRelease)
	if down {
		typ = evKeyPress
	}
	for _, m := range mods {
		code, _, ok := d.keycode(m)
		if !ok {
			return fmt.Errorf("the keyboard map of %s has no key for modifier %#x", d.name, m)
		}
		if err := d.fake(typ, byte(code), 0, 0); err != nil {
			return d.xerr("hold a modifier", err)
		}
	}
	xproto.GetInputFocus(d.conn).Reply()
	return nil
}

// key presses or releases the key that types key (its keycode; the
// modifiers are held by hold).
func (d *display) key(_ []xproto.Keysym, key xproto.Keysym, down bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	code, _, ok := d.keycode(key)
	if !ok {
		return fmt.Errorf("the keyboard map of %s has no key for %#x to hold: only keys of its map can be held", d.name, key)
	}
	typ := byte(evKeyRelease)
	if down {
		typ = evKeyPress
	}
	if err := d.fake(typ, byte(code), 0, 0); err != nil {
		return d.xerr("hold a key", err)
	}
	xproto.GetInputFocus(d.conn).Reply()
	return nil
}

func (d *display) loadKeymap(maxKey xproto.Keycode) error {
	n := int(maxKey) - int(d.minKey) + 1
	rep, err := xproto.GetKeyboardMapping(d.conn, d.minKey, byte(n)).Reply()
	if err != nil {
		return d.xerr("read the keyboard map", err)
	}
	d.perKey, d.keysyms = int(rep.KeysymsPerKeycode), rep.Keysyms
	// Keycode 8, the lowest X allows, is left alone: some toolkits ignore it.
	for i := 1; i < n; i++ {
		if !slices.ContainsFunc(d.keysyms[i*d.perKey:(i+1)*d.perKey], func(k xproto.Keysym) bool { return k != 0 }) {
			d.spares = append(d.spares, d.minKey+xproto.Keycode(i))
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
// A key the map lacks is bound to a spare keycode first.
func (d *display) press(mods []xproto.Keysym, key xproto.Keysym) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.bind([]xproto.Keysym{key}); err != nil {
		return err
	}
	return d.pressLocked(mods, key)
}

func (d *display) pressLocked(mods []xproto.Keysym, key xproto.Keysym) error {
	code, shift, ok := d.keycode(key)
	if !ok {
		return fmt.Errorf("the keyboard map of %s has no key for keysym %#x", d.name, key)
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

// errTooManyKeys is text with more distinct characters outside the
// keyboard map than there are spare keycodes to bind them to.
var errTooManyKeys = errors.New("too many distinct characters outside the keyboard map")

// missing counts the distinct keysyms of syms that the map lacks.
func (d *display) missing(syms []xproto.Keysym) int {
	seen := map[xproto.Keysym]bool{}
	for _, s := range syms {
		if _, _, ok := d.keycode(s); !ok {
			seen[s] = true
		}
	}
	return len(seen)
}

// bind makes every keysym of syms typeable, binding those the map lacks
// to spare keycodes, each to its own. An application translates a key
// press with the map it holds when it reads the event, so a keycode is
// never bound twice for one text (the earlier presses would read the
// later binding): text needing more keycodes than there are spares is
// refused with errTooManyKeys. Keycodes bound for earlier texts are
// reused least recently bound first.
func (d *display) bind(syms []xproto.Keysym) error {
	need := map[xproto.Keysym]bool{}
	var order []xproto.Keysym
	for _, s := range syms {
		if _, _, ok := d.keycode(s); !ok && !need[s] {
			need[s] = true
			order = append(order, s)
		}
	}
	if len(order) == 0 {
		return nil
	}
	if len(order) > len(d.spares) {
		if len(d.spares) == 0 {
			return fmt.Errorf("the keyboard map of %s has no key for keysym %#x and no free key to bind it to", d.name, order[0])
		}
		return fmt.Errorf("%w: %d, and the keyboard map of %s has %d free keys", errTooManyKeys, len(order), d.name, len(d.spares))
	}
	inUse := map[xproto.Keycode]bool{}
	for _, s := range syms {
		if code, ok := d.bound[s]; ok {
			inUse[code] = true
		}
	}
	for _, sym := range order {
		i := slices.IndexFunc(d.spares, func(c xproto.Keycode) bool { return !inUse[c] })
		code := d.spares[i]
		d.spares = append(slices.Delete(d.spares, i, i+1), code) // now the most recently bound
		inUse[code] = true
		for old, c := range d.bound {
			if c == code {
				delete(d.bound, old)
			}
		}
		keys := make([]xproto.Keysym, d.perKey)
		keys[0] = sym
		if d.perKey > 1 {
			keys[1] = sym
		}
		if err := xproto.ChangeKeyboardMappingChecked(d.conn, 1, code, byte(d.perKey), keys).Check(); err != nil {
			return d.xerr("bind a key", err)
		}
		copy(d.keysyms[int(code-d.minKey)*d.perKey:], keys)
		d.bound[sym] = code
	}
	return nil
}

// typeText types s one character at a time, through the keyboard map
// (with the characters it lacks bound to spare keycodes first).
func (d *display) typeText(s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	syms := textKeysyms(s)
	if err := d.bind(syms); err != nil {
		return err
	}
	for _, sym := range syms {
		if err := d.pressLocked(nil, sym); err != nil {
			return err
		}
	}
	return nil
}

// canType reports whether s can be typed whole through the keyboard map
// and its spare keycodes.
func (d *display) canType(s string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.missing(textKeysyms(s)) <= len(d.spares)
}

func textKeysyms(s string) []xproto.Keysym {
	syms := make([]xproto.Keysym, 0, len(s))
	for _, r := range s {
		syms = append(syms, runeKeysym(r))
	}
	return syms
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
	top   xproto.Window // its ancestor among the root's children (a frame, or itself)
	pid   uint32
	title string
	// box is where its content is on the screen: X11 gives it for every
	// window, sway for its containers; outer is sway's container with its
	// decorations.
	box, outer Rect
	// startupID is its startup notification id (_NET_STARTUP_ID).
	startupID string
}

// pid is a window's process id as this process knows it.
func (d *display) pid(p uint32) uint32 {
	if d.hostPID == nil || p == 0 {
		return p
	}
	return uint32(d.hostPID(int(p)))
}

// topLevels lists the client windows: the root's mapped children with a
// process id (_NET_WM_PID), else their children that have one (a
// reparenting window manager's frames hold the clients).
func (d *display) topLevels() ([]xwin, error) {
	pidAtom, err := d.atom("_NET_WM_PID")
	if err != nil {
		return nil, err
	}
	nameAtom, _ := d.atom("_NET_WM_NAME")
	utf8Atom, _ := d.atom("UTF8_STRING")
	startupAtom, _ := d.atom("_NET_STARTUP_ID")
	leaderAtom, _ := d.atom("WM_CLIENT_LEADER")
	tree, err := xproto.QueryTree(d.conn, d.root()).Reply()
	if err != nil {
		return nil, d.xerr("list windows", err)
	}
	var out []xwin
	var look func(ws []xproto.Window, top []xproto.Window, depth int)
	look = func(ws []xproto.Window, tops []xproto.Window, depth int) {
		// Every window's requests in flight together.
		attrs := make([]xproto.GetWindowAttributesCookie, len(ws))
		pids := make([]xproto.GetPropertyCookie, len(ws))
		for i, w := range ws {
			attrs[i] = xproto.GetWindowAttributes(d.conn, w)
			pids[i] = xproto.GetProperty(d.conn, false, w, pidAtom, xproto.AtomCardinal, 0, 1)
		}
		var found []xwin
		var deeper, deeperTops []xproto.Window
		for i, w := range ws {
			attr, err1 := attrs[i].Reply()
			p, err2 := pids[i].Reply()
			if err1 != nil || attr.MapState != xproto.MapStateViewable {
				continue
			}
			if err2 == nil && p.ValueLen == 1 && len(p.Value) >= 4 {
				found = append(found, xwin{id: w, top: tops[i], pid: d.pid(xgb.Get32(p.Value))})
				continue
			}
			if depth == 0 {
				if kids, err := xproto.QueryTree(d.conn, w).Reply(); err == nil {
					deeper = append(deeper, kids.Children...)
					for range kids.Children {
						deeperTops = append(deeperTops, w)
					}
				}
			}
		}
		titles := make([]xproto.GetPropertyCookie, len(found))
		startups := make([]xproto.GetPropertyCookie, len(found))
		leaders := make([]xproto.GetPropertyCookie, len(found))
		geoms := make([]xproto.GetGeometryCookie, len(found))
		origins := make([]xproto.TranslateCoordinatesCookie, len(found))
		for i, x := range found {
			titles[i] = xproto.GetProperty(d.conn, false, x.id, nameAtom, utf8Atom, 0, 256)
			startups[i] = xproto.GetProperty(d.conn, false, x.id, startupAtom, utf8Atom, 0, 64)
			leaders[i] = xproto.GetProperty(d.conn, false, x.id, leaderAtom, xproto.AtomWindow, 0, 1)
			geoms[i] = xproto.GetGeometry(d.conn, xproto.Drawable(x.id))
			origins[i] = xproto.TranslateCoordinates(d.conn, x.id, d.root(), 0, 0)
		}
		for i := range found {
			x := &found[i]
			if t, err := titles[i].Reply(); err == nil && t.ValueLen > 0 {
				x.title = string(t.Value)
			} else if t, err := xproto.GetProperty(d.conn, false, x.id, xproto.AtomWmName, xproto.AtomString, 0, 256).Reply(); err == nil {
				x.title = string(t.Value)
			}
			if st, err := startups[i].Reply(); err == nil {
				x.startupID = string(st.Value)
			}
			// GTK 4 puts the startup id of its latest activation on its
			// client leader window, not on the window opened for it.
			if l, err := leaders[i].Reply(); err == nil && x.startupID == "" && l.ValueLen == 1 && len(l.Value) >= 4 {
				leader := xproto.Window(xgb.Get32(l.Value))
				if st, err := xproto.GetProperty(d.conn, false, leader, startupAtom, utf8Atom, 0, 64).Reply(); err == nil {
					x.startupID = string(st.Value)
				}
			}
			g, err1 := geoms[i].Reply()
			o, err2 := origins[i].Reply()
			if err1 == nil && err2 == nil {
				x.box = Rect{int(o.DstX), int(o.DstY), int(g.Width), int(g.Height)}
			}
		}
		out = append(out, found...)
		if len(deeper) > 0 {
			look(deeper, deeperTops, 1)
		}
	}
	look(tree.Children, tree.Children, 0)
	return out, nil
}

// covered returns the parts of x's box that windows of other processes
// stacked above it cover (windows of its own process, such as its open
// menus, are part of what its user sees).
func (d *display) covered(x xwin) ([]Rect, error) {
	tree, err := xproto.QueryTree(d.conn, d.root()).Reply()
	if err != nil {
		return nil, d.xerr("list windows", err)
	}
	i := slices.Index(tree.Children, x.top)
	if i < 0 {
		return nil, nil
	}
	above := tree.Children[i+1:]
	attrs := make([]xproto.GetWindowAttributesCookie, len(above))
	geoms := make([]xproto.GetGeometryCookie, len(above))
	for j, w := range above {
		attrs[j] = xproto.GetWindowAttributes(d.conn, w)
		geoms[j] = xproto.GetGeometry(d.conn, xproto.Drawable(w))
	}
	xs, err := d.topLevels()
	if err != nil {
		return nil, err
	}
	pidOf := map[xproto.Window]uint32{}
	for _, o := range xs {
		pidOf[o.top] = o.pid
	}
	var out []Rect
	for j, w := range above {
		attr, err1 := attrs[j].Reply()
		g, err2 := geoms[j].Reply()
		if err1 != nil || err2 != nil || attr.MapState != xproto.MapStateViewable || attr.Class == xproto.WindowClassInputOnly {
			continue
		}
		if p, ok := pidOf[w]; ok && p == x.pid {
			continue
		}
		r := clip(Rect{int(g.X), int(g.Y), int(g.Width) + 2*int(g.BorderWidth), int(g.Height) + 2*int(g.BorderWidth)}, x.box)
		r = clip(r, Rect{0, 0, int(d.screen.WidthInPixels), int(d.screen.HeightInPixels)}) // nothing repaints off screen
		if !r.empty() {
			out = append(out, r)
		}
	}
	return out, nil
}

// bringToFront raises x when windows of other processes cover it, and
// waits until its application has repainted what they covered (the X
// DAMAGE extension reports each part it draws), at most timeout. It
// returns why the picture may be stale, or "".
func (d *display) bringToFront(x xwin, timeout time.Duration) (string, error) {
	stale, err := d.covered(x)
	if err != nil || len(stale) == 0 {
		return "", err
	}
	if !d.damage {
		if err := d.raise(x.top); err != nil {
			return "", err
		}
		return "the X server has no DAMAGE extension, so the screenshot was taken without waiting for the raised window to repaint", nil
	}
	id, err := damage.NewDamageId(d.conn)
	if err != nil {
		return "", d.xerr("watch a window's repaint", err)
	}
	if err := damage.CreateChecked(d.conn, id, xproto.Drawable(x.id), damage.ReportLevelRawRectangles).Check(); err != nil {
		return "", d.xerr("watch a window's repaint", err)
	}
	defer damage.Destroy(d.conn, id)
	if err := d.raise(x.top); err != nil {
		return "", err
	}
	// What the server paints itself when it raises the window (the
	// window's background) is not the application's repaint. The server
	// paints after handling the requests it read with the raise, and
	// stamps each event with the sequence number of this connection's
	// last request handled: a second round trip, sent once the first is
	// answered, is handled after that painting, so the application's
	// repaint is what comes stamped with it or later.
	if _, err := xproto.GetInputFocus(d.conn).Reply(); err != nil {
		return "", d.xerr("raise a window", err)
	}
	sync := xproto.GetInputFocus(d.conn)
	if _, err := sync.Reply(); err != nil {
		return "", d.xerr("raise a window", err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for len(stale) > 0 {
		select {
		case ev := <-d.damages:
			if ev.Damage != id || int16(ev.Sequence-sync.Sequence) < 0 {
				continue
			}
			a := ev.Area
			painted := Rect{x.box.X + int(a.X), x.box.Y + int(a.Y), int(a.Width), int(a.Height)}
			var left []Rect
			for _, r := range stale {
				left = append(left, subtract(r, painted)...)
			}
			stale = left
		case <-deadline.C:
			return fmt.Sprintf("the window did not finish repainting within %s of being raised (its application may be busy): parts of the screenshot may still show the windows that covered it", timeout), nil
		}
	}
	return "", nil
}

// subtract returns the parts of r outside cut, as up to four rectangles.
func subtract(r, cut Rect) []Rect {
	in := clip(r, cut)
	if in.empty() {
		return []Rect{r}
	}
	var out []Rect
	add := func(x Rect) {
		if !x.empty() {
			out = append(out, x)
		}
	}
	add(Rect{r.X, r.Y, r.W, in.Y - r.Y})                          // above
	add(Rect{r.X, in.Y + in.H, r.W, r.Y + r.H - (in.Y + in.H)})   // below
	add(Rect{r.X, in.Y, in.X - r.X, in.H})                        // left
	add(Rect{in.X + in.W, in.Y, r.X + r.W - (in.X + in.W), in.H}) // right
	return out
}

// raise puts w (a child of the root) on top of its siblings.
func (d *display) raise(w xproto.Window) error {
	if err := xproto.ConfigureWindowChecked(d.conn, w, xproto.ConfigWindowStackMode, []uint32{xproto.StackModeAbove}).Check(); err != nil {
		return d.xerr("raise a window", err)
	}
	return nil
}

// activate raises x and gives it the input focus, for input; with a
// window manager running, it also asks the manager through
// _NET_ACTIVE_WINDOW.
func (d *display) activate(x xwin) error {
	if active, err := d.atom("_NET_ACTIVE_WINDOW"); err == nil {
		ev := xproto.ClientMessageEvent{Format: 32, Window: x.id, Type: active,
			Data: xproto.ClientMessageDataUnionData32New([]uint32{2, 0, 0, 0, 0})}
		xproto.SendEvent(d.conn, false, d.root(), xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes()))
	}
	if err := d.raise(x.top); err != nil {
		return err
	}
	if err := xproto.SetInputFocusChecked(d.conn, xproto.InputFocusPointerRoot, x.id, xproto.TimeCurrentTime).Check(); err != nil {
		return d.xerr("focus a window", err)
	}
	return nil
}

// setBox configures x's window to box. Without a window manager the
// server does it as asked; a window manager receives the request and
// decides (it may keep the window within its work area).
func (d *display) setBox(x xwin, box Rect) error {
	if box.W < 1 || box.H < 1 {
		return fmt.Errorf("a window of %dx%d pixels: give a width and a height of at least 1", box.W, box.H)
	}
	vals := []uint32{uint32(int32(box.X)), uint32(int32(box.Y)), uint32(box.W), uint32(box.H)}
	mask := uint16(xproto.ConfigWindowX | xproto.ConfigWindowY | xproto.ConfigWindowWidth | xproto.ConfigWindowHeight)
	if err := xproto.ConfigureWindowChecked(d.conn, x.id, mask, vals).Check(); err != nil {
		return d.xerr("move or resize a window", err)
	}
	return nil
}

// windowManager reports whether a window manager runs (EWMH's
// _NET_SUPPORTING_WM_CHECK on the root).
func (d *display) windowManager() bool {
	check, err := d.atom("_NET_SUPPORTING_WM_CHECK")
	if err != nil {
		return false
	}
	p, err := xproto.GetProperty(d.conn, false, d.root(), check, xproto.AtomWindow, 0, 1).Reply()
	return err == nil && p.ValueLen == 1
}

// maximize asks the window manager to maximise x (_NET_WM_STATE); with
// none, it makes x the screen's size at its corner.
func (d *display) maximize(x xwin) error {
	if !d.windowManager() {
		return d.setBox(x, d.area())
	}
	state, err1 := d.atom("_NET_WM_STATE")
	vert, err2 := d.atom("_NET_WM_STATE_MAXIMIZED_VERT")
	horz, err3 := d.atom("_NET_WM_STATE_MAXIMIZED_HORZ")
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	const add, fromApp = 1, 1
	ev := xproto.ClientMessageEvent{Format: 32, Window: x.id, Type: state,
		Data: xproto.ClientMessageDataUnionData32New([]uint32{add, uint32(vert), uint32(horz), fromApp, 0})}
	if err := xproto.SendEventChecked(d.conn, false, d.root(), xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes())).Check(); err != nil {
		return d.xerr("maximise a window", err)
	}
	return nil
}

// placeLibreOffice makes LibreOffice place its own controls where it
// draws them, on X11, before their boxes are read. Its GTK 3 frame learns
// where its drawing area is on the screen from pointer motion over it (an
// event's root position less its position in the window); before that it
// reports its own (VCL) controls, toolbars, sheet tabs, cells and scroll
// bars, as if the area began at the window's corner, the native menu
// bar's height (25 px) too high (its GTK widgets, which GTK places, are
// right), and a click at a cell's centre hit the cell above. Measured on
// Calc 7.4 under Xvfb: the toolbar's New at y 52 on the screen, drawn at
// 77. Its VCL root pane shows it: its box should be that of the GTK panel
// that holds it, and is the menu bar's height above it until then. So
// when they differ the pointer is moved onto the window's centre (two
// points, so that one is a motion wherever it was) and left there (a
// motion that then left the window did not fix it), and the boxes are
// read again until they agree, up to a second.
func (d *Desktop) placeLibreOffice(ctx context.Context, w Window, t *tree) {
	x, ok := d.x.(*display)
	if !ok {
		return
	}
	var pane, holder *node
	for _, n := range t.nodes {
		if roleName(n.role) != "root pane" {
			continue
		}
		pane = n
		for _, p := range t.nodes {
			if slices.Contains(p.children, n.ref) {
				holder = p
			}
		}
		break
	}
	if pane == nil || holder == nil {
		return
	}
	area := d.screenArea(w)
	for deadline, moved := time.Now().Add(time.Second), false; ; {
		b := d.a.batch(ctx)
		pe, he := b.call(pane.ref, ifComponent+".GetExtents", uint32(0)), b.call(holder.ref, ifComponent+".GetExtents", uint32(0))
		var pb, hb extents
		if b.wait() != nil || pe.store(&pb) != nil || he.store(&hb) != nil || (pb.X == hb.X && pb.Y == hb.Y) || time.Now().After(deadline) {
			return
		}
		if !moved && !area.empty() {
			cx, cy := area.centre()
			if x.move(cx, cy) != nil || x.move(cx+1, cy) != nil {
				return
			}
			moved = true
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
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
