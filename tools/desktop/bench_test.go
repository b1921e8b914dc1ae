package desktop

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/saucerhq/saucer/tools/desktop/desktoptest"
)

// BenchmarkObserve times one observation of a window (tree, details,
// screenshot, marks, PNG) for the test applications and a synthetic
// window of 500 controls, fetching the tree in bulk (Cache.GetItems) and
// by the per-node walk, the baseline. It reports p50 and p95 per
// observation, the share spent in D-Bus calls, and the controls kept.
//
//	go test -run '^$' -bench Observe -benchtime 50x ./tools/desktop/
func BenchmarkObserve(b *testing.B) {
	python := "/usr/bin/python3"
	desktoptest.Require(b, "galculator", "mousepad", python)
	if err := exec.Command(python, "-c", "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk").Run(); err != nil {
		desktoptest.Require(b, "python3-gi with GTK 3 (Debian: python3-gi gir1.2-gtk-3.0)")
	}
	s := desktoptest.Start(b)
	apps := []struct {
		name string
		cmd  []string
	}{
		{"galculator", []string{"galculator"}},
		{"mousepad", []string{"mousepad"}},
		{"synthetic500", []string{python, "testdata/many_controls.py", "500"}},
	}
	d := New(Options{Display: s.Display, Bus: s.BusAddr, Env: s.Env})
	b.Cleanup(func() { d.Close() })
	ctx := context.Background()
	wins := map[string]Window{}
	for _, a := range apps {
		eff, err := d.Launch(ctx, a.cmd, "")
		if err != nil {
			b.Fatal(err)
		}
		wins[a.name] = eff.NewWindows[0]
	}
	for _, a := range apps {
		for _, fetch := range []string{"walk", "cache"} {
			b.Run(fmt.Sprintf("%s/%s", a.name, fetch), func(b *testing.B) {
				d.opts.Fetch = fetch
				var totals, dbus []time.Duration
				var obs *Observation
				for b.Loop() {
					var err error
					obs, err = d.Observe(ctx, wins[a.name].ID, ObserveOptions{Screenshot: true, Marks: true})
					if err != nil {
						b.Fatal(err)
					}
					totals, dbus = append(totals, obs.Timing.Total()), append(dbus, obs.Timing.DBus())
				}
				if obs.Fetch != fetch {
					b.Fatalf("asked for %s, fetched by %s", fetch, obs.Fetch)
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
