package desktop

import (
	"context"
	"errors"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/desktoptest"
)

// start gives a private desktop and a Desktop over it, closed at the end.
func start(t *testing.T, apps ...string) (*desktoptest.Session, *Desktop) {
	t.Helper()
	desktoptest.Require(t, apps...)
	s := desktoptest.Start(t)
	d := New(Options{Display: s.Display, Bus: s.BusAddr, Env: s.Env, LaunchTimeout: 20 * time.Second})
	t.Cleanup(func() { d.Close() })
	return s, d
}

func launch(t *testing.T, d *Desktop, cmd ...string) Window {
	t.Helper()
	eff, err := d.Launch(context.Background(), cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.NewWindows) == 0 {
		t.Fatalf("launch %v: no new window in %+v", cmd, eff)
	}
	return eff.NewWindows[0]
}

func mustFind(t *testing.T, obs *Observation, role, name string) Control {
	t.Helper()
	c, ok := obs.Find(role, name)
	if !ok {
		t.Fatalf("no %s %q in the observation:\n%s", role, name, obs.Text())
	}
	return c
}

// widgets launches testdata/widgets.py (a notebook of two tabs, a check
// box, a slider and a long list) and observes its window.
func widgets(t *testing.T, d *Desktop) (Window, *Observation) {
	t.Helper()
	w := launch(t, d, "/usr/bin/python3", "testdata/widgets.py")
	obs, err := d.Observe(context.Background(), w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, obs
}

// markedScreenshot decodes the screenshot of an observation taken with
// marks, and checks it is the window's size with the first control's
// mark colour at the corner of its box.
func markedScreenshot(t *testing.T, obs *Observation) image.Image {
	t.Helper()
	img, err := pngImage(obs.PNG)
	if err != nil {
		t.Fatal(err)
	}
	w := obs.Window
	if b := img.Bounds(); b.Dx() != w.Bounds.W || b.Dy() != w.Bounds.H {
		t.Fatalf("the screenshot is %v, the window %+v", b, w.Bounds)
	}
	c := obs.Controls[0]
	got := color.RGBAModel.Convert(img.At(c.Bounds.X-w.Bounds.X, c.Bounds.Y-w.Bounds.Y)).(color.RGBA)
	if got != markColours[0] {
		t.Errorf("the corner of control %d is %v, not its mark colour %v", c.ID, got, markColours[0])
	}
	return img
}

// nameField is a file dialog's name field: its one editable text.
func nameField(t *testing.T, dlg *Observation) Control {
	t.Helper()
	for _, c := range dlg.Controls {
		if c.Role == "text" && slices.Contains(c.States, "editable") {
			return c
		}
	}
	t.Fatalf("no name field in the dialog:\n%s", dlg.Text())
	return Control{}
}

// display is galculator's result field: the one editable-looking text.
func calcDisplay(t *testing.T, obs *Observation) Control {
	t.Helper()
	for _, c := range obs.Controls {
		if c.Role == "text" {
			return c
		}
	}
	t.Fatalf("no display in:\n%s", obs.Text())
	return Control{}
}

func TestCalculatorComputes(t *testing.T) {
	_, d := start(t, "galculator")
	ctx := context.Background()
	w := launch(t, d, "galculator")
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Nodes < 30 || len(obs.Controls) < 20 {
		t.Fatalf("read %d objects and kept %d controls; want a whole keypad:\n%s", obs.Nodes, len(obs.Controls), obs.Text())
	}
	var last *Effect
	for _, key := range []string{"1", "2", "*", "7", "="} {
		c := mustFind(t, obs, "toggle button", key)
		if last, err = d.Click(ctx, Target{ID: c.ID}, "", 1); err != nil {
			t.Fatalf("click %q: %v", key, err)
		}
		if !strings.Contains(last.Did, "action") {
			t.Errorf("a button with a click action was not pressed through it: %s", last.Did)
		}
	}
	eq := mustFind(t, obs, "toggle button", "=")
	if p := last.Point; p == nil || p.X != eq.Bounds.X+eq.Bounds.W/2-w.Bounds.X || p.Y != eq.Bounds.Y+eq.Bounds.H/2-w.Bounds.Y {
		t.Errorf("the click on = landed at %+v in the screenshot, want the centre of %+v", last.Point, eq.Bounds)
	}
	// The effect of "=" shows the display changing to the product.
	found := false
	for _, ch := range last.Changed {
		if ch.Field == "text" && strings.TrimSpace(ch.After) == "84" {
			found = true
		}
	}
	if !found {
		t.Errorf("the effect of = does not show the display turning 84: %+v", last.Changed)
	}
	obs, err = d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(calcDisplay(t, obs).Text); got != "84" {
		t.Fatalf("display reads %q after 12*7=, want 84", got)
	}
}

func TestObserveAnnotatesScreenshot(t *testing.T) {
	_, d := start(t, "galculator")
	w := launch(t, d, "galculator")
	obs, err := d.Observe(context.Background(), w.ID, ObserveOptions{Screenshot: true, Marks: true})
	if err != nil {
		t.Fatal(err)
	}
	img := markedScreenshot(t, obs)
	plain, err := d.Observe(context.Background(), w.ID, ObserveOptions{Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	pimg, _ := pngImage(plain.PNG)
	diff := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if img.At(x, y) != pimg.At(x, y) {
				diff++
			}
		}
	}
	if diff < len(obs.Controls)*20 {
		t.Fatalf("the marked screenshot differs from the plain one in %d pixels; %d marks should change far more", diff, len(obs.Controls))
	}
}

func TestEditorSavesFile(t *testing.T) {
	_, d := start(t, "mousepad")
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "notes.txt")
	w := launch(t, d, "mousepad")
	eff, err := d.Type(ctx, Target{}, w.ID, "first line\nsecond line", false)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Focused == nil || eff.Focused.Text != "first line\nsecond line" {
		t.Fatalf("after typing, the focused control is %+v; want the text area holding both lines", eff.Focused)
	}
	eff, err = d.Keys(ctx, Target{}, w.ID, []string{"ctrl+s"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.NewWindows) != 1 || eff.NewWindows[0].Title != "Save As" {
		t.Fatalf("ctrl+s opened %+v, want the Save As dialog", eff.NewWindows)
	}
	dlg, err := d.Observe(ctx, eff.NewWindows[0].ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := nameField(t, dlg)
	if _, err := d.SetValue(ctx, Target{ID: name.ID}, file); err != nil {
		t.Fatal(err)
	}
	save := mustFind(t, dlg, "push button", "Save")
	eff, err = d.Click(ctx, Target{ID: save.ID}, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.ClosedWindows) != 1 {
		t.Errorf("saving closed %+v, want the dialog", eff.ClosedWindows)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "first line\nsecond line" && string(got) != "first line\nsecond line\n" {
		t.Fatalf("the saved file holds %q", got)
	}
}

func slicesContains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestStaleControlAndClosedWindow(t *testing.T) {
	_, d := start(t, "galculator", "mousepad")
	ctx := context.Background()
	w := launch(t, d, "galculator")
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seven := mustFind(t, obs, "toggle button", "7")
	eff, err := d.CloseWindow(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(eff.ClosedWindows) != 1 || eff.ClosedWindows[0].ID != w.ID {
		t.Fatalf("close reported %+v", eff)
	}
	_, err = d.Click(ctx, Target{ID: seven.ID}, "", 1)
	if err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("clicking a control of a closed window: %v", err)
	}
	if _, err := d.Observe(ctx, w.ID, ObserveOptions{}); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("observing a closed window: %v", err)
	}
	if _, err := d.Click(ctx, Target{ID: 99999}, "", 1); err == nil || !strings.Contains(err.Error(), "has been observed") {
		t.Fatalf("an id never handed out: %v", err)
	}
	// An application killed mid-task: its window and controls are gone,
	// quickly and with a reason.
	ed := launch(t, d, "mousepad")
	eobs, err := d.Observe(ctx, ed.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ed.PID <= 0 { // a signal to 0 would kill this test's process group
		t.Fatalf("mousepad's window has no pid: %+v", ed)
	}
	if err := syscall.Kill(ed.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Once the desktop has seen its window go (the bus drops a dead
	// application's name), its controls fail with a reason.
	for gone := false; !gone; {
		ws, err := d.Windows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gone = !slices.ContainsFunc(ws, func(w Window) bool { return w.ID == ed.ID })
		time.Sleep(10 * time.Millisecond)
	}
	_, err = d.Click(ctx, Target{ID: eobs.Controls[0].ID}, "", 1)
	if err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("a control of a killed application: %v", err)
	}
	if _, err := d.Observe(ctx, ed.ID, ObserveOptions{}); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("observing a killed application's window: %v", err)
	}
}

func TestLaunchFailures(t *testing.T) {
	_, d := start(t)
	d.opts.LaunchTimeout = time.Second
	ctx := context.Background()
	_, err := d.Launch(ctx, []string{"sleep", "30"}, "")
	if err == nil || !strings.Contains(err.Error(), "showed no window within 1s; it was stopped") {
		t.Fatalf("an application that never shows a window: %v", err)
	}
	pid := d.launched[len(d.launched)-1].cmd.Process.Pid
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the windowless process %d is still there (%v)", pid, err)
	}
	_, err = d.Launch(ctx, []string{"sh", "-c", "echo cannot open display >&2; exit 3"}, "")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "cannot open display") {
		t.Fatalf("an application that exits at once: %v", err)
	}
	if _, err = d.Launch(ctx, []string{"/nonexistent/app"}, ""); err == nil || !strings.Contains(err.Error(), "launch /nonexistent/app") {
		t.Fatalf("a missing program: %v", err)
	}
	if _, err = d.Launch(ctx, nil, "no-such-app"); err == nil || !strings.Contains(err.Error(), "no-such-app.desktop") {
		t.Fatalf("a missing desktop file: %v", err)
	}
}

func TestDisplayGone(t *testing.T) {
	s, d := start(t, "galculator")
	ctx := context.Background()
	w := launch(t, d, "galculator")
	if _, err := d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, call := range []func() error{
		func() error { _, err := d.Observe(ctx, "", ObserveOptions{Screenshot: true}); return err },
		func() error { _, err := d.Windows(ctx); return err },
		func() error { _, err := d.Keys(ctx, Target{}, "", []string{"Return"}, false); return err },
	} {
		err := call()
		if err == nil {
			t.Fatal("a call on a desktop that is gone succeeded")
		}
		if msg := err.Error(); !strings.Contains(msg, "D-Bus") && !strings.Contains(msg, "display") && !strings.Contains(msg, "bus") {
			t.Errorf("the error does not say what is gone: %v", err)
		}
	}
	// Nothing the session started is left.
	for _, pid := range s.Pids() {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d outlived its session", pid)
		}
	}
}

func TestWalkAndCacheAgree(t *testing.T) {
	_, d := start(t, "galculator")
	w := launch(t, d, "galculator")
	ctx := context.Background()
	cached, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cached.Fetch != "cache" {
		t.Fatalf("GTK's bridge offers a cache, but the fetch was %s", cached.Fetch)
	}
	d.opts.Fetch = "walk"
	walked, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if walked.Fetch != "walk" || walked.Text() != cached.Text() {
		t.Fatalf("walk and cache disagree:\n%s\n---\n%s", walked.Text(), cached.Text())
	}
	// The role table matches what the application names each role.
	tr, err := d.a.fetchTree(ctx, scope{root: w.ref, area: w.Bounds}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tr.nodes {
		var name string
		if err := d.a.do(ctx, n.ref, ifAccessible+".GetRoleName", &name); err != nil {
			t.Fatal(err)
		}
		if name != roleName(n.role) {
			t.Errorf("role %d: table says %q, the application %q", n.role, roleName(n.role), name)
		}
	}
}

func TestSelectSetValueScroll(t *testing.T) {
	_, d := start(t, "/usr/bin/python3")
	_, obs := widgets(t, d)
	bar := selectSetValue(t, d, obs)
	scrollMoves(t, d, bar)
}

// selectSetValue selects the second tab of the widgets window observed in
// obs and sets its slider to 42 (a word is refused); it returns the long
// list's vertical scroll bar.
func selectSetValue(t *testing.T, d *Desktop, obs *Observation) Control {
	t.Helper()
	ctx := context.Background()
	eff, err := d.Select(ctx, Target{ID: mustFind(t, obs, "page tab", "Second").ID})
	if err != nil {
		t.Fatal(err)
	}
	if eff.Target == nil || !slicesContains(eff.Target.States, "selected") {
		t.Fatalf("after select, the tab is %+v (%s)", eff.Target, eff.Did)
	}
	var slider, bar Control
	for _, c := range obs.Controls {
		switch {
		case c.Role == "slider":
			slider = c
		case c.Role == "scroll bar" && c.Bounds.H > c.Bounds.W:
			bar = c
		}
	}
	if slider.ID == 0 || bar.ID == 0 || bar.Value == nil {
		t.Fatalf("no slider or vertical scroll bar with a value in:\n%s", obs.Text())
	}
	eff, err = d.SetValue(ctx, Target{ID: slider.ID}, "42")
	if err != nil {
		t.Fatal(err)
	}
	if eff.Target == nil || eff.Target.Value == nil || *eff.Target.Value != 42 {
		t.Fatalf("after set_value 42 the slider is %+v (%s)", eff.Target, eff.Did)
	}
	if _, err := d.SetValue(ctx, Target{ID: slider.ID}, "lots"); err == nil || !strings.Contains(err.Error(), `takes a number, not "lots"`) {
		t.Fatalf("a word for a slider: %v", err)
	}
	return bar
}

// scrollMoves turns the wheel down over the scroll bar's list and checks
// the bar's value changed.
func scrollMoves(t *testing.T, d *Desktop, bar Control) {
	t.Helper()
	eff, err := d.Scroll(context.Background(), Target{ID: bar.ID}, "", "down", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range eff.Changed {
		if ch.ID == bar.ID && ch.Field == "value" {
			return
		}
	}
	t.Fatalf("scrolling down 5 left the list's scroll bar at %v: %+v (%s)", *bar.Value, eff.Changed, eff.Did)
}
