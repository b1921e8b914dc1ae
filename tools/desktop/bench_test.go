package desktop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/saucerhq/saucer/tools/desktop/desktoptest"
)

// BenchmarkObserve times one observation of a window (tree, details,
// screenshot, marks, PNG), for GTK 4's gnome-calculator, LibreOffice Calc
// with its sheet open, a Chromium page, a GTK 3 window of 500 controls,
// and the first test applications (galculator, mousepad). Each is read
// three ways: "walk", the baseline, walks the whole tree every time;
// "cold" reads the toolkit's cache completed by walking every time (an
// observation right after the window changed); "warm" is the default
// between changes: the tree read before is reused while the application
// sends no event that changes it, and only the controls' details are
// read again. It reports p50 and p95 per observation, the share spent in
// D-Bus calls, the controls listed and the objects read. The
// applications run on the test binary's shared desktop.
//
//	go test -run '^$' -bench Observe -benchtime 40x ./tools/desktop/
func BenchmarkObserve(b *testing.B) {
	python := "/usr/bin/python3"
	desktoptest.Require(b, "galculator", "mousepad", "gnome-calculator", "localc", "chromium", python)
	apps := []struct {
		name string
		cmd  func() []string
	}{
		{"gnome-calculator", func() []string { return []string{"gnome-calculator"} }},
		{"libreoffice-calc", func() []string { return []string{"localc", "--norestore"} }},
		{"chromium", func() []string { return chromiumCmd(b) }},
		{"synthetic500", func() []string { return []string{python, "testdata/many_controls.py", "500"} }},
		{"galculator", func() []string { return []string{"galculator"} }},
		{"mousepad", func() []string { return []string{"mousepad"} }},
	}
	ctx := context.Background()
	for _, a := range apps {
		_, d, w := sharedApp(b, a.name, a.cmd()...)
		if a.name == "chromium" {
			w = pageWindow(b, d, w)
		}
		for _, mode := range []string{"walk", "cold", "warm"} {
			b.Run(fmt.Sprintf("%s/%s", a.name, mode), func(b *testing.B) {
				if mode == "walk" {
					d.opts.Fetch = "walk"
				}
				d.noReuse = mode == "cold"
				defer func() { d.opts.Fetch, d.noReuse = "cache", false }()
				var totals, dbus []time.Duration
				var obs *Observation
				for b.Loop() {
					var err error
					obs, err = d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true})
					if err != nil {
						b.Fatal(err)
					}
					totals, dbus = append(totals, obs.Timing.Total()), append(dbus, obs.Timing.DBus())
				}
				gtk4 := d.apps[w.ref.Bus].gtk4 // read afresh every time
				if (mode == "walk") != (obs.Fetch == "walk") || (mode == "warm" && !gtk4) != obs.Reused {
					b.Fatalf("%s: fetched by %s, reused %v", mode, obs.Fetch, obs.Reused)
				}
				var sumT, sumD time.Duration
				for i := range totals {
					sumT, sumD = sumT+totals[i], sumD+dbus[i]
				}
				b.ReportMetric(ms(percentile(totals, 50)), "p50-ms")
				b.ReportMetric(ms(percentile(totals, 95)), "p95-ms")
				b.ReportMetric(100*float64(sumD)/float64(sumT), "dbus-%")
				b.ReportMetric(float64(len(obs.Controls)), "controls")
				b.ReportMetric(float64(obs.Nodes), "nodes")
			})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
