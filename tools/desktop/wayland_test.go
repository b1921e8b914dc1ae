package desktop

import (
	"context"
	"image"
	"image/color"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/desktoptest"
	owndisplay "github.com/saucerhq/saucer/internal/display"
)

// startWayland gives a private headless compositor of kind and a Desktop
// over it, closed at the end.
func startWayland(t *testing.T, kind owndisplay.Kind, apps ...string) (*desktoptest.Session, *Desktop) {
	t.Helper()
	desktoptest.RequireKind(t, kind, apps...)
	s := desktoptest.StartKind(t, kind)
	d := New(Options{Wayland: s.Wayland, SwaySock: s.SwaySock, Bus: s.BusAddr, Env: s.Env, LaunchTimeout: 20 * time.Second})
	t.Cleanup(func() { d.Close() })
	return s, d
}

// painted waits until the window has settled where sway puts it (a
// window is in sway's tree before its first frame, and before sway has
// drawn its title bar) and its screenshot shows more than a blank
// surface.
func painted(t *testing.T, d *Desktop, w Window) *Observation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last Rect
	for {
		obs, err := d.Observe(context.Background(), w.ID, ObserveOptions{Screenshot: true})
		if err != nil {
			t.Fatal(err)
		}
		img, err := pngImage(obs.PNG)
		if err != nil {
			t.Fatal(err)
		}
		n := colourCount(img)
		if n >= 10 && obs.Window.Bounds == last {
			return obs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screenshot of %s has %d colours, the window is at %+v after %+v", w.Title, n, obs.Window.Bounds, last)
		}
		last = obs.Window.Bounds
		time.Sleep(200 * time.Millisecond)
	}
}

func colourCount(img image.Image) int {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			seen[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	return len(seen)
}

// displayText reads galculator's display.
func displayText(t *testing.T, d *Desktop, w Window) string {
	t.Helper()
	obs, err := d.Observe(context.Background(), w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(calcDisplay(t, obs).Text)
}

// waitDisplay waits for galculator's display to read want.
func waitDisplay(t *testing.T, d *Desktop, w Window, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := displayText(t, d, w)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the display reads %q, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Under sway the desktop lists the window where sway shows it, reads its
// controls, takes a screenshot with the marks on the controls, and acts
// through AT-SPI, the virtual pointer and the virtual keyboard.
func TestSwayCalculator(t *testing.T) {
	_, d := startWayland(t, owndisplay.Sway, "galculator")
	ctx := context.Background()
	w := launch(t, d, "galculator")
	obs := painted(t, d, w)
	// sway draws a title bar: the window's content starts below it, and
	// the boxes GTK gives relative to the window are moved there.
	w = obs.Window
	if w.Bounds.Y < 10 || w.Bounds.W < 100 {
		t.Fatalf("the window is at %+v: not placed where sway shows it (below its title bar)", w.Bounds)
	}
	if len(obs.Controls) < 20 {
		t.Fatalf("kept %d controls; want a whole keypad:\n%s", len(obs.Controls), obs.Text())
	}
	marked, err := d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true})
	if err != nil {
		t.Fatal(err)
	}
	markedScreenshot(t, marked)

	// 1 2 * 7 = through the buttons' own actions.
	for _, key := range []string{"1", "2", "*", "7", "="} {
		eff, err := d.Click(ctx, Target{ID: mustFind(t, obs, "toggle button", key).ID}, "", 1)
		if err != nil {
			t.Fatalf("click %q: %v", key, err)
		}
		if !strings.Contains(eff.Did, "action") {
			t.Errorf("a button with a click action was not pressed through it: %s", eff.Did)
		}
	}
	waitDisplay(t, d, w, "84")

	// C, then 5 with the pointer at the button's centre: the box, moved
	// onto the screen, is where sway shows the button.
	if _, err := d.Click(ctx, Target{ID: mustFind(t, obs, "toggle button", "C").ID}, "", 1); err != nil {
		t.Fatal(err)
	}
	five := mustFind(t, obs, "toggle button", "5")
	x, y := five.Bounds.centre()
	if err := d.x.click(x, y, 1, 1); err != nil {
		t.Fatal(err)
	}
	waitDisplay(t, d, w, "5")

}

// Under sway, focus_window and close_window go through sway's IPC.
func TestSwayFocusesAndClosesWindows(t *testing.T) {
	_, d := startWayland(t, owndisplay.Sway, "galculator", "mousepad")
	ctx := context.Background()
	calc := launch(t, d, "galculator")
	ed := launch(t, d, "mousepad")
	eff, err := d.FocusWindow(ctx, calc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Window == nil || !eff.Window.Active {
		t.Fatalf("the calculator is not active after focus_window: %+v", eff.Window)
	}
	eff, err = d.CloseWindow(ctx, ed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.ClosedWindows) != 1 || eff.ClosedWindows[0].ID != ed.ID {
		t.Fatalf("closing the editor closed %+v (%s)", eff.ClosedWindows, eff.Did)
	}
}

// editorText is the text of the editor's one text control.
func editorText(t *testing.T, d *Desktop, w Window) string {
	t.Helper()
	return editable(t, d, w).Text
}

// editable is the editable text of window w, observed now.
func editable(t testing.TB, d *Desktop, w Window) Control {
	t.Helper()
	obs, err := d.Observe(context.Background(), w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range obs.Controls {
		if c.Role == "text" && c.st.has(stEditable) {
			return c
		}
	}
	t.Fatalf("no editable text in:\n%s", obs.Text())
	return Control{}
}

// Under sway type_text types with the virtual keyboard, as on X11 (a
// line break is Return, typed text replaces a selection); keys go through
// it too, modifiers included.
func TestSwayEditor(t *testing.T) {
	_, d := startWayland(t, owndisplay.Sway, "mousepad")
	ctx := context.Background()
	w := launch(t, d, "mousepad")
	eff, err := d.Type(ctx, Target{}, w.ID, "first line", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(eff.Did, "typed 10 characters") {
		t.Errorf("the text was not typed with the keyboard: %s", eff.Did)
	}
	if eff, err = d.Type(ctx, Target{}, w.ID, "\nsecond line", false); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(eff.Did, "typed 12 characters") {
		t.Errorf("text with a line break was not typed with the keyboard: %s", eff.Did)
	}
	if got := editorText(t, d, w); got != "first line\nsecond line" {
		t.Fatalf("the editor holds %q after type_text", got)
	}
	eff, err = d.Keys(ctx, Target{}, w.ID, []string{"ctrl+End", "!", "é"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := editorText(t, d, w); got != "first line\nsecond line!é" {
		t.Fatalf("the editor holds %q after ctrl+End ! é (%s)", got, eff.Did)
	}
	// shift with a key of one level (Home) selects, as on a keyboard.
	if _, err := d.Keys(ctx, Target{}, w.ID, []string{"shift+Home", "Delete"}, false); err != nil {
		t.Fatal(err)
	}
	if got := editorText(t, d, w); got != "first line\n" {
		t.Fatalf("the editor holds %q after shift+Home Delete", got)
	}
	if _, err := d.Keys(ctx, Target{}, w.ID, []string{"ctrl+a", "Delete"}, false); err != nil {
		t.Fatal(err)
	}
	if got := editorText(t, d, w); got != "" {
		t.Fatalf("the editor holds %q after ctrl+a Delete", got)
	}
}

// Under weston (no screen capture, no virtual input, no window IPC) the
// tree and the AT-SPI actions work, and what cannot be done says why.
func TestWestonCalculatorThroughATSPI(t *testing.T) {
	_, d := startWayland(t, owndisplay.Weston, "galculator")
	ctx := context.Background()
	w := launch(t, d, "galculator")
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Controls) < 20 {
		t.Fatalf("kept %d controls; want a whole keypad:\n%s", len(obs.Controls), obs.Text())
	}
	text, _, err := obs.Page(Page{}) // what the model reads
	if err != nil {
		t.Fatal(err)
	}
	if obs.PNG != nil || !strings.Contains(text, "No screenshot: take a screenshot: the Wayland compositor at") {
		t.Fatalf("weston gave a screenshot, or the observation does not say why not:\n%s", text)
	}
	for _, key := range []string{"6", "*", "7", "="} {
		if _, err := d.Click(ctx, Target{ID: mustFind(t, obs, "toggle button", key).ID}, "", 1); err != nil {
			t.Fatalf("click %q: %v", key, err)
		}
	}
	waitDisplay(t, d, w, "42")
	if _, err := d.Keys(ctx, Target{}, w.ID, []string{"Escape"}, false); err == nil || !strings.Contains(err.Error(), "offers no virtual keyboard") {
		t.Fatalf("press_keys under weston: %v", err)
	}
}

// Under weston, which offers no virtual input, select and set_value work
// through AT-SPI alone (Selection on the tabs, Value on the slider); under
// sway the wheel scrolls a list through the virtual pointer.
func TestWaylandSelectSetValueScroll(t *testing.T) {
	python := "/usr/bin/python3"
	for _, kind := range []owndisplay.Kind{owndisplay.Weston, owndisplay.Sway} {
		t.Run(string(kind), func(t *testing.T) {
			_, d := startWayland(t, kind, python)
			w, obs := widgets(t, d)
			bar := selectSetValue(t, d, obs)
			if kind != owndisplay.Sway {
				return
			}
			painted(t, d, w) // placed where sway shows it, so the wheel turns over the list
			scrollMoves(t, d, bar)
		})
	}
}
