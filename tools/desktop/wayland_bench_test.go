package desktop

import (
	"context"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/desktoptest"
	owndisplay "github.com/saucerhq/saucer/internal/display"
)

// displayKinds are the display servers the benchmarks compare: Xvfb, the
// baseline, and a headless sway.
var displayKinds = []owndisplay.Kind{owndisplay.Xvfb, owndisplay.Sway}

// onDisplay starts a display of kind with galculator on it, and gives
// the Desktop over it and galculator's window once sway has placed it
// and it shows its pixels.
func onDisplay(b *testing.B, kind owndisplay.Kind) (*Desktop, Window) {
	b.Helper()
	desktoptest.RequireKind(b, kind, "galculator")
	s := desktoptest.StartKind(b, kind)
	d := New(Options{Display: s.Display, Wayland: s.Wayland, SwaySock: s.SwaySock, Bus: s.BusAddr, Env: s.Env})
	b.Cleanup(func() { d.Close() })
	eff, err := d.Launch(context.Background(), []string{"galculator"}, "")
	if err != nil {
		b.Fatal(err)
	}
	if len(eff.NewWindows) == 0 {
		b.Fatal("galculator showed no window")
	}
	return d, eff.NewWindows[0]
}

// BenchmarkCapture times one screenshot of galculator's window on the
// same size of screen through each display server: X11's GetImage (the
// baseline) and sway's wlr-screencopy, which copies only the window's
// region into shared memory.
//
//	go test -run '^$' -bench Capture -benchtime 50x ./tools/desktop/
func BenchmarkCapture(b *testing.B) {
	for _, kind := range displayKinds {
		b.Run(string(kind), func(b *testing.B) {
			d, w := onDisplay(b, kind)
			ws, err := d.Windows(context.Background()) // placed as it is now
			if err != nil {
				b.Fatal(err)
			}
			for _, x := range ws {
				if x.ID == w.ID {
					w = x
				}
			}
			for b.Loop() {
				if _, _, err := d.x.capture(w.Bounds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.Bounds.W*w.Bounds.H), "pixels")
		})
	}
}

// BenchmarkObserveDisplays times a whole observation of galculator (tree,
// details, screenshot, marks, PNG) under Xvfb (the baseline) and a
// headless sway in the same run, with p50 and p95, and the p50 of its
// parts: D-Bus (tree and details), the screenshot, and marks with PNG
// encoding, which grow with the window's pixels (sway tiles galculator
// across the screen; on Xvfb it keeps its own size).
//
//	go test -run '^$' -bench ObserveDisplays -benchtime 40x ./tools/desktop/
func BenchmarkObserveDisplays(b *testing.B) {
	for _, kind := range displayKinds {
		b.Run(string(kind), func(b *testing.B) {
			d, w := onDisplay(b, kind)
			ctx := context.Background()
			var totals, dbus, capture, draw []time.Duration
			var obs *Observation
			for b.Loop() {
				var err error
				obs, err = d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true})
				if err != nil {
					b.Fatal(err)
				}
				t := obs.Timing
				totals, dbus = append(totals, t.Total()), append(dbus, t.DBus())
				capture, draw = append(capture, t.Capture), append(draw, t.Annotate+t.Encode)
			}
			if len(obs.PNG) == 0 {
				b.Fatal("the observation has no screenshot")
			}
			b.ReportMetric(ms(percentile(totals, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(totals, 95)), "p95-ms")
			b.ReportMetric(ms(percentile(dbus, 50)), "dbus-ms")
			b.ReportMetric(ms(percentile(capture, 50)), "capture-ms")
			b.ReportMetric(ms(percentile(draw, 50)), "marks+png-ms")
			b.ReportMetric(float64(obs.Window.Bounds.W*obs.Window.Bounds.H), "pixels")
			b.ReportMetric(float64(len(obs.Controls)), "controls")
		})
	}
}

// BenchmarkTypeSway times typing 100 characters into mousepad under sway
// two ways: through the virtual keyboard, as type_text now types wherever
// the compositor offers one (keys mean what they mean on X11), and the
// baseline, an insert at the caret through AT-SPI's EditableText, as
// type_text did under sway before (and still does under weston).
//
//	go test -run '^$' -bench TypeSway -benchtime 20x ./tools/desktop/
func BenchmarkTypeSway(b *testing.B) {
	desktoptest.RequireKind(b, owndisplay.Sway, "mousepad")
	s := desktoptest.StartKind(b, owndisplay.Sway)
	d := New(Options{Wayland: s.Wayland, SwaySock: s.SwaySock, Bus: s.BusAddr, Env: s.Env})
	b.Cleanup(func() { d.Close() })
	ctx := context.Background()
	eff, err := d.Launch(ctx, []string{"mousepad"}, "")
	if err != nil {
		b.Fatal(err)
	}
	w := eff.NewWindows[0]
	text := editable(b, d, w)
	line := "The quick brown fox jumps over the lazy dog, 0123456789; THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!"[:100]
	// The whole type_text call, with the effect it reports (the window
	// read before and after), for scale.
	b.Run("type_text", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Type(ctx, Target{ID: text.ID}, "", line, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("atspi-insert", func(b *testing.B) {
		text := editable(b, d, w)
		for b.Loop() {
			if err := d.insertAtCaret(ctx, text, line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("keyboard", func(b *testing.B) {
		for b.Loop() {
			if err := d.x.typeText(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
