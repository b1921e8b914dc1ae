package desktop

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestBoxesKeptUntilTheyMove: a GTK 3 window's boxes are reused while its
// application sends no event at all (an observation of the settled
// window reads none), and read again once it sends one: a control moved
// within its window (bounds-changed) and a scrolled list (its scroll
// bar's value) show where they are now, as a fresh read does.
func TestBoxesKeptUntilTheyMove(t *testing.T) {
	_, d := sharedDesktop(t)
	w := launch(t, d, "/usr/bin/python3", "testdata/moving.py")
	if w.PID <= 0 {
		t.Fatalf("no process id for %+v", w)
	}
	ctx := context.Background()
	observe := func(fresh bool) (*Observation, uint64) {
		t.Helper()
		d.mu.Lock()
		d.noReuse = fresh
		d.mu.Unlock()
		defer func() { d.mu.Lock(); d.noReuse = false; d.mu.Unlock() }()
		calls := d.a.calls.Load()
		obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obs, d.a.calls.Load() - calls
	}
	// Settled: the tree and its boxes are reused: no box is read, where
	// a fresh read reads one per control.
	_, freshCalls := observe(true)
	for try := 0; ; try++ {
		obs, calls := observe(false)
		if obs.Reused && calls+uint64(len(obs.Controls)) <= freshCalls {
			break
		}
		if try == 20 {
			t.Fatalf("the boxes were never reused in 20 observations (%d calls for %d controls, %d afresh)", calls, len(obs.Controls), freshCalls)
		}
	}
	moves := []struct {
		name    string
		sig     syscall.Signal
		control string
		dx, dy  int
	}{
		{"moved in its window", syscall.SIGUSR1, "Target", 100, 0},
		{"scrolled", syscall.SIGUSR2, "Row 5", 0, -60},
	}
	for _, m := range moves {
		before, _ := observe(false)
		was := mustFind(t, before, "push button", m.control)
		all := d.a.allEvents(w.ref.Bus)
		if err := syscall.Kill(w.PID, m.sig); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(10 * time.Second)
		for {
			wake := d.a.changes()
			if d.a.allEvents(w.ref.Bus) != all {
				break
			}
			select {
			case <-wake:
			case <-timeout:
				t.Fatalf("%s: GTK 3 sent no event in 10 s", m.name)
			}
		}
		obs, _ := observe(false)
		now := mustFind(t, obs, "push button", m.control)
		if now.Bounds != was.Bounds.add(m.dx, m.dy) {
			t.Errorf("%s: %s was at %+v, is shown at %+v, want %+v", m.name, m.control, was.Bounds, now.Bounds, was.Bounds.add(m.dx, m.dy))
		}
		fresh, _ := observe(true)
		if len(fresh.Controls) != len(obs.Controls) {
			t.Fatalf("%s: %d controls, %d read afresh:\n%s\n%s", m.name, len(obs.Controls), len(fresh.Controls), obs.Text(), fresh.Text())
		}
		for _, c := range fresh.Controls {
			if got, ok := obs.Control(c.ID); !ok || got.Bounds != c.Bounds {
				t.Errorf("%s: control %d %q shown at %+v, read afresh at %+v", m.name, c.ID, c.Name, got.Bounds, c.Bounds)
			}
		}
	}
}
