package desktop

import (
	"context"
	"strings"
	"testing"

	owndisplay "github.com/saucerhq/saucer/internal/display"
)

// TestLineBreakMeansReturn types "12+30\n" into a console that takes
// Return as "run this line" and "7*6\n" into a one-line entry
// (testdata/enter.py): a line break presses Return on X11 and under sway
// alike (under sway the text goes in through AT-SPI, and it inserted a
// literal line break the console never saw as Return). weston offers no
// keyboard: the entry is activated, as Return would, and the console
// gets the line break, which the result says.
func TestLineBreakMeansReturn(t *testing.T) {
	for _, kind := range []owndisplay.Kind{owndisplay.Xvfb, owndisplay.Sway, owndisplay.Weston} {
		t.Run(string(kind), func(t *testing.T) {
			d := desktopOf(t, kind)
			ctx := context.Background()
			w := launch(t, d, "/usr/bin/python3", "testdata/enter.py")
			obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			console, entry := mustFind(t, obs, "text", "Console"), mustFind(t, obs, "text", "Entry")
			eff, err := d.Type(ctx, Target{ID: console.ID}, "", "12+30\n", false)
			if err != nil {
				t.Fatal(err)
			}
			if kind == owndisplay.Weston {
				if !strings.Contains(eff.Did, "inserted a line break (this compositor offers no keyboard") {
					t.Fatalf("weston: the result does not say the line break was inserted, not pressed: %s", eff.Did)
				}
			} else {
				waitTitle(t, d, w, "console 12+30 (1)")
			}
			if _, err := d.Type(ctx, Target{ID: entry.ID}, "", "7*6\n", false); err != nil {
				t.Fatal(err)
			}
			waitTitle(t, d, w, "entry 7*6 (1)")
		})
	}
}
