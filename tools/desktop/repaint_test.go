package desktop

import (
	"context"
	"image/color"
	"os"
	"os/exec"
	"testing"
)

// TestScreenshotAfterRaise observes two windows of one colour each, one
// over the other, in turn: each screenshot must show its own window's
// colour, never the pixels of the window that covered it. The windows
// take 300 ms to repaint (as a busy application does), so a screenshot
// taken right after raising would show the other window: observe waits
// for the raised window's repaint (X DAMAGE), not a fixed time.
func TestScreenshotAfterRaise(t *testing.T) {
	python := "/usr/bin/python3"
	_, d := start(t, python)
	requireGICairo(t, python)
	ctx := context.Background()
	red := launch(t, d, python, "testdata/colour.py", "Red", "220", "20", "20", "300")
	blue := launch(t, d, python, "testdata/colour.py", "Blue", "20", "20", "220", "300")
	for round := range 2 {
		for _, c := range []struct {
			w    Window
			want color.RGBA
		}{{red, color.RGBA{220, 20, 20, 255}}, {blue, color.RGBA{20, 20, 220, 255}}} {
			obs, err := d.Observe(ctx, c.w.ID, ObserveOptions{Screenshot: true})
			if err != nil {
				t.Fatal(err)
			}
			if obs.Stale != "" {
				t.Fatalf("round %d, %s: %s", round, c.w.Title, obs.Stale)
			}
			img, err := pngImage(obs.PNG)
			if err != nil {
				t.Fatal(err)
			}
			b := img.Bounds()
			own, total := 0, 0
			for y := b.Min.Y; y < b.Max.Y; y += 4 {
				for x := b.Min.X; x < b.Max.X; x += 4 {
					total++
					if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == c.want {
						own++
					}
				}
			}
			if own*100 < total*99 {
				t.Fatalf("round %d: the screenshot of %s shows its colour in %d of %d pixels sampled (the centre is %v): it shows another window's pixels", round, c.w.Title, own, total, img.At(b.Dx()/2, b.Dy()/2))
			}
		}
	}
}

// requireGICairo fails under CI, and skips elsewhere, when python's GTK
// cannot hand a draw handler its cairo context (Debian's python3-gi-cairo):
// without it the test's windows raise a TypeError in every repaint and
// show only GTK's background, never their colour.
func requireGICairo(t *testing.T, python string) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import gi; gi.require_foreign('cairo')").CombinedOutput()
	if err == nil {
		return
	}
	msg := "the repaint test's windows need python3-gi-cairo (see .ci/run): " + python + " says " + string(out)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
