package desktop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/desktoptest"
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
// read again; "changed" (Calc only) observes right after the Bold button
// was pressed, its state changed. It reports p50 and p95 per observation, the share spent in
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
	for _, a := range apps {
		// Each application is launched only when the -bench pattern
		// selects one of its cases.
		b.Run(a.name, func(b *testing.B) { observeApp(b, a.name, a.cmd()) })
	}
}

// observeApp runs BenchmarkObserve's cases for one application.
func observeApp(b *testing.B, name string, cmd []string) {
	ctx := context.Background()
	_, d, w := sharedApp(b, name, cmd...)
	if name == "chromium" {
		w = pageWindow(b, d, w)
	}
	modes := []string{"walk", "cold", "warm"}
	var bold Control
	if name == "libreoffice-calc" {
		modes = append(modes, "changed")
		bold = boldOf(b, d, w)
	}
	// The accessibility bus's daemon: its processor time and the
	// application's are the other sides of the calls.
	busPID, err := d.a.pid(ctx, "org.freedesktop.DBus")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			if mode == "walk" {
				d.opts.Fetch = "walk"
			}
			d.noReuse = mode == "cold"
			defer func() { d.opts.Fetch, d.noReuse = "cache", false }()
			var totals, dbus []time.Duration
			var parts Timing
			var obs *Observation
			var calls, trips, n, reused uint64
			app0, bus0 := sampleProc(w.PID).cpu, sampleProc(busPID).cpu
			for b.Loop() {
				if mode == "changed" {
					toggleBold(b, d, bold)
				}
				var err error
				n++
				calls0, trips0 := d.a.calls.Load(), d.a.trips.Load()
				obs, err = d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true})
				if err != nil {
					b.Fatal(err)
				}
				calls, trips = calls+d.a.calls.Load()-calls0, trips+d.a.trips.Load()-trips0
				if obs.Reused {
					reused++
				}
				totals, dbus = append(totals, obs.Timing.Total()), append(dbus, obs.Timing.DBus())
				t := obs.Timing
				parts = Timing{Tree: parts.Tree + t.Tree, Details: parts.Details + t.Details, Capture: parts.Capture + t.Capture, Annotate: parts.Annotate + t.Annotate, Encode: parts.Encode + t.Encode}
			}
			appCPU, busCPU := sampleProc(w.PID).cpu-app0, sampleProc(busPID).cpu-bus0
			gtk4 := d.apps[w.ref.Bus].gtk4 // read afresh every time
			// A warm run reuses its tree, but reads it again once it is
			// maxTreeAge old (40 observations on a loaded machine take
			// longer): at least one observation reused it.
			if (mode == "walk") != (obs.Fetch == "walk") || mode == "warm" && !gtk4 && reused == 0 || mode == "cold" && obs.Reused {
				b.Fatalf("%s: fetched by %s, reused %v", mode, obs.Fetch, obs.Reused)
			}
			var sumT, sumD time.Duration
			for i := range totals {
				sumT, sumD = sumT+totals[i], sumD+dbus[i]
			}
			b.ReportMetric(ms(percentile(totals, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(totals, 95)), "p95-ms")
			b.ReportMetric(100*float64(sumD)/float64(sumT), "dbus-%")
			// The parts' means: tree, details, screenshot (raise and
			// capture), marks and PNG.
			b.ReportMetric(ms(parts.Tree)/float64(n), "tree-ms")
			b.ReportMetric(ms(parts.Details)/float64(n), "details-ms")
			b.ReportMetric(ms(parts.Capture)/float64(n), "shot-ms")
			b.ReportMetric(ms(parts.Annotate+parts.Encode)/float64(n), "marks+png-ms")
			b.ReportMetric(float64(len(obs.Controls)), "controls")
			b.ReportMetric(float64(obs.Nodes), "nodes")
			// Calls and round trips per observation (listing the
			// windows included): counts that load does not change.
			b.ReportMetric(float64(calls)/float64(n), "calls")
			b.ReportMetric(float64(trips)/float64(n), "trips")
			b.ReportMetric(100*float64(reused)/float64(n), "reused-%")
			// Processor time per observation of the application and the
			// bus daemon (the window's repaints after a change included).
			b.ReportMetric(float64(appCPU)/1e6/float64(n), "app-cpu-ms")
			b.ReportMetric(float64(busCPU)/1e6/float64(n), "bus-cpu-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// boldOf is the Bold button of LibreOffice Calc's window w.
func boldOf(b *testing.B, d *Desktop, w Window) Control {
	obs, err := d.Observe(context.Background(), w.ID, ObserveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range obs.Controls {
		if c.Name == "Bold" {
			return c
		}
	}
	b.Fatalf("no Bold button in:\n%s", obs.Text())
	return Control{}
}

// toggleBold presses the Bold button of the toolbar through its action,
// as a click would: its state (checked) changes, an event from an object
// the tree holds. It waits for the application's events.
func toggleBold(b *testing.B, d *Desktop, bold Control) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.a.version(bold.ref.Bus)
	if err := d.a.do(context.Background(), bold.ref, ifAction+".DoAction", nil, int32(0)); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); d.a.version(bold.ref.Bus) == v; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("pressing Bold sent no event in 5s")
		}
	}
}
