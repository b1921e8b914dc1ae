package desktop

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"
)

// Pixel actions: the pointer at a point of a screenshot, for what has no
// accessible control (a canvas, an image, a game, a remote desktop) and
// for models trained to act on pixels. A point is in a window's
// screenshot or the screen's, in that image's pixels: a screenshot may be
// scaled down (models see smaller images), and the point is mapped back
// to the screen's pixels by the image's size (Frame).

// Frame says how a screenshot's pixels map to the screen's: the image is
// Width x Height pixels and shows Area of the screen; Scale is image
// pixels per screen pixel (1: full size, 0.5: half).
type Frame struct {
	// Window is the window's id; empty for the whole screen.
	Window string  `json:"window,omitempty"`
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Scale  float64 `json:"scale"`
	// Area is the part of the screen the image shows, in the screen's
	// pixels.
	Area Rect `json:"screen_area"`
}

// newFrame is the frame of a screenshot of area at scale (0 < scale <= 1):
// its size is the area's, scaled and rounded.
func newFrame(area Rect, scale float64) Frame {
	return Frame{Width: max(1, int(math.Round(float64(area.W)*scale))), Height: max(1, int(math.Round(float64(area.H)*scale))),
		Scale: scale, Area: area}
}

// checkScale refuses a scale that no screenshot has.
func checkScale(scale float64) error {
	if scale < 0 || scale > 1 || math.IsNaN(scale) {
		return fmt.Errorf("scale %g: give the screenshot's scale as it says, image pixels per screen pixel, above 0 and at most 1 (0.5 for a half-size image), or leave it out", scale)
	}
	return nil
}

// toScreen maps pixel (x, y) of the image to the screen pixel under its
// centre: at scale 1 the same pixel of the area, at 0.5 the second of
// the two screen pixels each image pixel covers.
func (f Frame) toScreen(x, y int) (image.Point, error) {
	if x < 0 || y < 0 || x >= f.Width || y >= f.Height {
		of := "the screen's screenshot"
		if f.Window != "" {
			of = "window " + f.Window + "'s screenshot"
		}
		return image.Point{}, fmt.Errorf("the point %d,%d is outside %s, %dx%d pixels at scale %g: x and y count that image's pixels from 0,0 at its top left",
			x, y, of, f.Width, f.Height, f.Scale)
	}
	return image.Pt(f.Area.X+(2*x+1)*f.Area.W/(2*f.Width), f.Area.Y+(2*y+1)*f.Area.H/(2*f.Height)), nil
}

func (f Frame) String() string {
	of := "the screen"
	if f.Window != "" {
		of = "window " + f.Window
	}
	return fmt.Sprintf("%s's screenshot (%dx%d, scale %g)", of, f.Width, f.Height, f.Scale)
}

// Fit says how to scale a screenshot: by Scale, or down to fit within
// MaxWidth and MaxHeight (either may be 0: no bound); never up.
type Fit struct {
	Scale               float64
	MaxWidth, MaxHeight int
}

func (f Fit) scale(area Rect) (float64, error) {
	if err := checkScale(f.Scale); err != nil {
		return 0, err
	}
	if f.MaxWidth < 0 || f.MaxHeight < 0 {
		return 0, fmt.Errorf("max_width %d, max_height %d: give sizes in pixels above 0, or leave them out", f.MaxWidth, f.MaxHeight)
	}
	s := 1.0
	if f.Scale > 0 {
		s = f.Scale
	}
	if f.MaxWidth > 0 && area.W > f.MaxWidth {
		s = min(s, float64(f.MaxWidth)/float64(area.W))
	}
	if f.MaxHeight > 0 && area.H > f.MaxHeight {
		s = min(s, float64(f.MaxHeight)/float64(area.H))
	}
	return s, nil
}

// Shot is a screenshot as the screenshot tool gives it.
type Shot struct {
	Frame
	PNG []byte
	// Stale says why the picture may not show the window as it is.
	Stale string
}

// Screenshot captures a window ("" the dialog or active one), or the
// whole screen, scaled as fit says. The pixel tools then take points in
// its pixels (the last screenshot of each window, and of the screen).
func (d *Desktop) Screenshot(ctx context.Context, window string, screen bool, fit Fit) (*Shot, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var sh shot
	var w Window
	if screen {
		if window != "" {
			return nil, fmt.Errorf("screen and window %s: ask for one of them", window)
		}
		sh.img, sh.area, sh.err = d.x.capture(d.x.area())
	} else {
		if w, _, err = d.window(ctx, window); err != nil {
			return nil, err
		}
		sh = d.shoot(w)
	}
	if sh.err != nil {
		return nil, sh.err
	}
	s, err := fit.scale(sh.area)
	if err != nil {
		return nil, err
	}
	f := newFrame(sh.area, s)
	img := sh.img
	if f.Width != sh.area.W || f.Height != sh.area.H {
		img = shrink(img, f.Width, f.Height)
	}
	png, err := encodePNG(img)
	if err != nil {
		return nil, err
	}
	if screen {
		d.screenFrame = f
	} else {
		f.Window = w.ID
		d.frames[w.ref] = f
	}
	return &Shot{Frame: f, PNG: png, Stale: sh.stale}, nil
}

// shrink scales img down to w x h, each pixel the mean of the pixels it
// covers.
func shrink(img *image.RGBA, w, h int) *image.RGBA {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			var sum [4]int
			for sy := y0; sy < y1; sy++ {
				row := img.Pix[(sy)*img.Stride:]
				for sx := x0; sx < x1; sx++ {
					p := row[4*sx : 4*sx+4]
					sum[0], sum[1], sum[2], sum[3] = sum[0]+int(p[0]), sum[1]+int(p[1]), sum[2]+int(p[2]), sum[3]+int(p[3])
				}
			}
			n := (y1 - y0) * (x1 - x0)
			o := out.Pix[y*out.Stride+4*x:]
			o[0], o[1], o[2], o[3] = uint8(sum[0]/n), uint8(sum[1]/n), uint8(sum[2]/n), uint8(sum[3]/n)
		}
	}
	return out
}

// At is a point of a screenshot: of window Window ("" the screen's), in
// the pixels of its last screenshot, or of one at Scale when given. Hold
// names modifier keys held while the pointer acts there (ctrl, shift,
// alt, super).
type At struct {
	Window string
	X, Y   int
	Scale  float64
	Hold   []string
}

// modifiers reads the names of modifier keys.
func modifiers(names []string) ([]xproto.Keysym, error) {
	var out []xproto.Keysym
	for _, n := range names {
		m, ok := modifierKeys[strings.ToLower(strings.TrimSpace(n))]
		if !ok {
			return nil, fmt.Errorf("keys: %q is not a modifier: hold ctrl, shift, alt or super (press_keys types other keys)", n)
		}
		out = append(out, m)
	}
	return out, nil
}

// frame is how the pixels of the point's screenshot map to the screen
// now: the window's last screenshot (or the screen's), at the scale it
// had, or at at.Scale; full size before any. w is the window, nil for the
// screen.
func (d *Desktop) frame(ctx context.Context, window string, scale float64) (Frame, *Window, error) {
	if err := checkScale(scale); err != nil {
		return Frame{}, nil, err
	}
	if window == "" {
		area := d.x.area()
		switch {
		case scale > 0:
			return newFrame(area, scale), nil, nil
		case d.screenFrame.Width > 0 && d.screenFrame.Area == area:
			return d.screenFrame, nil, nil
		}
		return newFrame(area, 1), nil, nil
	}
	w, _, err := d.window(ctx, window)
	if err != nil {
		return Frame{}, nil, err
	}
	area := d.screenArea(w)
	if area.empty() {
		return Frame{}, nil, fmt.Errorf("window %s %q is not on the screen (at %d,%d %dx%d): move or resize it first", w.ID, w.Title, w.Bounds.X, w.Bounds.Y, w.Bounds.W, w.Bounds.H)
	}
	var f Frame
	last, seen := d.frames[w.ref]
	switch {
	case scale > 0:
		f = newFrame(area, scale)
	case seen && last.Area.W == area.W && last.Area.H == area.H:
		f = last
		f.Area = area // the window may have moved since
	case seen:
		f = newFrame(area, last.Scale)
	default:
		f = newFrame(area, 1)
	}
	f.Window = w.ID
	return f, &w, nil
}

// windowAt is the window shown at screen point p: the topmost of those
// whose box holds it (X11's stacking order; elsewhere the active one,
// else the last listed); nil when none does.
func (d *Desktop) windowAt(ctx context.Context, p image.Point) (*Window, error) {
	ws, err := d.windows(ctx)
	if err != nil {
		return nil, err
	}
	var order []xproto.Window
	if x, ok := d.x.(*display); ok {
		if tree, err := xproto.QueryTree(x.conn, x.root()).Reply(); err == nil {
			order = tree.Children
		}
	}
	xs, _ := d.x.topLevels()
	var best *Window
	bestRank := -1
	for i := range ws {
		w := &ws[i]
		if !w.Bounds.contains(p.X, p.Y) {
			continue
		}
		rank := 0
		if xw, ok := matchWindow(xs, *w); ok && order != nil {
			rank = 2 + slices.Index(order, xw.top)
		} else if w.Active {
			rank = 1
		}
		if rank >= bestRank {
			best, bestRank = w, rank
		}
	}
	return best, nil
}

// pointer does a pixel action at the points of one screenshot: they are
// mapped to the screen; with a window named it is raised and focused
// first, else the window under the first point is focused (as a click
// there would with a window manager). It reports what changed in that
// window and on the desktop.
func (d *Desktop) pointer(ctx context.Context, at At, pts []image.Point, do func(f Frame, on []image.Point) (string, error)) (*Effect, error) {
	mods, err := modifiers(at.Hold)
	if err != nil {
		return nil, err
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, w, err := d.frame(ctx, at.Window, at.Scale)
	if err != nil {
		return nil, err
	}
	on := make([]image.Point, len(pts))
	for i, p := range pts {
		if on[i], err = f.toScreen(p.X, p.Y); err != nil {
			return nil, err
		}
	}
	if w == nil {
		if w, err = d.windowAt(ctx, on[0]); err != nil {
			return nil, err
		}
	}
	run := func() (string, error) { return do(f, on) }
	if len(mods) > 0 {
		run = func() (string, error) {
			if err := d.x.hold(mods, true); err != nil {
				return "", err
			}
			did, err := do(f, on)
			// Released whatever failed: a key left held changes every
			// later click and key.
			if e := d.x.hold(mods, false); err == nil {
				err = e
			}
			return did + " holding " + strings.Join(at.Hold, "+"), err
		}
	}
	if w == nil {
		return d.actOnScreen(ctx, run)
	}
	if w.NotResponding {
		return nil, fmt.Errorf("window %s %q: %w", w.ID, w.Title, notRespondingErr(d.apps[w.ref.Bus]))
	}
	if xw, ok := d.xwindow(*w); ok {
		if err := d.x.activate(xw); err != nil {
			return nil, err
		}
	}
	eff, err := d.act(ctx, *w, Target{}, run)
	if eff != nil {
		eff.Point = &Point{on[0].X - w.Bounds.X, on[0].Y - w.Bounds.Y}
	}
	return eff, err
}

// actOnScreen does an action where no application window is, and
// reports the windows that opened or closed.
func (d *Desktop) actOnScreen(ctx context.Context, do func() (string, error)) (*Effect, error) {
	before, err := d.windows(ctx)
	if err != nil {
		return nil, err
	}
	did, err := do()
	if err != nil {
		return nil, err
	}
	eff := &Effect{Did: did}
	for range 2 {
		select {
		case <-time.After(d.opts.Settle):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		after, err := d.windows(ctx)
		if err != nil {
			return nil, err
		}
		if eff.NewWindows, eff.ClosedWindows = diffWindows(before, after); len(eff.NewWindows)+len(eff.ClosedWindows) > 0 {
			break
		}
	}
	return eff, nil
}

var buttons = map[string]byte{"": 1, "left": 1, "middle": 2, "right": 3}

func buttonOf(name string) (byte, error) {
	if b, ok := buttons[name]; ok {
		return b, nil
	}
	return 0, fmt.Errorf("button %q: use left, right or middle", name)
}

// clickOf checks a click's button and count (0: 1) and gives the button's
// number.
func clickOf(button string, count int) (byte, int, error) {
	btn, err := buttonOf(button)
	if err != nil {
		return 0, 0, err
	}
	if count == 0 {
		count = 1
	}
	if count < 1 || count > 3 {
		return 0, 0, fmt.Errorf("count %d: use 1 (click), 2 (double-click) or 3 (triple-click)", count)
	}
	return btn, count, nil
}

func where(f Frame, x, y int, on image.Point) string {
	return fmt.Sprintf("at %d,%d of %s: %d,%d on the screen", x, y, f, on.X, on.Y)
}

// ClickAt clicks button ("left" by default, "right", "middle") count
// times (1-3: a double or triple click) at a point of a screenshot.
func (d *Desktop) ClickAt(ctx context.Context, at At, button string, count int) (*Effect, error) {
	btn, count, err := clickOf(button, count)
	if err != nil {
		return nil, err
	}
	return d.pointer(ctx, at, []image.Point{{at.X, at.Y}}, func(f Frame, on []image.Point) (string, error) {
		if err := d.x.click(on[0].X, on[0].Y, btn, count); err != nil {
			return "", err
		}
		return fmt.Sprintf("clicked the %s button %d time(s) %s", orDefault(button, "left"), count, where(f, at.X, at.Y, on[0])), nil
	})
}

// MoveTo moves the pointer to a point of a screenshot (a hover).
func (d *Desktop) MoveTo(ctx context.Context, at At) (*Effect, error) {
	return d.pointer(ctx, at, []image.Point{{at.X, at.Y}}, func(f Frame, on []image.Point) (string, error) {
		if err := d.x.move(on[0].X, on[0].Y); err != nil {
			return "", err
		}
		return "moved the pointer " + where(f, at.X, at.Y, on[0]), nil
	})
}

// dragSteps is how many moves a drag makes between its ends, dragPause
// the pause after each: toolkits start a drag only once the pointer has
// moved past a threshold with the button held, and some read the motion
// in between.
const (
	dragSteps = 10
	dragPause = 10 * time.Millisecond
)

// Drag presses button at from, moves the pointer to to in steps, and
// releases it there; both points are of the same screenshot (from's
// window and scale).
func (d *Desktop) Drag(ctx context.Context, from At, to image.Point, button string) (*Effect, error) {
	btn, err := buttonOf(button)
	if err != nil {
		return nil, err
	}
	return d.pointer(ctx, from, []image.Point{{from.X, from.Y}, to}, func(f Frame, on []image.Point) (string, error) {
		a, b := on[0], on[1]
		if err := d.x.move(a.X, a.Y); err != nil {
			return "", err
		}
		if err := d.x.button(btn, true); err != nil {
			return "", err
		}
		var err error
		for i := 1; i <= dragSteps && err == nil; i++ {
			select {
			case <-time.After(dragPause):
			case <-ctx.Done():
				err = ctx.Err()
			}
			if err == nil {
				err = d.x.move(a.X+(b.X-a.X)*i/dragSteps, a.Y+(b.Y-a.Y)*i/dragSteps)
			}
		}
		// The button is released whatever failed: a button left held
		// would turn every later click into a drag.
		if e := d.x.button(btn, false); err == nil {
			err = e
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("dragged with the %s button from %d,%d to %d,%d of %s: %d,%d to %d,%d on the screen",
			orDefault(button, "left"), from.X, from.Y, to.X, to.Y, f, a.X, a.Y, b.X, b.Y), nil
	})
}

// maxNotches bounds one scroll.
const maxNotches = 50

// ScrollAt turns the wheel at a point of a screenshot: dy notches down
// (negative: up), dx right (negative: left).
func (d *Desktop) ScrollAt(ctx context.Context, at At, dx, dy int) (*Effect, error) {
	if dx == 0 && dy == 0 {
		return nil, errors.New("dx and dy are both 0: give notches to scroll, dy 3 for three down, -3 up; dx right or left")
	}
	if abs(dx) > maxNotches || abs(dy) > maxNotches {
		return nil, fmt.Errorf("dx %d, dy %d: at most %d notches at once", dx, dy, maxNotches)
	}
	return d.pointer(ctx, at, []image.Point{{at.X, at.Y}}, func(f Frame, on []image.Point) (string, error) {
		for _, s := range []struct {
			n        int
			neg, pos byte
		}{{dy, 4, 5}, {dx, 6, 7}} {
			if s.n == 0 {
				continue
			}
			btn := s.pos
			if s.n < 0 {
				btn = s.neg
			}
			if err := d.x.click(on[0].X, on[0].Y, btn, abs(s.n)); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("scrolled dx %d, dy %d notches %s", dx, dy, where(f, at.X, at.Y, on[0])), nil
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// fromScreen maps screen pixel p to the image pixel that shows it, and
// reports whether the image shows it at all.
func (f Frame) fromScreen(p image.Point) (image.Point, bool) {
	if !p.In(image.Rect(f.Area.X, f.Area.Y, f.Area.X+f.Area.W, f.Area.Y+f.Area.H)) {
		return image.Point{}, false
	}
	return image.Pt((p.X-f.Area.X)*f.Width/f.Area.W, (p.Y-f.Area.Y)*f.Height/f.Area.H), true
}

// MouseButton presses (down) or releases a mouse button, at a point of a
// screenshot or, with at nil, where the pointer is: the parts of a drag a
// model makes itself (press, move_to, release), as computer-use models
// do. A button left pressed turns later clicks into drags: Close releases
// what is still held, and each result says what is held.
func (d *Desktop) MouseButton(ctx context.Context, at *At, button string, down bool) (*Effect, error) {
	btn, err := buttonOf(button)
	if err != nil {
		return nil, err
	}
	verb := map[bool]string{true: "pressed", false: "released"}[down]
	press := func() error {
		if err := d.x.button(btn, down); err != nil {
			return err
		}
		if d.held == nil {
			d.held = map[byte]bool{}
		}
		if down {
			d.held[btn] = true
		} else {
			delete(d.held, btn)
		}
		return nil
	}
	name := orDefault(button, "left")
	if at == nil {
		unlock, err := d.lockConnected(ctx)
		if err != nil {
			return nil, err
		}
		defer unlock()
		return d.actOnScreen(ctx, func() (string, error) {
			if err := press(); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s the %s button where the pointer is%s", verb, name, d.heldNote()), nil
		})
	}
	return d.pointer(ctx, *at, []image.Point{{at.X, at.Y}}, func(f Frame, on []image.Point) (string, error) {
		if err := d.x.move(on[0].X, on[0].Y); err != nil {
			return "", err
		}
		if err := press(); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s the %s button %s%s", verb, name, where(f, at.X, at.Y, on[0]), d.heldNote()), nil
	})
}

// heldNote says which mouse buttons are still pressed, if any.
func (d *Desktop) heldNote() string {
	var names []string
	for _, b := range []struct {
		n    byte
		name string
	}{{1, "left"}, {2, "middle"}, {3, "right"}} {
		if d.held[b.n] {
			names = append(names, b.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; still pressed: the " + strings.Join(names, " and ") + " button (release it with mouse_button)"
}

// releaseHeld releases the mouse buttons MouseButton left pressed.
func (d *Desktop) releaseHeld() {
	for b := range d.held {
		_ = d.x.button(b, false)
	}
	d.held = nil
}

// PointerPosition is where the pointer is, in a window's screenshot or
// the screen's (window empty) at its scale (0: that of the last one): the
// point click_at would take to click there. Under Wayland it is where
// Saucer last put the pointer.
func (d *Desktop) PointerPosition(ctx context.Context, window string, scale float64) (image.Point, Frame, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return image.Point{}, Frame{}, err
	}
	defer unlock()
	f, _, err := d.frame(ctx, window, scale)
	if err != nil {
		return image.Point{}, Frame{}, err
	}
	on, ok := d.x.pointerAt()
	if !ok {
		return image.Point{}, f, errors.New("where the pointer is is not known: it has not been moved since the desktop connected (a Wayland compositor tells no client); move it with move_to")
	}
	p, ok := f.fromScreen(on)
	if !ok {
		return image.Point{}, f, fmt.Errorf("the pointer is at %d,%d on the screen, outside %s", on.X, on.Y, f)
	}
	return p, f, nil
}
