package desktop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Effect is what an action changed, so that the model sees the result of
// its step without observing again.
type Effect struct {
	// Did says how the action was carried out.
	Did string `json:"did"`
	// Point is where the action landed, in the pixels of the window's
	// screenshot (for reports that mark it).
	Point *Point `json:"point,omitempty"`
	// Window is the window acted on, as it is now (absent once closed).
	Window *Window `json:"window,omitempty"`
	// Focused is the control that has the keyboard focus now.
	Focused *Control `json:"focused,omitempty"`
	// Target is the control acted on, as it is now.
	Target *Control `json:"target,omitempty"`
	// Changed lists controls whose name, text, value or states changed.
	Changed []Change `json:"changed,omitempty"`
	// Appeared and Disappeared count controls that came and went.
	Appeared    int `json:"appeared,omitempty"`
	Disappeared int `json:"disappeared,omitempty"`
	// NewWindows and ClosedWindows are top-level windows that opened or
	// closed.
	NewWindows    []Window `json:"new_windows,omitempty"`
	ClosedWindows []Window `json:"closed_windows,omitempty"`
}

// Point is a position in a window's screenshot.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// pointIn is control c's centre in window w's screenshot.
func pointIn(c Control, w Window) *Point {
	x, y := c.Bounds.centre()
	return &Point{x - w.Bounds.X, y - w.Bounds.Y}
}

// Change is one control's change.
type Change struct {
	ID     int    `json:"id,omitempty"`
	Role   string `json:"role"`
	Name   string `json:"name,omitempty"`
	Field  string `json:"field"`
	Before string `json:"before"`
	After  string `json:"after"`
}

const maxChanges = 20

// act runs do on window w and reports what changed in it and on the
// desktop. before is w's observation before the action.
func (d *Desktop) act(ctx context.Context, w Window, target int, do func() (string, error)) (*Effect, error) {
	wins, err := d.windows(ctx)
	if err != nil {
		return nil, err
	}
	before := d.last[w.ref]
	if before == nil {
		if before, err = d.observe(ctx, w, ObserveOptions{}); err != nil {
			return nil, err
		}
	}
	did, err := do()
	if err != nil {
		return nil, err
	}
	// An application answers in its own time: read what changed after
	// the settle time, and again (up to five times) until a window opened
	// or closed, or two reads agree (a button's press may show before the
	// dialog it belongs to closes).
	var (
		eff  *Effect
		obs  *Observation
		prev string
	)
	for attempt := 0; ; attempt++ {
		select {
		case <-time.After(d.opts.Settle):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		eff = &Effect{Did: did}
		after, err := d.windows(ctx)
		if err != nil {
			return nil, err
		}
		eff.NewWindows, eff.ClosedWindows = diffWindows(wins, after)
		var now *Window
		for i := range after {
			if after[i].ref == w.ref {
				now = &after[i]
			}
		}
		if now == nil {
			delete(d.last, w.ref)
			return eff, nil
		}
		eff.Window = now
		if now.Title != w.Title {
			eff.Changed = append(eff.Changed, Change{Role: now.Role, Name: now.Title, Field: "window title", Before: w.Title, After: now.Title})
		}
		if obs, err = d.observe(ctx, *now, ObserveOptions{}); err != nil {
			return eff, nil // the window went away while we looked
		}
		diffControls(eff, before, obs)
		windowsMoved := len(eff.NewWindows)+len(eff.ClosedWindows) > 0
		text := obs.Text()
		if windowsMoved || attempt == 4 || (attempt > 0 && text == prev) {
			break
		}
		prev = text
	}
	if c, ok := obs.byID[target]; ok {
		cc := *c
		eff.Target = &cc
	}
	for _, c := range obs.Controls {
		if c.st.has(stFocused) {
			cc := c
			eff.Focused = &cc
		}
	}
	// A new window (a dialog) usually takes the focus: say which control.
	for _, nw := range eff.NewWindows {
		if o, err := d.observe(ctx, nw, ObserveOptions{}); err == nil {
			for _, c := range o.Controls {
				if c.st.has(stFocused) {
					cc := c
					eff.Focused = &cc
				}
			}
		}
	}
	return eff, nil
}

func diffWindows(before, after []Window) (opened, closed []Window) {
	in := func(ws []Window, w Window) bool {
		return slices.ContainsFunc(ws, func(x Window) bool { return x.ref == w.ref })
	}
	for _, w := range after {
		if !in(before, w) {
			opened = append(opened, w)
		}
	}
	for _, w := range before {
		if !in(after, w) {
			closed = append(closed, w)
		}
	}
	return opened, closed
}

func diffControls(eff *Effect, before, after *Observation) {
	for _, a := range after.Controls {
		b, ok := before.byID[a.ID]
		if !ok {
			eff.Appeared++
			continue
		}
		add := func(field, was, is string) {
			if was != is && len(eff.Changed) < maxChanges {
				eff.Changed = append(eff.Changed, Change{ID: a.ID, Role: a.Role, Name: a.Name, Field: field, Before: was, After: is})
			}
		}
		add("name", b.Name, a.Name)
		add("text", b.Text, a.Text)
		add("value", fmtValue(b.Value), fmtValue(a.Value))
		add("states", strings.Join(b.States, ","), strings.Join(a.States, ","))
	}
	for _, b := range before.Controls {
		if _, ok := after.byID[b.ID]; !ok {
			eff.Disappeared++
		}
	}
}

func fmtValue(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%g", *v)
}

// clickActions are AT-SPI action names that mean "activate", in order of
// preference.
var clickActions = []string{"click", "press", "activate", "toggle", "jump", "open"}

// Click clicks a control: button "left" (default), "right" or "middle",
// count 1 or 2. A single left click uses the control's own activate action
// where it has one (reliable whatever covers the control); otherwise the
// pointer clicks the control's centre through XTest.
func (d *Desktop) Click(ctx context.Context, id int, button string, count int) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, w, err := d.control(ctx, id)
	if err != nil {
		return nil, err
	}
	btn := map[string]byte{"": 1, "left": 1, "middle": 2, "right": 3}[button]
	if btn == 0 {
		return nil, fmt.Errorf("button %q: use left, right or middle", button)
	}
	if count == 0 {
		count = 1
	}
	if count < 1 || count > 3 {
		return nil, fmt.Errorf("count %d: use 1 (click), 2 (double-click) or 3", count)
	}
	eff, err := d.act(ctx, w, id, func() (string, error) {
		if btn == 1 && count == 1 {
			if i := actionIndex(c.Actions, clickActions...); i >= 0 {
				var ok bool
				if err := d.dbusMethod(ctx, c.ref, ifAction+".DoAction", &ok, int32(i)); err != nil {
					return "", d.controlErr(c, "do its action "+c.Actions[i], err)
				}
				return fmt.Sprintf("did the %q action of %s %q", c.Actions[i], c.Role, c.Name), nil
			}
		}
		x, y, err := d.centre(ctx, c, w)
		if err != nil {
			return "", err
		}
		if err := d.x.click(x, y, btn, count); err != nil {
			return "", err
		}
		return fmt.Sprintf("clicked %s %q at %d,%d with the %s button %d time(s)", c.Role, c.Name, x, y, orDefault(button, "left"), count), nil
	})
	if eff != nil {
		eff.Point = pointIn(c, w)
	}
	return eff, err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func actionIndex(actions []string, names ...string) int {
	for _, n := range names {
		for i, a := range actions {
			if strings.EqualFold(a, n) {
				return i
			}
		}
	}
	return -1
}

func (d *Desktop) controlErr(c Control, what string, err error) error {
	if gone(err) {
		return fmt.Errorf("control %d (%s %q) no longer exists: observe again for current ids", c.ID, c.Role, c.Name)
	}
	return fmt.Errorf("control %d (%s %q): %s: %w", c.ID, c.Role, c.Name, what, err)
}

// centre is the control's centre now, with its window raised so that the
// pointer reaches it.
func (d *Desktop) centre(ctx context.Context, c Control, w Window) (int, int, error) {
	var ext struct{ X, Y, W, H int32 }
	if err := d.dbusMethod(ctx, c.ref, ifComponent+".GetExtents", &ext, uint32(0)); err != nil {
		return 0, 0, d.controlErr(c, "read its position", err)
	}
	r := Rect{int(ext.X), int(ext.Y), int(ext.W), int(ext.H)}.add(w.dx, w.dy)
	if r.empty() {
		return 0, 0, fmt.Errorf("control %d (%s %q) has no area on the screen now (hidden or scrolled away)", c.ID, c.Role, c.Name)
	}
	if xw, ok := d.xwindow(w); ok {
		if err := d.x.raise(xw.id); err != nil {
			return 0, 0, err
		}
	}
	x, y := r.centre()
	return x, y, nil
}

// focusFor gives the keyboard focus to control id (0: leave the focus
// where it is, in window) and refuses a terminal unless allowed.
func (d *Desktop) focusFor(ctx context.Context, id int, window string, terminal bool) (Window, Control, error) {
	var (
		w   Window
		c   Control
		err error
	)
	if id != 0 {
		if c, w, err = d.control(ctx, id); err != nil {
			return w, c, err
		}
	} else if w, _, err = d.window(ctx, window); err != nil {
		return w, c, err
	}
	if xw, ok := d.xwindow(w); ok {
		if err := d.x.raise(xw.id); err != nil {
			return w, c, err
		}
	}
	if id != 0 && !c.st.has(stFocused) {
		var ok bool
		if err := d.dbusMethod(ctx, c.ref, ifComponent+".GrabFocus", &ok); err != nil || !ok {
			x, y, err := d.centre(ctx, c, w)
			if err != nil {
				return w, c, err
			}
			if err := d.x.click(x, y, 1, 1); err != nil {
				return w, c, err
			}
		}
	}
	obs, err := d.observe(ctx, w, ObserveOptions{})
	if err != nil {
		return w, c, err
	}
	isTerminal := c.Role == "terminal"
	for _, fc := range obs.Controls {
		if fc.st.has(stFocused) && fc.Role == "terminal" {
			isTerminal = true
		}
	}
	if isTerminal && !terminal {
		return w, c, errors.New("the keyboard focus is in a terminal, where typing runs commands: use the shell tool, or type_in_terminal (a destructive action that may need approval)")
	}
	return w, c, nil
}

// Type types text into control id (0: wherever the focus is in the
// window, "" the active one). terminal allows typing into a terminal.
func (d *Desktop) Type(ctx context.Context, id int, window, text string, terminal bool) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, c, err := d.focusFor(ctx, id, window, terminal)
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, id, func() (string, error) {
		if did, ok, err := d.insertText(ctx, c, w, text); ok || err != nil {
			return did, err
		}
		if err := d.x.typeText(text); err != nil {
			return "", err
		}
		return fmt.Sprintf("typed %d characters", len([]rune(text))), nil
	})
}

// Keys presses key chords in order ("ctrl+s", "Return").
func (d *Desktop) Keys(ctx context.Context, id int, window string, chords []string, terminal bool) (*Effect, error) {
	for _, ch := range chords {
		if _, _, err := parseChord(ch); err != nil {
			return nil, err
		}
	}
	if len(chords) == 0 {
		return nil, errors.New("no keys given: pass chords such as [\"ctrl+s\"] or [\"Return\"]")
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, _, err := d.focusFor(ctx, id, window, terminal)
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, id, func() (string, error) {
		for _, ch := range chords {
			mods, key, _ := parseChord(ch)
			if err := d.x.press(mods, key); err != nil {
				return "", err
			}
		}
		return "pressed " + strings.Join(chords, ", "), nil
	})
}

// SetValue sets a control's text (editable text) or number (a value).
func (d *Desktop) SetValue(ctx context.Context, id int, value string) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, w, err := d.control(ctx, id)
	if err != nil {
		return nil, err
	}
	var ifaces []string
	if err := d.dbusMethod(ctx, c.ref, ifAccessible+".GetInterfaces", &ifaces); err != nil {
		return nil, d.controlErr(c, "read its interfaces", err)
	}
	n := node{ifaces: ifaces}
	switch {
	case n.has(ifEditableText):
		if c.Role == "terminal" {
			return nil, errors.New("control is a terminal: setting its text may run commands; use type_in_terminal")
		}
		return d.act(ctx, w, id, func() (string, error) {
			var ok bool
			if err := d.dbusMethod(ctx, c.ref, ifEditableText+".SetTextContents", &ok, value); err != nil {
				return "", d.controlErr(c, "set its text", err)
			}
			if !ok {
				return "", fmt.Errorf("control %d (%s %q) refused the text (it may be read-only)", c.ID, c.Role, c.Name)
			}
			return fmt.Sprintf("set the text of %s %q", c.Role, c.Name), nil
		})
	case n.has(ifValue):
		var f float64
		if _, err := fmt.Sscan(value, &f); err != nil {
			return nil, fmt.Errorf("control %d (%s %q) takes a number, not %q", c.ID, c.Role, c.Name, value)
		}
		return d.act(ctx, w, id, func() (string, error) {
			if err := d.setProp(ctx, c.ref, ifValue, "CurrentValue", f); err != nil {
				return "", d.controlErr(c, "set its value", err)
			}
			return fmt.Sprintf("set the value of %s %q to %g", c.Role, c.Name, f), nil
		})
	}
	return nil, fmt.Errorf("control %d (%s %q) has neither editable text nor a value: click it and type instead", c.ID, c.Role, c.Name)
}

// Select selects an item (a list item, tab, table cell, menu item)
// through its container's selection, else its own action.
func (d *Desktop) Select(ctx context.Context, id int) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, w, err := d.control(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, id, func() (string, error) {
		var parent childRef
		if err := d.a.getProp(ctx, c.ref, ifAccessible, "Parent").storeVariant(&parent); err == nil && parent.Path != nullPath {
			if pr := (ref{parent.Bus, parent.Path}); true {
				var idx int32
				var ok2 bool
				if d.dbusMethod(ctx, c.ref, ifAccessible+".GetIndexInParent", &idx) == nil &&
					d.dbusMethod(ctx, pr, ifSelection+".SelectChild", &ok2, idx) == nil && ok2 {
					return fmt.Sprintf("selected %s %q (item %d of its container)", c.Role, c.Name, idx), nil
				}
			}
		}
		if i := actionIndex(c.Actions, append([]string{"select"}, clickActions...)...); i >= 0 {
			var ok bool
			if err := d.dbusMethod(ctx, c.ref, ifAction+".DoAction", &ok, int32(i)); err != nil {
				return "", d.controlErr(c, "do its action", err)
			}
			return fmt.Sprintf("did the %q action of %s %q", c.Actions[i], c.Role, c.Name), nil
		}
		return "", fmt.Errorf("control %d (%s %q) cannot be selected: its container has no selection and it has no action; click it instead", c.ID, c.Role, c.Name)
	})
}

// Scroll turns the mouse wheel over a control (0: the window's centre).
func (d *Desktop) Scroll(ctx context.Context, id int, window, direction string, amount int) (*Effect, error) {
	btn := map[string]byte{"up": 4, "down": 5, "left": 6, "right": 7}[direction]
	if btn == 0 {
		return nil, fmt.Errorf("direction %q: use up, down, left or right", direction)
	}
	if amount <= 0 {
		amount = 3
	}
	if amount > 50 {
		return nil, fmt.Errorf("amount %d: at most 50 wheel steps at once", amount)
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var w Window
	var x, y int
	if id != 0 {
		c, cw, err := d.control(ctx, id)
		if err != nil {
			return nil, err
		}
		if x, y, err = d.centre(ctx, c, cw); err != nil {
			return nil, err
		}
		w = cw
	} else {
		if w, _, err = d.window(ctx, window); err != nil {
			return nil, err
		}
		x, y = w.Bounds.centre()
	}
	return d.act(ctx, w, id, func() (string, error) {
		if err := d.x.click(x, y, btn, amount); err != nil {
			return "", err
		}
		return fmt.Sprintf("scrolled %s %d steps at %d,%d", direction, amount, x, y), nil
	})
}

// FocusWindow raises a window and gives it the keyboard focus.
func (d *Desktop) FocusWindow(ctx context.Context, window string) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, xw, err := d.topLevel(ctx, window, "focus")
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, 0, func() (string, error) {
		return fmt.Sprintf("raised and focused window %s %q", w.ID, w.Title), d.x.raise(xw.id)
	})
}

// CloseWindow asks a window's application to close it, as a window
// manager's close button does, and waits up to 3s for it to go. An
// application may ask first (save changes?): the new dialog is reported.
func (d *Desktop) CloseWindow(ctx context.Context, window string) (*Effect, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, xw, err := d.topLevel(ctx, window, "close")
	if err != nil {
		return nil, err
	}
	return d.act(ctx, w, 0, func() (string, error) {
		if err := d.x.close(xw.id); err != nil {
			return "", err
		}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			ws, err := d.windows(ctx)
			if err != nil {
				return "", err
			}
			if !slices.ContainsFunc(ws, func(x Window) bool { return x.ref == w.ref }) {
				return fmt.Sprintf("closed window %s %q", w.ID, w.Title), nil
			}
			if len(ws) > 0 && ws[len(ws)-1].PID == w.PID && ws[len(ws)-1].ref != w.ref && ws[len(ws)-1].Role == "dialog" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return fmt.Sprintf("asked window %s %q to close; it is still open (see new_windows: the application may be asking something)", w.ID, w.Title), nil
	})
}

// topLevel is a window (by id, or the one window names by default) and
// its X window, which the window manager's actions (verb) need.
func (d *Desktop) topLevel(ctx context.Context, window, verb string) (Window, xwin, error) {
	w, _, err := d.window(ctx, window)
	if err != nil {
		return Window{}, xwin{}, err
	}
	xw, ok := d.xwindow(w)
	if !ok {
		return Window{}, xwin{}, fmt.Errorf("window %s %q has no X window of its process %d to %s", w.ID, w.Title, w.PID, verb)
	}
	return w, xw, nil
}

// launched is an application started by launch_app.
type launched struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *tail
}

func (p *launched) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // what it left in its group
}

// tail keeps the last bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

// Launch starts an application (a command line, or a desktop file's
// Exec) and waits for its first window. An application that shows no
// window in time is stopped and reported.
func (d *Desktop) Launch(ctx context.Context, command []string, desktopFile string) (*Effect, error) {
	if desktopFile != "" {
		if len(command) > 0 {
			return nil, errors.New("give a command or a desktop file, not both")
		}
		var err error
		if command, err = desktopExec(desktopFile); err != nil {
			return nil, err
		}
	}
	if len(command) == 0 && desktopFile == "" {
		command = d.opts.App
	}
	if len(command) == 0 {
		return nil, errors.New("nothing to launch: give command (program and arguments) or desktop_file")
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	before, err := d.windows(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), d.opts.Env...)
	if d.opts.Display != "" {
		cmd.Env = append(cmd.Env, "DISPLAY="+d.opts.Display)
	}
	if d.opts.Wayland != "" {
		cmd.Env = append(cmd.Env, "WAYLAND_DISPLAY="+d.opts.Wayland, "GDK_BACKEND=wayland", "QT_QPA_PLATFORM=wayland")
	}
	if d.opts.Bus != "" {
		cmd.Env = append(cmd.Env, "DBUS_SESSION_BUS_ADDRESS="+d.opts.Bus)
	}
	cmd.Env = append(cmd.Env, "NO_AT_BRIDGE=0", "GTK_MODULES=gail:atk-bridge")
	cmd.Dir = d.opts.Dir
	p := &launched{cmd: cmd, done: make(chan struct{}), stderr: &tail{}}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch %s: %w", command[0], err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	d.apps = append(d.apps, p)
	deadline := time.NewTimer(d.opts.LaunchTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	exited := false
	done := p.done
	for {
		select {
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-deadline.C:
			if !exited {
				p.stop()
				return nil, fmt.Errorf("%s showed no window within %s; it was stopped%s", command[0], d.opts.LaunchTimeout, stderrNote(p))
			}
			return nil, fmt.Errorf("%s exited (%s) and no window appeared within %s%s", command[0], cmd.ProcessState, d.opts.LaunchTimeout, stderrNote(p))
		case <-done:
			// A launcher that hands over to a running instance exits at
			// once: keep waiting for a window, from any process.
			exited, done = true, nil
			if cmd.ProcessState != nil && !cmd.ProcessState.Success() {
				return nil, fmt.Errorf("%s exited (%s) without showing a window%s", command[0], cmd.ProcessState, stderrNote(p))
			}
		case <-tick.C:
		}
		now, err := d.windows(ctx)
		if err != nil {
			return nil, err
		}
		opened, _ := diffWindows(before, now)
		var mine []Window
		for _, w := range opened {
			if w.PID == cmd.Process.Pid || exited {
				mine = append(mine, w)
			}
		}
		if len(mine) > 0 {
			return &Effect{Did: fmt.Sprintf("launched %s (pid %d)", strings.Join(command, " "), cmd.Process.Pid), NewWindows: mine, Window: &mine[0]}, nil
		}
	}
}

func stderrNote(p *launched) string {
	s := strings.TrimSpace(string(p.stderr.b))
	if s == "" {
		return ""
	}
	return "; its error output ends: " + s
}

// desktopExec reads the Exec line of a desktop file: a path, or a name
// looked up in the XDG application folders.
func desktopExec(name string) ([]string, error) {
	path := name
	if !strings.Contains(name, "/") {
		if !strings.HasSuffix(name, ".desktop") {
			name += ".desktop"
		}
		dirs := []string{filepath.Join(os.Getenv("HOME"), ".local/share/applications"), "/usr/local/share/applications", "/usr/share/applications"}
		for _, dir := range dirs {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				path = filepath.Join(dir, name)
				break
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("desktop file %s: %w (give a path, or a name from /usr/share/applications)", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inEntry := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inEntry = line == "[Desktop Entry]"
			continue
		}
		if inEntry && strings.HasPrefix(line, "Exec=") {
			var args []string
			for _, a := range strings.Fields(strings.TrimPrefix(line, "Exec=")) {
				if len(a) == 2 && a[0] == '%' { // field codes: %f %U ...
					continue
				}
				args = append(args, strings.Trim(a, `"`))
			}
			if len(args) > 0 {
				return args, nil
			}
		}
	}
	return nil, fmt.Errorf("desktop file %s has no Exec line in [Desktop Entry]", path)
}
