package wl

import (
	"errors"
	"fmt"
	"image"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Interfaces Saucer binds.
const (
	ifShm            = "wl_shm"
	ifOutput         = "wl_output"
	ifSeat           = "wl_seat"
	ifScreencopy     = "zwlr_screencopy_manager_v1"
	ifVirtualPointer = "zwlr_virtual_pointer_manager_v1"
	ifVirtualKbd     = "zwp_virtual_keyboard_manager_v1"
)

// ErrUnsupported says that the compositor lacks a protocol.
var ErrUnsupported = errors.New("not offered by this compositor")

// timeout bounds every exchange with the compositor.
const timeout = 5 * time.Second

// Output is a monitor: its place in the compositor's layout and its size
// in pixels (Saucer assumes scale 1, as a headless output has).
type Output struct {
	id   uint32
	Name string
	Box  image.Rectangle
}

// Screen is a compositor's outputs, pixels and input, through the wlroots
// protocols. Its methods run one at a time.
type Screen struct {
	mu      sync.Mutex
	c       *Conn
	shm     uint32
	seat    uint32
	outputs []*Output
	copier  uint32 // zwlr_screencopy_manager_v1, 0 if absent
	copierV uint32
	ptrMgr  uint32
	ptr     uint32
	kbdMgr  uint32
	kbd     uint32
	// syms are the keymap's keys, by evdev code less one (0: none),
	// upper what they type with shift (0: the same); codes the reverse,
	// shifted the keysyms typed with shift. A key keeps its code for the keyboard's life, and the
	// keymap grows only when a new keysym is typed, so that a client
	// that reads a key before the newest keymap still reads it right.
	syms, upper []uint32
	codes       map[uint32]uint32
	shifted     map[uint32]bool
	// at is where the virtual pointer was last put (atKnown: it has been).
	at      image.Point
	atKnown bool
}

// Open connects to the compositor and binds what it offers of the
// protocols Saucer uses.
func Open(display string) (*Screen, error) {
	c, err := Dial(display)
	if err != nil {
		return nil, err
	}
	s := &Screen{c: c}
	var binds []error
	bind := func(iface string, version uint32, h func(uint16, []byte, []int)) (uint32, uint32) {
		g, ok := c.Find(iface)
		if !ok {
			return 0, 0
		}
		id, v, err := c.Bind(g, version, h)
		binds = append(binds, err)
		return id, v
	}
	s.shm, _ = bind(ifShm, 1, nil)
	s.seat, _ = bind(ifSeat, 1, nil)
	for _, g := range c.Globals() {
		if g.Interface != ifOutput {
			continue
		}
		o := &Output{}
		id, _, err := c.Bind(g, 2, func(op uint16, a []byte, _ []int) {
			r := reader{b: a}
			switch op {
			case 0: // geometry(x, y, physical w, h, subpixel, make, model, transform)
				at := image.Pt(int(r.int()), int(r.int()))
				o.Box = o.Box.Add(at.Sub(o.Box.Min))
			case 1: // mode(flags, width, height, refresh)
				flags, w, h := r.uint(), int(r.int()), int(r.int())
				if flags&1 != 0 { // the current mode
					o.Box.Max = o.Box.Min.Add(image.Pt(w, h))
				}
			}
		})
		binds = append(binds, err)
		o.id, o.Name = id, fmt.Sprintf("output %d", g.Name)
		s.outputs = append(s.outputs, o)
	}
	s.copier, s.copierV = bind(ifScreencopy, 3, nil)
	s.ptrMgr, _ = bind(ifVirtualPointer, 1, nil)
	s.kbdMgr, _ = bind(ifVirtualKbd, 1, nil)
	if err := errors.Join(binds...); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.Roundtrip(timeout); err != nil {
		c.Close()
		return nil, err
	}
	if s.shm == 0 || len(s.outputs) == 0 {
		c.Close()
		return nil, fmt.Errorf("the Wayland compositor at %s offers no %s or no output", c.Path(), ifShm)
	}
	sort.Slice(s.outputs, func(i, j int) bool { return s.outputs[i].Box.Min.X < s.outputs[j].Box.Min.X })
	// A seat without a keyboard gives no window the keyboard focus, and
	// GTK counts a window active only while it has it: the virtual
	// keyboard is made at once, so that the focused window is active
	// before anything is typed (a headless compositor has no keyboard of
	// its own).
	// The pointer likewise: a client binds its wl_pointer when the seat
	// announces one, after which it sees the pointer enter and click.
	if s.kbdMgr != 0 && s.seat != 0 {
		if err := s.keyboard(nil); err != nil {
			c.Close()
			return nil, err
		}
	}
	if s.ptrMgr != 0 && s.seat != 0 {
		if _, err := s.pointer(); err != nil {
			c.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close closes the connection (the compositor removes the virtual
// devices).
func (s *Screen) Close() error { return s.c.Close() }

// Outputs are the monitors.
func (s *Screen) Outputs() []Output {
	var out []Output
	for _, o := range s.outputs {
		out = append(out, *o)
	}
	return out
}

// Layout is the box around every output.
func (s *Screen) Layout() image.Rectangle {
	var r image.Rectangle
	for _, o := range s.outputs {
		r = r.Union(o.Box)
	}
	return r
}

// Has reports which of the input and capture protocols the compositor
// offers.
func (s *Screen) Has() (capture, pointer, keyboard bool) {
	return s.copier != 0, s.ptrMgr != 0 && s.seat != 0, s.kbdMgr != 0 && s.seat != 0
}

// Capture reads the area r of the layout (clipped to the outputs) through
// wlr-screencopy, one output at a time.
func (s *Screen) Capture(r image.Rectangle) (*image.RGBA, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.copier == 0 {
		return nil, fmt.Errorf("screenshots: %s %w (wlroots compositors such as sway offer it; weston does not)", ifScreencopy, ErrUnsupported)
	}
	img := image.NewRGBA(r)
	for _, o := range s.outputs {
		part := r.Intersect(o.Box)
		if part.Empty() {
			continue
		}
		shot, err := s.captureOutput(o, part)
		if err != nil {
			return nil, err
		}
		for y := part.Min.Y; y < part.Max.Y; y++ {
			i, j := img.PixOffset(part.Min.X, y), shot.PixOffset(part.Min.X, y)
			copy(img.Pix[i:i+4*part.Dx()], shot.Pix[j:j+4*part.Dx()])
		}
	}
	return img, nil
}

// Pixel formats (wl_shm): 32-bit little-endian words, so ARGB is B,G,R,A
// in memory and ABGR is R,G,B,A.
const (
	fmtARGB8888 = 0
	fmtXRGB8888 = 1
	fmtABGR8888 = 0x34324241
	fmtXBGR8888 = 0x34324258
)

// captureOutput copies the part r (in the layout) of one output into a
// shared-memory buffer: the compositor copies only that part.
func (s *Screen) captureOutput(o *Output, r image.Rectangle) (*image.RGBA, error) {
	var (
		format, width, height, stride uint32
		offered, bufferDone, ready    bool
		failed                        bool
		flags                         uint32
	)
	frame := s.c.NewID(func(op uint16, a []byte, _ []int) {
		r := reader{b: a}
		switch op {
		case 0: // buffer(format, width, height, stride): an shm buffer that fits
			format, width, height, stride = r.uint(), r.uint(), r.uint(), r.uint()
			offered = true
		case 1: // flags
			flags = r.uint()
		case 2: // ready
			ready = true
		case 3: // failed
			failed = true
		case 6: // buffer_done (version 3): every buffer type is listed
			bufferDone = true
		}
	})
	defer func() {
		_ = s.c.Request(frame, 1) // destroy
		s.c.Forget(frame)
	}()
	local := r.Sub(o.Box.Min)
	if err := s.c.Request(s.copier, 1, Uint(frame), Int(0), Uint(o.id), // capture_output_region
		Int(int32(local.Min.X)), Int(int32(local.Min.Y)), Int(int32(local.Dx())), Int(int32(local.Dy()))); err != nil {
		return nil, err
	}
	err := s.c.Wait(timeout, func() bool {
		return failed || (offered && (s.copierV < 3 || bufferDone))
	})
	if err != nil {
		return nil, err
	}
	if failed || !offered {
		return nil, fmt.Errorf("the compositor could not capture %s", o.Name)
	}
	switch format {
	case fmtARGB8888, fmtXRGB8888, fmtABGR8888, fmtXBGR8888:
	default:
		return nil, fmt.Errorf("the compositor offers pixel format %#x for screenshots; Saucer reads 32-bit RGB only", format)
	}
	size := int(stride * height)
	fd, err := unix.MemfdCreate("saucer-screencopy", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("a shared-memory buffer for the screenshot: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Ftruncate(fd, int64(size)); err != nil {
		return nil, err
	}
	pool := s.c.NewID(nil)
	buffer := s.c.NewID(nil)
	defer func() {
		_ = s.c.Request(buffer, 0) // wl_buffer.destroy
		_ = s.c.Request(pool, 1)   // wl_shm_pool.destroy
	}()
	if err := errors.Join(
		s.c.Request(s.shm, 0, Uint(pool), FD(fd), Int(int32(size))),
		s.c.Request(pool, 0, Uint(buffer), Int(0), Int(int32(width)), Int(int32(height)), Int(int32(stride)), Uint(format)),
		s.c.Request(frame, 0, Uint(buffer)), // copy
	); err != nil {
		return nil, err
	}
	if err := s.c.Wait(timeout, func() bool { return ready || failed }); err != nil {
		return nil, err
	}
	if failed {
		return nil, fmt.Errorf("the compositor failed to copy %s", o.Name)
	}
	mem, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	defer syscall.Munmap(mem)
	img := image.NewRGBA(r)
	w, h := min(int(width), r.Dx()), min(int(height), r.Dy())
	bgr := format == fmtARGB8888 || format == fmtXRGB8888
	for y := 0; y < h; y++ {
		sy := y
		if flags&1 != 0 { // y_invert
			sy = int(height) - 1 - y
		}
		src := mem[sy*int(stride):]
		dst := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			p := src[4*x : 4*x+4]
			if bgr {
				dst[4*x], dst[4*x+1], dst[4*x+2] = p[2], p[1], p[0]
			} else {
				dst[4*x], dst[4*x+1], dst[4*x+2] = p[0], p[1], p[2]
			}
			dst[4*x+3] = 0xff
		}
	}
	return img, nil
}

// now is a timestamp in milliseconds, as input events carry.
func now() Arg { return Uint(uint32(time.Now().UnixMilli())) }

// Linux input button codes.
const (
	BtnLeft   = 0x110
	BtnRight  = 0x111
	BtnMiddle = 0x112
)

func (s *Screen) pointer() (uint32, error) {
	if s.ptr != 0 {
		return s.ptr, nil
	}
	if s.ptrMgr == 0 || s.seat == 0 {
		return 0, fmt.Errorf("pointer input: %s %w (wlroots compositors such as sway offer it; weston does not)", ifVirtualPointer, ErrUnsupported)
	}
	id := s.c.NewID(nil)
	if err := s.c.Request(s.ptrMgr, 0, Uint(s.seat), Uint(id)); err != nil {
		return 0, err
	}
	s.ptr = id
	return id, s.c.Roundtrip(timeout)
}

// move puts the pointer at (x, y) of the layout.
func (s *Screen) move(ptr uint32, x, y int) error {
	l := s.Layout()
	if !image.Pt(x, y).In(l) {
		return fmt.Errorf("the point %d,%d is outside the screen %v", x, y, l)
	}
	err := errors.Join(
		s.c.Request(ptr, 1, now(), Uint(uint32(x-l.Min.X)), Uint(uint32(y-l.Min.Y)), Uint(uint32(l.Dx())), Uint(uint32(l.Dy()))),
		s.c.Request(ptr, 4)) // frame
	if err == nil {
		s.at, s.atKnown = image.Pt(x, y), true
	}
	return err
}

// Position is where the virtual pointer was last put, in the layout's
// pixels; ok is false before it has moved. A compositor tells no client
// where the pointer is: this is where Saucer put it.
func (s *Screen) Position() (p image.Point, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at, s.atKnown
}

// withPointer sends what do sends through the virtual pointer, after
// putting it at (x, y) when at is set, and waits until the compositor has
// handled it.
func (s *Screen) withPointer(at bool, x, y int, do func(ptr uint32) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ptr, err := s.pointer()
	if err != nil {
		return err
	}
	if at {
		if err := s.move(ptr, x, y); err != nil {
			return err
		}
	}
	if err := do(ptr); err != nil {
		return err
	}
	return s.c.Roundtrip(timeout)
}

// button sends one press (down) or release of button, in a frame.
func (s *Screen) button(ptr, button uint32, down bool) error {
	state := uint32(0)
	if down {
		state = 1
	}
	return errors.Join(s.c.Request(ptr, 2, now(), Uint(button), Uint(state)), s.c.Request(ptr, 4))
}

// Click moves the pointer to (x, y) and clicks button count times.
func (s *Screen) Click(x, y int, button uint32, count int) error {
	return s.withPointer(true, x, y, func(ptr uint32) error {
		for i := range count {
			if i > 0 {
				time.Sleep(30 * time.Millisecond) // distinct time stamps, or a client counts one click (see desktop's clickGap)
			}
			if err := errors.Join(s.button(ptr, button, true), s.button(ptr, button, false)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Move puts the pointer at (x, y) of the layout.
func (s *Screen) Move(x, y int) error {
	return s.withPointer(true, x, y, func(uint32) error { return nil })
}

// Button presses (down) or releases button where the pointer is.
func (s *Screen) Button(button uint32, down bool) error {
	return s.withPointer(false, 0, 0, func(ptr uint32) error { return s.button(ptr, button, down) })
}

// Scroll turns the wheel at (x, y): steps notches, negative up or left.
func (s *Screen) Scroll(x, y int, horizontal bool, steps int) error {
	axis := uint32(0)
	if horizontal {
		axis = 1
	}
	one := 1
	if steps < 0 {
		one, steps = -1, -steps
	}
	return s.withPointer(true, x, y, func(ptr uint32) error {
		for range steps {
			if err := errors.Join(
				s.c.Request(ptr, 5, Uint(0)), // axis_source: wheel
				s.c.Request(ptr, 7, now(), Uint(axis), Fixed(float64(15*one)), Int(int32(one))), // axis_discrete
				s.c.Request(ptr, 4)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Modifier masks of an XKB keymap's real modifiers.
const (
	ModShift = 1
	ModCtrl  = 4
	ModAlt   = 8
	ModSuper = 64
)

// Key is one key press: a keysym with modifiers held.
type Key struct {
	Sym  uint32
	Mods uint32
}

// Type presses keys in order through a virtual keyboard whose keymap has
// one key per distinct keysym, so that any character can be typed
// whatever the person's layout.
func (s *Screen) Type(keys []Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kbdMgr == 0 || s.seat == 0 {
		return fmt.Errorf("keyboard input: %s %w (wlroots compositors such as sway offer it; weston does not)", ifVirtualKbd, ErrUnsupported)
	}
	// Each event waits for the compositor to take the one before: a
	// client reads its keys in order, but the compositor delivers them to
	// whichever client has the focus when they arrive, and a key may move
	// the focus. Modifier keys go down and up around the key, as on a
	// keyboard, and the modifier state goes with them.
	send := func(op uint16, args ...Arg) error {
		if err := s.c.Request(s.kbd, op, args...); err != nil {
			return err
		}
		return s.c.Roundtrip(timeout)
	}
	key := func(sym, state uint32) error { return send(1, now(), Uint(s.codes[sym]), Uint(state)) }
	for _, k := range keys {
		if err := s.keyboard([]uint32{k.Sym}); err != nil { // a character the keymap lacks
			return err
		}
		if s.shifted[k.Sym] {
			k.Mods |= ModShift // A is shift and the a key, as on a keyboard
		}
		var held uint32
		for _, m := range modKeys {
			if k.Mods&m.mask != 0 {
				held |= m.mask
				if err := errors.Join(key(m.sym, 1), send(2, Uint(held), Uint(0), Uint(0), Uint(0))); err != nil {
					return err
				}
			}
		}
		if err := errors.Join(key(k.Sym, 1), key(k.Sym, 0)); err != nil {
			return err
		}
		for i := len(modKeys) - 1; i >= 0; i-- {
			if m := modKeys[i]; k.Mods&m.mask != 0 {
				held &^= m.mask
				if err := errors.Join(key(m.sym, 0), send(2, Uint(held), Uint(0), Uint(0), Uint(0))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// lacks counts the keysyms the keymap lacks.
func (s *Screen) lacks(syms []uint32) int {
	n := 0
	for _, sym := range syms {
		if _, ok := s.codes[sym]; !ok {
			n++
		}
	}
	return n
}

// add gives the keysyms the keymap lacks their keys: a key of a US
// keyboard where it has one (the shifted level of it for A or !), else
// the highest free code. Applications that read a key's code and not
// only its keysym see the keys a person's keyboard sends: Chromium
// matches ctrl+d by the key's code, and drops a key whose code it does
// not know.
func (s *Screen) add(syms []uint32) {
	for _, sym := range syms {
		if _, ok := s.codes[sym]; ok {
			continue
		}
		if code, ok := usShifted[sym]; ok && int(code) <= len(s.syms) && s.syms[code-1] != 0 && s.upper[code-1] == 0 {
			s.upper[code-1] = sym
			s.codes[sym], s.shifted[sym] = code, true
			continue
		}
		code, ok := usKeys[sym]
		if !ok || int(code) <= len(s.syms) && s.syms[code-1] != 0 {
			code = s.freeCode()
		}
		if code == 0 {
			return // full: keyboard starts a new keymap before this
		}
		for len(s.syms) < int(code) {
			s.syms, s.upper = append(s.syms, 0), append(s.upper, 0)
		}
		s.syms[code-1] = sym
		s.codes[sym] = code // evdev code; XKB's is 8 more
	}
}

// maxCode is the highest evdev code a keymap can use: XKB's keycodes end
// at 255, 8 more.
const maxCode = 247

// freeCode is a code no key has, or 0: first the codes of keys no US
// keyboard has that Chromium knows (F13 to F24, the international keys),
// then the highest free code.
func (s *Screen) freeCode() uint32 {
	free := func(code uint32) bool { return int(code) > len(s.syms) || s.syms[code-1] == 0 }
	for _, code := range spareCodes {
		if free(code) {
			return code
		}
	}
	for code := uint32(maxCode); code > 0; code-- {
		if free(code) && !usCodes[code] {
			return code
		}
	}
	return 0
}

// spareCodes are keys that type nothing on a US keyboard: F13-F24, the
// 102nd key, Ro, Yen.
var spareCodes = []uint32{183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 86, 89, 124}

// usKeys are the evdev codes of a US keyboard's keys by the keysym they
// type without shift, usShifted with it; usCodes the codes they take.
var usKeys, usShifted, usCodes = func() (map[uint32]uint32, map[uint32]uint32, map[uint32]bool) {
	keys := map[uint32]uint32{
		0xffe3: 29, 0xffe1: 42, 0xffe9: 56, 0xffeb: 125, // Control_L, Shift_L, Alt_L, Super_L
		0xff08: 14, 0xff09: 15, 0xff0d: 28, 0xff1b: 1, 0xffff: 111, 0xff50: 102, 0xff51: 105, 0xff52: 103,
		0xff53: 106, 0xff54: 108, 0xff55: 104, 0xff56: 109, 0xff57: 107, 0xff63: 110, 0xff67: 127,
		0xffc8: 87, 0xffc9: 88, // F11, F12 (F1-F10 below)
		' ': 57,
	}
	for i := range uint32(10) {
		keys[0xffbe+i] = 59 + i // F1-F10
	}
	shifted := map[uint32]uint32{}
	for _, row := range []struct {
		first       uint32
		plain, with string
	}{{2, "1234567890-=", "!@#$%^&*()_+"}, {16, "qwertyuiop[]", "QWERTYUIOP{}"}, {30, "asdfghjkl;'`", "ASDFGHJKL:\"~"},
		{43, "\\zxcvbnm,./", "|ZXCVBNM<>?"}} {
		with := []rune(row.with)
		for i, c := range row.plain {
			keys[uint32(c)] = row.first + uint32(i)
			shifted[uint32(with[i])] = row.first + uint32(i)
		}
	}
	codes := map[uint32]bool{}
	for _, code := range keys {
		codes[code] = true
	}
	return keys, shifted, codes
}()

// baseKeys are the keys every keymap has: modifiers, named keys and
// printable ASCII.
func baseKeys() []uint32 {
	var syms []uint32
	for _, m := range modKeys {
		syms = append(syms, m.sym)
	}
	for sym := range keysymNames {
		syms = append(syms, sym)
	}
	slices.Sort(syms)
	// The unshifted characters first: a shifted one goes on their key.
	for _, shifted := range []bool{false, true} {
		for c := uint32(0x20); c <= 0x7e; c++ {
			if _, ok := usShifted[c]; ok == shifted {
				syms = append(syms, c)
			}
		}
	}
	return syms
}

// modKeys are the modifier keys, with the keysyms that press them.
var modKeys = []struct{ mask, sym uint32 }{{ModCtrl, 0xffe3}, {ModAlt, 0xffe9}, {ModSuper, 0xffeb}, {ModShift, 0xffe1}}

// Hold presses (down) or releases the modifier keys of mods, with the
// modifier state, for pointer actions made while they are held (a
// ctrl+click).
func (s *Screen) Hold(mods uint32, down bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kbdMgr == 0 || s.seat == 0 {
		return fmt.Errorf("keyboard input: %s %w (wlroots compositors such as sway offer it; weston does not)", ifVirtualKbd, ErrUnsupported)
	}
	var syms []uint32
	for _, m := range modKeys {
		syms = append(syms, m.sym)
	}
	if err := s.keyboard(syms); err != nil {
		return err
	}
	state, held := uint32(0), uint32(0)
	if down {
		state, held = 1, mods
	}
	for _, m := range modKeys {
		if mods&m.mask == 0 {
			continue
		}
		if err := errors.Join(s.c.Request(s.kbd, 1, now(), Uint(s.codes[m.sym]), Uint(state)), s.c.Roundtrip(timeout)); err != nil {
			return err
		}
	}
	return errors.Join(s.c.Request(s.kbd, 2, Uint(held), Uint(0), Uint(0), Uint(0)), s.c.Roundtrip(timeout))
}

// Key presses (down) or releases the key that types sym, the modifiers
// held (Hold) staying as they are: half of a key press, for a key held a
// while. A keysym on a key's shifted level is pressed with shift.
func (s *Screen) Key(sym, held uint32, down bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kbdMgr == 0 || s.seat == 0 {
		return fmt.Errorf("keyboard input: %s %w (wlroots compositors such as sway offer it; weston does not)", ifVirtualKbd, ErrUnsupported)
	}
	if err := s.keyboard([]uint32{sym}); err != nil {
		return err
	}
	state := uint32(0)
	if down {
		state = 1
	}
	if s.shifted[sym] {
		mask := held
		if down {
			mask |= ModShift
		}
		if err := errors.Join(s.c.Request(s.kbd, 2, Uint(mask), Uint(0), Uint(0), Uint(0)), s.c.Roundtrip(timeout)); err != nil {
			return err
		}
	}
	return errors.Join(s.c.Request(s.kbd, 1, now(), Uint(s.codes[sym]), Uint(state)), s.c.Roundtrip(timeout))
}

// keyboard makes the virtual keyboard if there is none yet, with a keymap
// of the modifiers, the named keys and printable ASCII, and adds the
// keysyms of more that it lacks.
func (s *Screen) keyboard(more []uint32) error {
	fresh := s.kbd == 0
	if fresh {
		id := s.c.NewID(nil)
		if err := s.c.Request(s.kbdMgr, 0, Uint(s.seat), Uint(id)); err != nil {
			return err
		}
		s.kbd = id
	}
	if fresh || s.lacks(more) > maxCode-len(s.codes) { // XKB's keycodes end at 255: start again
		s.syms, s.upper, s.codes, s.shifted = nil, nil, map[uint32]uint32{}, map[uint32]bool{}
		s.add(baseKeys())
	} else if s.lacks(more) == 0 {
		return nil
	}
	s.add(more)
	keymap := Keymap(s.syms, s.upper)
	fd, err := unix.MemfdCreate("saucer-keymap", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if _, err := syscall.Write(fd, append([]byte(keymap), 0)); err != nil {
		return err
	}
	if err := s.c.Request(s.kbd, 0, Uint(1), FD(fd), Uint(uint32(len(keymap)+1))); err != nil { // keymap(xkb_v1, fd, size)
		return err
	}
	return s.c.Roundtrip(timeout)
}

// Keymap is an XKB keymap with key i+1 (evdev code; XKB keycode i+9)
// typing syms[i], or upper[i] with shift where that is not zero; a zero
// sym is no key.
func Keymap(syms, upper []uint32) string {
	var b strings.Builder
	b.WriteString("xkb_keymap {\nxkb_keycodes \"saucer\" {\nminimum = 8;\n")
	fmt.Fprintf(&b, "maximum = %d;\n", max(len(syms)+9, 255))
	for i, sym := range syms {
		if sym != 0 {
			fmt.Fprintf(&b, "<K%d> = %d;\n", i+1, i+9)
		}
	}
	// The lock keys' lights, all off: GTK under Wayland reads a light the
	// keymap lacks as lit, and LibreOffice Calc with Scroll Lock lit
	// scrolls the sheet on Right instead of moving to the next cell.
	b.WriteString("indicator 1 = \"Caps Lock\";\nindicator 2 = \"Num Lock\";\nindicator 3 = \"Scroll Lock\";\n")
	// Every key names its type: a key of one level given no type would
	// take the first type there is, and shift+Home would type nothing.
	b.WriteString("};\nxkb_types \"saucer\" {\ntype \"ONE_LEVEL\" {\nmodifiers = none;\nlevel_name[Level1] = \"Any\";\n};\n" +
		"type \"TWO_LEVEL\" {\nmodifiers = Shift;\nmap[Shift] = Level2;\n" +
		"level_name[Level1] = \"Base\";\nlevel_name[Level2] = \"Shift\";\n};\n};\n" +
		"xkb_compatibility \"saucer\" {\n" +
		"indicator \"Caps Lock\" { whichModState = locked; modifiers = Lock; };\n" +
		"indicator \"Num Lock\" { whichModState = locked; modifiers = Mod2; };\n" +
		"indicator \"Scroll Lock\" { whichModState = locked; modifiers = Mod3; };\n" +
		"};\nxkb_symbols \"saucer\" {\n")
	for i, sym := range syms {
		switch {
		case sym == 0:
		case i < len(upper) && upper[i] != 0:
			fmt.Fprintf(&b, "key <K%d> { type = \"TWO_LEVEL\", [ %s, %s ] };\n", i+1, keysymName(sym), keysymName(upper[i]))
		default:
			fmt.Fprintf(&b, "key <K%d> { type = \"ONE_LEVEL\", [ %s ] };\n", i+1, keysymName(sym))
		}
	}
	b.WriteString("};\n};\n")
	return b.String()
}

// keysymName writes a keysym as XKB's keymap parser reads it: characters
// as Unicode names (U20AC), the other keys by name (a number is read as a
// keysym by some versions and not by others).
func keysymName(sym uint32) string {
	switch {
	case sym >= 0x20 && sym <= 0x7e || sym >= 0xa0 && sym <= 0xff:
		return fmt.Sprintf("U%04X", sym)
	case sym >= 0x1000100 && sym <= 0x110ffff:
		return fmt.Sprintf("U%04X", sym-0x1000000)
	}
	if n, ok := keysymNames[sym]; ok {
		return n
	}
	return fmt.Sprintf("%#x", sym)
}

// keysymNames are XKB's names of the keys that type no character.
var keysymNames = map[uint32]string{
	0xff08: "BackSpace", 0xff09: "Tab", 0xff0d: "Return", 0xff1b: "Escape", 0xffff: "Delete",
	0xff50: "Home", 0xff51: "Left", 0xff52: "Up", 0xff53: "Right", 0xff54: "Down", 0xff55: "Prior",
	0xff56: "Next", 0xff57: "End", 0xff63: "Insert", 0xff67: "Menu",
	0xffe1: "Shift_L", 0xffe3: "Control_L", 0xffe7: "Meta_L", 0xffe9: "Alt_L", 0xffeb: "Super_L",
	0xffbe: "F1", 0xffbf: "F2", 0xffc0: "F3", 0xffc1: "F4", 0xffc2: "F5", 0xffc3: "F6",
	0xffc4: "F7", 0xffc5: "F8", 0xffc6: "F9", 0xffc7: "F10", 0xffc8: "F11", 0xffc9: "F12",
}
