package desktop

import (
	"context"
	"strings"
	"syscall"
	"testing"
)

// TestFrozenAppCostsOneApp stops an application (SIGSTOP) and checks that
// only it is affected: it is listed as not responding, its window and
// controls fail at once with that reason, the application launched after
// it is listed and driven as usual, and no call waits on the stopped one
// once it is known (it is probed, not asked). Once continued, it is back.
func TestFrozenAppCostsOneApp(t *testing.T) {
	_, d := start(t, "galculator", "mousepad")
	ctx := context.Background()
	calc := launch(t, d, "galculator")
	editor := launch(t, d, "mousepad")
	obs, err := d.Observe(ctx, calc.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seven := mustFind(t, obs, "toggle button", "7")
	if calc.PID <= 0 {
		t.Fatalf("galculator's window has no process id (%d): refusing to signal it", calc.PID)
	}
	if err := syscall.Kill(calc.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	continued := false
	t.Cleanup(func() {
		if !continued {
			syscall.Kill(calc.PID, syscall.SIGCONT)
		}
	})

	listing := func() map[string]Window {
		t.Helper()
		ws, err := d.Windows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]Window{}
		for _, w := range ws {
			m[w.ID] = w
		}
		return m
	}
	ws := listing()
	if w, ok := ws[calc.ID]; !ok || !w.NotResponding {
		t.Fatalf("the stopped galculator's window is %+v (listed: %v), want it listed as not responding", w, ok)
	}
	if w, ok := ws[editor.ID]; !ok || w.NotResponding {
		t.Fatalf("mousepad, launched after galculator, is %+v (listed: %v), want it listed and responding", w, ok)
	}
	app := d.apps[calc.ref.Bus]
	probe := app.probe
	if probe == nil {
		t.Fatal("the stopped application has no probe")
	}
	// Known to be frozen, it is not asked again: the same probe stands.
	for range 3 {
		ws = listing()
		if !ws[calc.ID].NotResponding || ws[editor.ID].NotResponding {
			t.Fatalf("listing: %+v", ws)
		}
		if app.probe != probe {
			t.Fatal("the stopped application was asked again (a new probe) instead of waiting for the first")
		}
	}
	if _, err := d.Observe(ctx, calc.ID, ObserveOptions{}); err == nil || !strings.Contains(err.Error(), "galculator") || !strings.Contains(err.Error(), "is not responding") {
		t.Fatalf("observing the stopped application's window: %v", err)
	}
	if _, err := d.Click(ctx, Target{ID: seven.ID}, "", 1); err == nil || !strings.Contains(err.Error(), "is not responding") {
		t.Fatalf("clicking a control of the stopped application: %v", err)
	}
	// The other application works as usual.
	eff, err := d.Type(ctx, Target{}, editor.ID, "still here", false)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Focused == nil || eff.Focused.Text != "still here" {
		t.Fatalf("typing into mousepad beside a stopped application: %+v", eff.Focused)
	}
	// Continued, it answers the probe and is back.
	if err := syscall.Kill(calc.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true
	<-probe.done
	if probe.err != nil {
		t.Fatalf("the probe failed: %v", probe.err)
	}
	if w := listing()[calc.ID]; w.NotResponding {
		t.Fatalf("galculator answered its probe but is still listed as not responding: %+v", w)
	}
	if _, err := d.Click(ctx, Target{ID: seven.ID}, "", 1); err != nil {
		t.Fatalf("clicking 7 once galculator is back: %v", err)
	}
}
