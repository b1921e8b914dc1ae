package wl_test

import (
	"context"
	"image"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/tools/desktop/internal/sway"
	"github.com/saucerhq/saucer/tools/desktop/internal/wl"
)

func startSway(t *testing.T, apps ...string) *display.Display {
	t.Helper()
	msg := display.Missing(display.Sway)
	for _, a := range apps {
		if _, err := exec.LookPath(a); err != nil {
			msg += " " + a
		}
	}
	if msg != "" {
		if os.Getenv("CI") != "" {
			t.Fatal("needs " + msg)
		}
		t.Skip("needs " + msg)
	}
	d, err := display.Start(context.Background(), display.Options{Kind: display.Sway, Width: 1024, Height: 640})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// onSway starts sway with app running on it, and returns the display, a
// connection to sway's IPC and app's process id; both close when the test
// ends.
func onSway(t *testing.T, app string) (*display.Display, *sway.Conn, int) {
	t.Helper()
	d := startSway(t, app)
	ipc, err := sway.Dial(d.SwaySock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ipc.Close() })
	cmd, err := d.Launch(app)
	if err != nil {
		t.Fatal(err)
	}
	return d, ipc, cmd.Process.Pid
}

// openScreen opens the display's Wayland screen, closed when the test
// ends.
func openScreen(t *testing.T, d *display.Display) *wl.Screen {
	t.Helper()
	s, err := wl.Open(d.Wayland)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitWindow waits for sway to show a window of the process.
func waitWindow(t *testing.T, ipc *sway.Conn, pid int) sway.Window {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ws, err := ipc.Windows()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.PID == pid && w.Content.Width > 0 {
				return w
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no window of pid %d in sway's tree: %+v", pid, ws)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A screenshot through wlr-screencopy shows the application's pixels:
// the window's area is not one colour, and differs from the empty
// desktop beside it.
func TestCaptureShowsTheWindow(t *testing.T) {
	d, ipc, pid := onSway(t, "galculator")
	s := openScreen(t, d)
	if l := s.Layout(); l.Dx() != 1024 || l.Dy() != 640 {
		t.Fatalf("the layout is %v, want the 1024x640 output", l)
	}
	capture, pointer, keyboard := s.Has()
	if !capture || !pointer || !keyboard {
		t.Fatalf("sway offers capture %v, pointer %v, keyboard %v; want all", capture, pointer, keyboard)
	}
	// The window is in sway's tree before its first frame is shown: wait
	// (with a deadline) for its pixels.
	deadline := time.Now().Add(20 * time.Second)
	for {
		w := waitWindow(t, ipc, pid)
		c := w.Content
		img, err := s.Capture(imageRect(c.X, c.Y, c.Width, c.Height))
		if err != nil {
			t.Fatal(err)
		}
		n := colours(img)
		if n >= 10 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window's screenshot has %d colours: blank, not galculator", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func colours(img *image.RGBA) int {
	seen := map[[3]uint8]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			i := img.PixOffset(x, y)
			seen[[3]uint8{img.Pix[i], img.Pix[i+1], img.Pix[i+2]}] = true
		}
	}
	return len(seen)
}

func imageRect(x, y, w, h int) image.Rectangle { return image.Rect(x, y, x+w, y+h) }

// A part of the screen captured alone (the compositor copies only that
// region) has the same pixels as that part of the whole screen, at the
// same place: the region's offset inside the output is right.
func TestCaptureOfAPartMatchesTheWhole(t *testing.T) {
	d, ipc, pid := onSway(t, "galculator")
	s := openScreen(t, d)
	c := waitWindow(t, ipc, pid).Content
	// A part inside the window, at odd coordinates, so that a region
	// taken from the output's origin, or with x and y swapped, shows
	// other pixels.
	part := imageRect(c.X+37, c.Y+13, 151, 97).Intersect(imageRect(c.X, c.Y, c.Width, c.Height))
	deadline := time.Now().Add(20 * time.Second)
	for {
		before, err := s.Capture(s.Layout())
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Capture(part)
		if err != nil {
			t.Fatal(err)
		}
		after, err := s.Capture(s.Layout())
		if err != nil {
			t.Fatal(err)
		}
		if got.Bounds() != part {
			t.Fatalf("the capture of %v has bounds %v", part, got.Bounds())
		}
		// Only a screen that held still across the three captures, and
		// shows the window's pixels, can be compared.
		if same(before, after, part) && colours(before.SubImage(part).(*image.RGBA)) >= 4 {
			if !same(before, got, part) {
				t.Fatalf("the part captured alone differs from the same part of the whole screen")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the screen did not hold still with galculator painted in 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// same reports whether a and b have the same pixels in r.
func same(a, b *image.RGBA, r image.Rectangle) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i, j := a.PixOffset(r.Min.X, y), b.PixOffset(r.Min.X, y)
		if string(a.Pix[i:i+4*r.Dx()]) != string(b.Pix[j:j+4*r.Dx()]) {
			return false
		}
	}
	return true
}

// On a sway of Saucer's own an application's window keeps the size it
// asks for, as on Xvfb, rather than being tiled across the screen: the
// screenshot the model reads is the window's, not a screenful.
func TestOwnSwayKeepsAWindowsOwnSize(t *testing.T) {
	_, ipc, pid := onSway(t, "galculator")
	c := waitWindow(t, ipc, pid).Content
	screen := imageRect(0, 0, 1024, 640)
	if box := imageRect(c.X, c.Y, c.Width, c.Height); box.Dx() > screen.Dx()*3/4 || !box.In(screen) {
		t.Fatalf("galculator's window is at %v on the %v screen: tiled across it, or off it", box, screen)
	}
}
