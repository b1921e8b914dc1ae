package desktop

import (
	"context"
	"image"
	"image/color"
	"strings"
	"testing"
	"time"

	owndisplay "github.com/saucerhq/saucer/internal/display"
)

func TestFrameMapsBackExactly(t *testing.T) {
	f := newFrame(Rect{100, 50, 801, 601}, 0.5)
	if f.Width != 401 || f.Height != 301 {
		t.Fatalf("801x601 at 0.5 is %dx%d, want 401x301 (rounded)", f.Width, f.Height)
	}
	// Every image pixel maps to a screen pixel inside the part of the
	// area it shows, and neighbours map in order.
	prev := -1
	for x := range f.Width {
		p, err := f.toScreen(x, 0)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := 100+x*801/401, 100+(x+1)*801/401
		if p.X < lo || p.X > hi || p.X <= prev {
			t.Fatalf("image x %d maps to screen x %d, outside its pixels %d-%d (or not after %d)", x, p.X, lo, hi, prev)
		}
		prev = p.X
	}
	full := newFrame(Rect{10, 20, 300, 200}, 1)
	if p, _ := full.toScreen(299, 199); p != image.Pt(309, 219) {
		t.Fatalf("at scale 1 the last pixel maps to %v, want 309,219", p)
	}
	for _, bad := range []image.Point{{-1, 0}, {300, 0}, {0, 200}} {
		if _, err := full.toScreen(bad.X, bad.Y); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("the point %v of a 300x200 screenshot: %v, want an error saying it is outside", bad, err)
		}
	}
	if err := checkScale(2); err == nil {
		t.Error("scale 2 was taken: a screenshot is never larger than the screen")
	}
	if b, n, err := clickOf("", 0); b != 1 || n != 1 || err != nil {
		t.Errorf("no button and no count: button %d, %d clicks, %v; want a left click", b, n, err)
	}
	for _, bad := range []struct {
		button string
		count  int
	}{{"left", 4}, {"left", -1}, {"side", 1}} {
		if _, _, err := clickOf(bad.button, bad.count); err == nil {
			t.Errorf("button %q, count %d was taken", bad.button, bad.count)
		}
	}
}

// TestPixelActions drives a GTK canvas that has no accessible control
// (testdata/pointer.py), by pixels only, on X11 and under sway: a click at
// a point of a half-size screenshot lands on the screen pixel under that
// image pixel's centre (read back from the canvas's own drawing), and
// right, double and triple clicks, a drag, the wheel and a hover reach it
// as the canvas reports in its title.
func TestPixelActions(t *testing.T) {
	for _, kind := range []owndisplay.Kind{owndisplay.Xvfb, owndisplay.Sway} {
		t.Run(string(kind), func(t *testing.T) {
			d, w := canvasOn(t, kind)
			ctx := context.Background()

			// A click at a point of a half-size screenshot.
			half, err := d.Screenshot(ctx, w.ID, false, Fit{Scale: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			img, err := pngImage(half.PNG)
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != half.Width || b.Dy() != half.Height || half.Width != (half.Area.W+1)/2 {
				t.Fatalf("the half-size screenshot is %v, says %dx%d, of a %dx%d window", b, half.Width, half.Height, half.Area.W, half.Area.H)
			}
			eff, err := d.ClickAt(ctx, At{Window: w.ID, X: 61, Y: 40}, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			if !changedTitle(eff) {
				t.Errorf("the click's effect does not report the canvas's new title: %+v", eff)
			}
			want := image.Pt((2*61+1)*half.Area.W/(2*half.Width), (2*40+1)*half.Area.H/(2*half.Height))
			waitTitle(t, d, w, "release 1")
			if got := dots(t, d, w); got[blue] != want {
				t.Fatalf("the click at 61,40 of the half-size screenshot reached the window's pixel %v, want %v (%v)", got[blue], want, eff.Did)
			}
			// The full-size screenshot just taken is now the window's: a
			// click at the pixel it showed lands on it.
			if _, err := d.ClickAt(ctx, At{Window: w.ID, X: want.X + 7, Y: want.Y + 5}, "right", 2); err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "press 3 x2")
			if got := dots(t, d, w); got[blue] != want.Add(image.Pt(7, 5)) {
				t.Fatalf("a right double-click at %v of the full-size screenshot reached %v", want.Add(image.Pt(7, 5)), got[blue])
			}
			if _, err := d.ClickAt(ctx, At{Window: w.ID, X: 30, Y: 30, Scale: 0.5}, "", 3); err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "press 1 x3")

			// The screen's screenshot, at half size, and a click with no
			// window: the same pixel of the screen.
			screen, err := d.Screenshot(ctx, "", true, Fit{MaxWidth: 640})
			if err != nil {
				t.Fatal(err)
			}
			if screen.Width != 640 || screen.Window != "" {
				t.Fatalf("the screen's screenshot fit to 640 wide is %dx%d (window %q)", screen.Width, screen.Height, screen.Window)
			}
			area := d.screenArea(currentWindow(t, d, w))
			sx, sy := (area.X+100)*screen.Width/screen.Area.W, (area.Y+90)*screen.Height/screen.Area.H
			if _, err := d.ClickAt(ctx, At{X: sx, Y: sy}, "middle", 1); err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "press 2 x1")
			on, _ := screen.toScreen(sx, sy)
			if got := dots(t, d, w); got[blue] != on.Sub(image.Pt(area.X, area.Y)) {
				t.Fatalf("the click at %d,%d of the screen's screenshot reached the window's pixel %v, want %v", sx, sy, got[blue], on.Sub(image.Pt(area.X, area.Y)))
			}

			// A drag: pressed at one end, moved with the button held,
			// released at the other.
			from, to := image.Pt(40, 50), image.Pt(200, 150)
			if _, err := d.Drag(ctx, At{Window: w.ID, X: from.X, Y: from.Y, Scale: 1}, to, ""); err != nil {
				t.Fatal(err)
			}
			title := waitTitle(t, d, w, "release 1, moves")
			if strings.Contains(title, "moves 0,") {
				t.Fatalf("the drag moved nothing with the button held: %q", title)
			}
			if got := dots(t, d, w); got[red] != from || got[blue] != to {
				t.Fatalf("the drag pressed at %v and released at %v, want %v and %v", got[red], got[blue], from, to)
			}

			// The wheel, both ways: two notches left, three down. GTK
			// under Wayland reads a horizontal notch the other way round
			// from the protocol, which the virtual pointer follows
			// (gdkdevice-wayland.c: discrete_x > 0 is GDK_SCROLL_LEFT);
			// X11's buttons 6 and 7 are left and right for every toolkit.
			if _, err := d.ScrollAt(ctx, At{Window: w.ID, X: 100, Y: 100}, -2, 3); err != nil {
				t.Fatal(err)
			}
			if kind == owndisplay.Xvfb {
				waitTitle(t, d, w, "scroll -2,3")
			} else {
				waitTitle(t, d, w, "scroll 2,3")
			}

			// A hover lands where a click at the same point does.
			if _, err := d.MoveTo(ctx, At{Window: w.ID, X: 123, Y: 77}); err != nil {
				t.Fatal(err)
			}
			hover := strings.TrimPrefix(waitTitle(t, d, w, "hover"), "")
			hover = hover[strings.LastIndex(hover, "hover ")+len("hover "):]
			if _, err := d.ClickAt(ctx, At{Window: w.ID, X: 123, Y: 77}, "", 1); err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "press 1 x1 at "+hover+",")

			// Modifiers held for a click, and released after it.
			eff, err = d.ClickAt(ctx, At{Window: w.ID, X: 50, Y: 60, Hold: []string{"ctrl", "Shift"}}, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "press 1 x1 at 50,60 +ctrl +shift,")
			if !strings.HasSuffix(eff.Did, "holding ctrl+Shift") {
				t.Errorf("the click's result does not say what it held: %s", eff.Did)
			}
			if _, err := d.ClickAt(ctx, At{Window: w.ID, X: 52, Y: 60}, "", 1); err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "press 1 x1 at 52,60,")
			if _, err := d.ClickAt(ctx, At{Window: w.ID, X: 5, Y: 5, Hold: []string{"q"}}, "", 1); err == nil || !strings.Contains(err.Error(), "not a modifier") {
				t.Fatalf("holding q: %v, want it refused", err)
			}

			if _, err := d.ClickAt(ctx, At{Window: w.ID, X: 5000, Y: 5}, "", 1); err == nil || !strings.Contains(err.Error(), "outside") {
				t.Fatalf("a click outside the screenshot: %v, want an error saying so", err)
			}
		})
	}
}

var (
	red  = color.RGBA{255, 0, 0, 255}
	blue = color.RGBA{0, 0, 255, 255}
)

// dots finds the canvas's red and blue pixels in a full-size screenshot
// of window w (where a button last went down and came up). Under sway
// the pointer is moved to the screen's corner first: a headless sway
// draws it into the picture.
func dots(t *testing.T, d *Desktop, w Window) map[color.RGBA]image.Point {
	t.Helper()
	if d.x.windowRelative() {
		if _, err := d.MoveTo(context.Background(), At{X: 0, Y: 0, Scale: 1}); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := d.Screenshot(context.Background(), w.ID, false, Fit{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := pngImage(sh.PNG)
	if err != nil {
		t.Fatal(err)
	}
	out := map[color.RGBA]image.Point{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); c == red || c == blue {
				out[c] = image.Pt(x, y)
			}
		}
	}
	return out
}

// whiteCanvas waits until the canvas shows white where the compositor
// has placed it for good (sway lists a window before its first frame and
// before it is where it stays).
func whiteCanvas(t *testing.T, d *Desktop, w Window) Window {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last Rect
	for {
		sh, err := d.Screenshot(context.Background(), w.ID, false, Fit{})
		if err != nil {
			t.Fatal(err)
		}
		img, err := pngImage(sh.PNG)
		if err != nil {
			t.Fatal(err)
		}
		now := currentWindow(t, d, w)
		b := img.Bounds()
		if color.RGBAModel.Convert(img.At(b.Dx()/2, b.Dy()/2)).(color.RGBA) == (color.RGBA{255, 255, 255, 255}) && now.Bounds == last {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canvas is not white at its centre, or still moving (at %+v after %+v)", now.Bounds, last)
		}
		last = now.Bounds
		time.Sleep(100 * time.Millisecond)
	}
}

// currentWindow is window w as listed now.
func currentWindow(t *testing.T, d *Desktop, w Window) Window {
	t.Helper()
	ws, err := d.Windows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ws {
		if x.ID == w.ID {
			return x
		}
	}
	t.Fatalf("window %s is gone: %+v", w.ID, ws)
	return Window{}
}

// waitTitle waits until window w's title contains s, and returns it.
func waitTitle(t *testing.T, d *Desktop, w Window, s string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		title := currentWindow(t, d, w).Title
		if strings.Contains(title, s) {
			return title
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window's title is %q, want it to say %q", title, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func changedTitle(eff *Effect) bool {
	for _, c := range eff.Changed {
		if c.Field == "window title" {
			return true
		}
	}
	return false
}

// TestPressMoveRelease drags in parts, as computer-use models do: a press
// at a point, a move with the button held, a release where the pointer
// is; and pointer_position says where the pointer is in the window's
// screenshot. On X11 and under sway (where it is where Saucer put it).
func TestPressMoveRelease(t *testing.T) {
	for _, kind := range []owndisplay.Kind{owndisplay.Xvfb, owndisplay.Sway} {
		t.Run(string(kind), func(t *testing.T) {
			d, w := canvasOn(t, kind)
			ctx := context.Background()
			from, to := image.Pt(40, 50), image.Pt(200, 150)
			eff, err := d.MouseButton(ctx, &At{Window: w.ID, X: from.X, Y: from.Y, Scale: 1}, "", true)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(eff.Did, "still pressed: the left button") {
				t.Errorf("the press does not say the button is held: %s", eff.Did)
			}
			waitTitle(t, d, w, "press 1 x1 at 40,50")
			if _, err := d.MoveTo(ctx, At{Window: w.ID, X: 120, Y: 100}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.MoveTo(ctx, At{Window: w.ID, X: to.X, Y: to.Y}); err != nil {
				t.Fatal(err)
			}
			p, _, err := d.PointerPosition(ctx, w.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p != to {
				t.Errorf("pointer_position says %v, want %v", p, to)
			}
			eff, err = d.MouseButton(ctx, nil, "left", false)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(eff.Did, "still pressed") {
				t.Errorf("after the release a button is still said to be held: %s", eff.Did)
			}
			title := waitTitle(t, d, w, "release 1, moves")
			if strings.Contains(title, "moves 0,") {
				t.Fatalf("the moves with the button held were not felt: %q", title)
			}
			if got := dots(t, d, w); got[red] != from || got[blue] != to {
				t.Fatalf("pressed at %v and released at %v, want %v and %v", got[red], got[blue], from, to)
			}
		})
	}
}

// canvasOn starts a desktop of kind with testdata/pointer.py's 400x300
// canvas on it, painted white, and gives the desktop and its window.
func canvasOn(t *testing.T, kind owndisplay.Kind) (*Desktop, Window) {
	t.Helper()
	const python = "/usr/bin/python3"
	var d *Desktop
	if kind == owndisplay.Xvfb {
		_, d = start(t, python)
	} else {
		_, d = startWayland(t, kind, python)
	}
	requireGICairo(t, python)
	w := launch(t, d, python, "testdata/pointer.py", "Canvas", "400", "300")
	return d, whiteCanvas(t, d, w)
}
