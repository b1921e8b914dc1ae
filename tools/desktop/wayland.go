package desktop

import (
	"errors"
	"fmt"
	"image"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/saucerhq/saucer/tools/desktop/internal/sway"
	"github.com/saucerhq/saucer/tools/desktop/internal/wl"
)

// wayland is a Wayland compositor's screen. Pixels and input go through
// the wlroots protocols (wlr-screencopy, the virtual pointer and
// keyboard), which sway and other wlroots compositors offer; windows
// through sway's IPC where there is one. A compositor without them
// (weston) leaves the AT-SPI tree and actions, and the tools say what
// they cannot do there.
type wayland struct {
	name string
	scr  *wl.Screen
	ipc  *sway.Conn // nil: no sway IPC
}

func dialWayland(name, swaySock string) (*wayland, error) {
	scr, err := wl.Open(name)
	if err != nil {
		return nil, err
	}
	w := &wayland{name: name, scr: scr}
	if ipc, err := sway.Dial(swaySock); err == nil {
		w.ipc = ipc
	}
	return w, nil
}

func (w *wayland) kind() string {
	if w.ipc != nil {
		return "sway"
	}
	return "Wayland"
}

func (w *wayland) Close() {
	w.scr.Close()
	if w.ipc != nil {
		w.ipc.Close()
	}
}

func (w *wayland) windowRelative() bool { return true }

// cannot says what this compositor does not offer.
func (w *wayland) cannot(what, how string) error {
	return fmt.Errorf("%s: the Wayland compositor at %s offers no %s (sway and other wlroots compositors do; see docs/desktop.md): %w", what, w.name, how, errCannot)
}

func (w *wayland) topLevels() ([]xwin, error) {
	if w.ipc == nil {
		return nil, nil // no compositor IPC: the windows are AT-SPI's alone
	}
	ws, err := w.ipc.Windows()
	if err != nil {
		return nil, err
	}
	out := make([]xwin, 0, len(ws))
	for _, s := range ws {
		c := s.Content
		b := s.Box
		out = append(out, xwin{id: xproto.Window(s.ID), pid: uint32(s.PID), title: s.Title, box: Rect{c.X, c.Y, c.Width, c.Height},
			outer: Rect{b.X, b.Y, b.Width, b.Height}})
	}
	return out, nil
}

func (w *wayland) raise(id xproto.Window) error {
	if w.ipc == nil {
		return w.cannot("raise a window", "window management IPC")
	}
	return w.ipc.Focus(int64(id))
}

// offers says what the compositor offers beyond AT-SPI, for doctor.
func (w *wayland) offers() string {
	var has []string
	if w.ipc != nil {
		has = append(has, "window management through sway's IPC")
	}
	capture, pointer, keyboard := w.scr.Has()
	for _, h := range []struct {
		ok   bool
		what string
	}{{capture, "screen capture"}, {pointer, "virtual pointer"}, {keyboard, "virtual keyboard"}} {
		if h.ok {
			has = append(has, h.what)
		}
	}
	if len(has) == 0 {
		return "AT-SPI alone: no screenshots, window management or input"
	}
	return strings.Join(has, ", ")
}

// activate focuses the window through sway, which gives it the keyboard.
func (w *wayland) activate(x xwin) error { return w.raise(x.id) }

// bringToFront focuses the window where the compositor lets a client do
// so; a compositor tells no client what covers a window, nor when it has
// repainted.
func (w *wayland) bringToFront(x xwin, _ time.Duration) (string, error) {
	_ = w.raise(x.id)
	return "", nil
}

func (w *wayland) area() Rect {
	l := w.scr.Layout()
	return Rect{l.Min.X, l.Min.Y, l.Dx(), l.Dy()}
}

// The virtual keyboard brings its own keymap: every character has a key.
func (w *wayland) canType(string) bool { return true }
func (w *wayland) freeKeys() string    { return "" }

func (w *wayland) closed() bool { return false }

func (w *wayland) close(id xproto.Window) error {
	if w.ipc == nil {
		return w.cannot("close a window", "window management IPC")
	}
	return w.ipc.Kill(int64(id))
}

// setBox floats the window and places its container so that its
// content is box: sway places and sizes containers, decorations included.
func (w *wayland) setBox(x xwin, box Rect) error {
	if w.ipc == nil {
		return w.cannot("move or resize a window", "window management IPC")
	}
	if box.W < 1 || box.H < 1 {
		return fmt.Errorf("a window of %dx%d pixels: give a width and a height of at least 1", box.W, box.H)
	}
	dx, dy := x.box.X-x.outer.X, x.box.Y-x.outer.Y
	return w.ipc.Place(int64(x.id), box.X-dx, box.Y-dy, box.W+x.outer.W-x.box.W, box.H+x.outer.H-x.box.H)
}

// maximize makes the window's container, decorations included, the
// screen's size.
func (w *wayland) maximize(x xwin) error {
	if w.ipc == nil {
		return w.cannot("maximise a window", "window management IPC")
	}
	a := w.area()
	return w.ipc.Place(int64(x.id), a.X, a.Y, a.W, a.H)
}

func (w *wayland) capture(r Rect) (*image.RGBA, Rect, error) {
	l := w.scr.Layout()
	r = clip(r, Rect{l.Min.X, l.Min.Y, l.Dx(), l.Dy()})
	if r.empty() {
		return nil, r, fmt.Errorf("the area %+v is outside the %dx%d screen", r, l.Dx(), l.Dy())
	}
	img, err := w.scr.Capture(image.Rect(r.X, r.Y, r.X+r.W, r.Y+r.H))
	if errors.Is(err, wl.ErrUnsupported) {
		return nil, r, w.cannot("take a screenshot", "screen capture (wlr-screencopy)")
	}
	if err != nil {
		return nil, r, err
	}
	img.Rect = image.Rect(0, 0, r.W, r.H) // the same pixels, counted from the area's corner
	return img, r, nil
}

func (w *wayland) click(x, y int, button byte, count int) error {
	var err error
	switch button {
	case 1, 2, 3:
		err = w.scr.Click(x, y, wlButtons[button], count)
	case 4, 5:
		err = w.scr.Scroll(x, y, false, map[byte]int{4: -count, 5: count}[button])
	case 6, 7:
		err = w.scr.Scroll(x, y, true, map[byte]int{6: -count, 7: count}[button])
	default:
		return fmt.Errorf("no mouse button %d", button)
	}
	return w.pointerErr(err)
}

var wlButtons = map[byte]uint32{1: wl.BtnLeft, 2: wl.BtnMiddle, 3: wl.BtnRight}

func (w *wayland) pointerErr(err error) error {
	if errors.Is(err, wl.ErrUnsupported) {
		return w.cannot("use the pointer", "virtual pointer (wlr-virtual-pointer)")
	}
	return err
}

func (w *wayland) move(x, y int) error { return w.pointerErr(w.scr.Move(x, y)) }

func (w *wayland) pointerAt() (image.Point, bool) { return w.scr.Position() }

func (w *wayland) button(b byte, down bool) error {
	btn, ok := wlButtons[b]
	if !ok {
		return fmt.Errorf("no mouse button %d", b)
	}
	return w.pointerErr(w.scr.Button(btn, down))
}

func (w *wayland) key(mods []xproto.Keysym, key xproto.Keysym, down bool) error {
	var mask uint32
	for _, m := range mods {
		mask |= modMasks[m]
	}
	err := w.scr.Key(uint32(key), mask, down)
	if errors.Is(err, wl.ErrUnsupported) {
		return w.cannot("hold a key", "virtual keyboard (zwp-virtual-keyboard)")
	}
	return err
}

func (w *wayland) hold(mods []xproto.Keysym, down bool) error {
	var mask uint32
	for _, m := range mods {
		mask |= modMasks[m]
	}
	err := w.scr.Hold(mask, down)
	if errors.Is(err, wl.ErrUnsupported) {
		return w.cannot("hold a key", "virtual keyboard (zwp-virtual-keyboard)")
	}
	return err
}

var modMasks = map[xproto.Keysym]uint32{0xffe1: wl.ModShift, 0xffe3: wl.ModCtrl, 0xffe9: wl.ModAlt, 0xffeb: wl.ModSuper, 0xffe7: wl.ModSuper}

func (w *wayland) keys(keys []wl.Key) error {
	err := w.scr.Type(keys)
	if errors.Is(err, wl.ErrUnsupported) {
		return w.cannot("use the keyboard", "virtual keyboard (zwp-virtual-keyboard)")
	}
	return err
}

func (w *wayland) press(mods []xproto.Keysym, key xproto.Keysym) error {
	var mask uint32
	for _, m := range mods {
		mask |= modMasks[m]
	}
	return w.keys([]wl.Key{{Sym: uint32(key), Mods: mask}})
}

func (w *wayland) typeText(s string) error {
	var keys []wl.Key
	for _, r := range s {
		keys = append(keys, wl.Key{Sym: uint32(runeKeysym(r))})
	}
	return w.keys(keys)
}
