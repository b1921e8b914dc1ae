package desktop

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestSlowAppIsWaitedOn: an application that answers nothing and uses no
// processor for a while (its main loop waits 1.5 s, as one waiting on a
// slow peer does, or on a loaded machine) is waited on, not called not
// responding after a fraction of a second; one that stays so (a
// deadlock) is not responding, and the other applications still work.
func TestSlowAppIsWaitedOn(t *testing.T) {
	_, d := start(t, "/usr/bin/python3", "galculator")
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "marker")
	if err := syscall.Mkfifo(marker, 0o600); err != nil {
		t.Fatal(err)
	}
	pipe, err := os.OpenFile(marker, os.O_RDWR, 0) // read-write: opening waits for no writer
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pipe.Close() })
	w := launch(t, d, "/usr/bin/python3", "testdata/sleepy.py", marker)
	calc := launch(t, d, "galculator")
	if _, err := d.Observe(ctx, w.ID, ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.PID <= 0 {
		t.Fatalf("the window has no process id (%d): refusing to signal it", w.PID)
	}
	// The application says "asleep" down a pipe before each sleep.
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	asleep := func() {
		t.Helper()
		select {
		case <-lines:
		case <-time.After(30 * time.Second):
			t.Fatal("the application did not go to sleep in 30 s")
		}
	}
	if err := syscall.Kill(w.PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	asleep()
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatalf("observing an application asleep for 1.5 s: %v", err)
	}
	mustFind(t, obs, "push button", "Hello")

	if err := syscall.Kill(w.PID, syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(w.PID, syscall.SIGKILL) })
	asleep()
	if _, err := d.Observe(ctx, w.ID, ObserveOptions{}); err == nil || !strings.Contains(err.Error(), "is not responding") {
		t.Fatalf("observing an application asleep for minutes: %v", err)
	}
	if _, err := d.Observe(ctx, calc.ID, ObserveOptions{}); err != nil {
		t.Fatalf("observing galculator beside a hung application: %v", err)
	}
}

// TestBusyAppIsWaitedOn: an application that works for 15 s without
// answering (its main loop uses the processor) is busy, not frozen: an
// observation waits for it and succeeds, past the 10 s that once
// bounded any wait.
func TestBusyAppIsWaitedOn(t *testing.T) {
	_, d := start(t, "/usr/bin/python3")
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "marker")
	if err := syscall.Mkfifo(marker, 0o600); err != nil {
		t.Fatal(err)
	}
	pipe, err := os.OpenFile(marker, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pipe.Close() })
	w := launch(t, d, "/usr/bin/python3", "testdata/sleepy.py", marker)
	if _, err := d.Observe(ctx, w.ID, ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.PID <= 0 {
		t.Fatalf("the window has no process id (%d): refusing to signal it", w.PID)
	}
	if err := syscall.Kill(w.PID, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	line := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(pipe).ReadString('\n')
		line <- err
	}()
	select {
	case err := <-line:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the application did not start working in 30 s")
	}
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatalf("observing an application at work for 15 s: %v", err)
	}
	mustFind(t, obs, "push button", "Hello")
}

// TestTreeReusedForALimitedTime: a window's tree is reused while its
// application sends no event that changes it, but not past maxTreeAge,
// against a toolkit that sends none.
func TestTreeReusedForALimitedTime(t *testing.T) {
	_, d := start(t, "galculator")
	ctx := context.Background()
	w := launch(t, d, "galculator")
	reused := func() bool {
		t.Helper()
		obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mustFind(t, obs, "toggle button", "7")
		return obs.Reused
	}
	reused()
	// An application still settling sends events for a while: the tree
	// is reused once two observations meet no event between them.
	for try := 0; !reused(); try++ {
		if try == 20 {
			t.Fatal("galculator's tree was never reused in 20 observations")
		}
	}
	d.mu.Lock()
	for r, rt := range d.trees {
		rt.at = rt.at.Add(-maxTreeAge)
		d.trees[r] = rt
	}
	d.mu.Unlock()
	if reused() {
		t.Fatalf("a tree read %s ago was reused", maxTreeAge)
	}
}

// TestTreeKeptAcrossEventsOfItsOwnObjects: an event from a control the
// tree read (a check box toggled) has that control read again in place,
// and the tree is reused, its new state shown; a change of what is shown
// (another notebook page) has the tree read again.
func TestTreeKeptAcrossEventsOfItsOwnObjects(t *testing.T) {
	_, d, w := sharedApp(t, "widgets", "/usr/bin/python3", "testdata/widgets.py")
	ctx := context.Background()
	observe := func() *Observation {
		t.Helper()
		obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}
	// Settled: two observations meet no event between them.
	for try := 0; !observe().Reused; try++ {
		if try == 20 {
			t.Fatal("the window's tree was never reused in 20 observations")
		}
	}
	box := mustFind(t, observe(), "check box", "Remember me")
	checked := slices.Contains(box.States, "checked")
	d.mu.Lock()
	err := d.a.do(ctx, box.ref, ifAction+".DoAction", nil, int32(0))
	d.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	// Until its event arrives the tree is reused as it was; once it has,
	// the box is read again and the rest reused.
	for try := 0; ; try++ {
		obs := observe()
		now := mustFind(t, obs, "check box", "Remember me")
		if slices.Contains(now.States, "checked") != checked {
			if !obs.Reused {
				t.Fatalf("toggling a check box had the whole tree read again (%s)", obs.Fetch)
			}
			break
		}
		if try == 50 {
			t.Fatalf("the check box never showed its new state: %s", now.line())
		}
	}
	observe()
	d.mu.Lock()
	var tabs ref
	for _, n := range d.trees[w.ref].t.nodes {
		if roleName(n.role) == "page tab list" {
			tabs = n.ref
		}
	}
	selectPage := func(i int32) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.a.do(ctx, tabs, ifSelection+".SelectChild", nil, i)
	}
	d.mu.Unlock()
	// The window is shared: the first page comes back for the next test
	// (and for this one when the binary runs it again).
	t.Cleanup(func() {
		if err := selectPage(0); err != nil {
			t.Errorf("showing the shared notebook's first page again: %v", err)
		}
	})
	if _, ok := observe().Find("label", "second page"); ok {
		t.Fatal("the notebook's second page shows before it was selected: the shared window was left on it")
	}
	if err := selectPage(1); err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		obs := observe()
		if _, ok := obs.Find("label", "second page"); ok {
			if obs.Reused {
				t.Fatal("the notebook's other page was shown from a reused tree")
			}
			break
		}
		if try == 50 {
			t.Fatalf("the second page never showed:\n%s", obs.Text())
		}
	}
}
