// Package desktop is Saucer's MCP server for Linux desktop applications
// on X11 and Wayland: it reads a window's controls and acts on them
// through the AT-SPI accessibility bus (D-Bus), takes screenshots and
// drives the pointer and keyboard through the display server (XTest on
// X11, the wlroots protocols on Wayland; screen.go is the seam), and marks
// each control's box and id on the screenshot (set-of-marks) for vision
// models. docs/desktop.md explains the design.
package desktop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// Options configure a Desktop. The zero value uses the environment's
// display and session bus.
type Options struct {
	// Display is the X display (default $DISPLAY); Bus the session D-Bus
	// address (default $DBUS_SESSION_BUS_ADDRESS).
	Display, Bus string
	// Wayland is the Wayland display, a socket's path or name (default
	// $WAYLAND_DISPLAY when no X display is named or set); SwaySock
	// sway's IPC socket (default $SWAYSOCK).
	Wayland, SwaySock string
	// Fetch picks how a window's tree is read: "cache" (one
	// org.a11y.atspi.Cache.GetItems call per application, falling back to
	// a walk where an application offers no cache), "walk" (a level-order
	// walk, each level's calls in flight together). Default "cache".
	Fetch string
	// Settle is how long an action waits before reading what changed.
	// Default 250ms.
	Settle time.Duration
	// LaunchTimeout bounds how long launch_app waits for a new window.
	// Default 20s.
	LaunchTimeout time.Duration
	// Env (KEY=VALUE) is added to the environment of launched
	// applications; Dir is their working directory.
	Env []string
	Dir string
	// App, when set, is the command of the one application this desktop
	// is for (a named desktop app): launch_app with nothing named starts
	// it, and tools that name no window act on its windows.
	App []string
}

func (o Options) withDefaults() Options {
	if o.Fetch == "" {
		o.Fetch = "cache"
	}
	if o.Settle <= 0 {
		o.Settle = 250 * time.Millisecond
	}
	if o.LaunchTimeout <= 0 {
		o.LaunchTimeout = 20 * time.Second
	}
	return o
}

// Desktop observes and drives the windows of one X11 or Wayland session. Its
// methods are safe for concurrent use (they run one at a time).
type Desktop struct {
	opts Options

	mu   sync.Mutex
	a    *a11y
	x    screen
	ids  idMap[int]
	wins idMap[string]
	last map[ref]*Observation // the latest observation of each window
	apps []*launched
}

// New returns a Desktop; it connects on first use, so that a missing
// display is a failure of the call that needs it, with its reason.
func New(opts Options) *Desktop {
	return &Desktop{opts: opts.withDefaults(), ids: newIDMap(func(n int) int { return n }),
		wins: newIDMap(func(n int) string { return fmt.Sprintf("w%d", n) }), last: map[ref]*Observation{}}
}

// Close stops the applications this Desktop launched and closes its
// connections.
func (d *Desktop) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.apps {
		p.stop()
	}
	d.apps = nil
	d.disconnect()
	return nil
}

func (d *Desktop) disconnect() {
	if d.a != nil {
		d.a.Close()
		d.a = nil
	}
	if d.x != nil {
		d.x.Close()
		d.x = nil
	}
}

// connect opens the connections that are not open.
func (d *Desktop) connect(ctx context.Context) error {
	if d.x == nil {
		x, err := dialScreen(d.opts)
		if err != nil {
			return err
		}
		d.x = x
	}
	if d.a == nil {
		a, err := dialA11y(ctx, d.opts.Bus)
		if err != nil {
			return err
		}
		d.a = a
	}
	return nil
}

// lockConnected takes the lock and connects; a connection that has died
// (the display or bus went away) is dropped and dialled again, so that the
// error says what is wrong now.
func (d *Desktop) lockConnected(ctx context.Context) (func(), error) {
	d.mu.Lock()
	if d.a != nil && !d.a.conn.Connected() {
		d.disconnect()
	}
	if err := d.connect(ctx); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return d.mu.Unlock, nil
}

// idMap gives each accessible object a short id that stays the same for
// as long as the object lives, so that the model can use an id from an
// earlier step.
type idMap[K comparable] struct {
	byRef  map[ref]K
	byID   map[K]ref
	next   int
	format func(int) K
}

func newIDMap[K comparable](format func(int) K) idMap[K] {
	return idMap[K]{byRef: map[ref]K{}, byID: map[K]ref{}, format: format}
}

func (m *idMap[K]) id(r ref) K {
	if k, ok := m.byRef[r]; ok {
		return k
	}
	m.next++
	k := m.format(m.next)
	m.byRef[r], m.byID[k] = k, r
	return k
}

// Window is a top-level window of an application.
type Window struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	App    string `json:"app"`
	Role   string `json:"role"`
	PID    int    `json:"pid,omitempty"`
	Bounds Rect   `json:"bounds"`
	Active bool   `json:"active,omitempty"`
	ref    ref
	// dx, dy turn the application's boxes into screen positions (under
	// Wayland they are relative to the window).
	dx, dy int
}

// Control is one control of a window.
type Control struct {
	ID      int      `json:"id"`
	Role    string   `json:"role"`
	Name    string   `json:"name,omitempty"`
	States  []string `json:"states,omitempty"`
	Bounds  Rect     `json:"bounds"`
	Actions []string `json:"actions,omitempty"`
	Text    string   `json:"text,omitempty"`
	Value   *float64 `json:"value,omitempty"`
	ref     ref
	st      states
}

// Observation is what one look at a window saw.
type Observation struct {
	Window   Window    `json:"window"`
	Controls []Control `json:"controls"`
	// Fetch says how the tree was read: "cache" or "walk".
	Fetch string `json:"fetch"`
	// Nodes is how many accessible objects were read.
	Nodes int `json:"nodes"`
	// PNG is the screenshot, annotated when asked, if one was taken.
	PNG []byte `json:"-"`
	// NoScreenshot says why none was taken where one was asked for (a
	// compositor without screen capture).
	NoScreenshot string `json:"no_screenshot,omitempty"`
	// Timing of the parts, for the benchmark.
	Timing Timing `json:"-"`
	byID   map[int]*Control
}

// Timing splits an observation's time.
type Timing struct {
	Tree, Details, Capture, Annotate, Encode time.Duration
}

// DBus is the time spent in D-Bus calls.
func (t Timing) DBus() time.Duration { return t.Tree + t.Details }

// Total is the whole observation.
func (t Timing) Total() time.Duration {
	return t.Tree + t.Details + t.Capture + t.Annotate + t.Encode
}

// Windows lists the applications' top-level windows that are showing.
func (d *Desktop) Windows(ctx context.Context) ([]Window, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return d.windows(ctx)
}

func (d *Desktop) windows(ctx context.Context) ([]Window, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	apps, err := d.a.apps(ctx)
	if err != nil {
		return nil, err
	}
	type appCalls struct{ name, kids, pid call }
	acs := make([]appCalls, len(apps))
	for i, app := range apps {
		acs[i] = appCalls{d.a.getProp(ctx, app, ifAccessible, "Name"), d.a.goCall(ctx, app, ifAccessible+".GetChildren"), d.a.pid(ctx, app.Bus)}
	}
	type winCalls struct {
		w                      Window
		role, name, state, ext call
	}
	var wcs []winCalls
	for i := range apps {
		var name string
		var kids []childRef
		var pid uint32
		if acs[i].name.storeVariant(&name) != nil || acs[i].kids.store(&kids) != nil {
			continue // an application that quit or hangs is not listed
		}
		_ = acs[i].pid.store(&pid)
		for _, k := range kids {
			r := ref{k.Bus, k.Path}
			wcs = append(wcs, winCalls{w: Window{App: name, PID: int(pid), ref: r},
				role: d.a.goCall(ctx, r, ifAccessible+".GetRole"), name: d.a.getProp(ctx, r, ifAccessible, "Name"),
				state: d.a.goCall(ctx, r, ifAccessible+".GetState"), ext: d.a.goCall(ctx, r, ifComponent+".GetExtents", uint32(0))})
		}
	}
	var out []Window
	for _, wc := range wcs {
		var role uint32
		var words []uint32
		var ext struct{ X, Y, W, H int32 }
		w := wc.w
		if errors.Join(wc.role.store(&role), wc.name.storeVariant(&w.Title), wc.state.store(&words), wc.ext.store(&ext)) != nil {
			continue
		}
		st := statesOf(words)
		if !st.has(stShowing) && !st.has(stVisible) {
			continue
		}
		w.Role, w.Active, w.Bounds = roleName(role), st.has(stActive), Rect{int(ext.X), int(ext.Y), int(ext.W), int(ext.H)}
		w.ID = d.wins.id(w.ref)
		out = append(out, w)
	}
	d.place(out)
	return out, nil
}

// window finds a window by id; "" is the newest dialog, else the active
// window, else the newest.
func (d *Desktop) window(ctx context.Context, id string) (Window, []Window, error) {
	ws, err := d.windows(ctx)
	if err != nil {
		return Window{}, nil, err
	}
	if id == "" {
		if len(d.opts.App) > 0 {
			var mine []Window
			for _, w := range ws {
				if d.ownWindow(w) {
					mine = append(mine, w)
				}
			}
			if len(mine) == 0 {
				return Window{}, ws, fmt.Errorf("%s has no window open: launch it with launch_app", filepath.Base(d.opts.App[0]))
			}
			ws = mine
		}
		if len(ws) == 0 {
			return Window{}, ws, errors.New("no application window is open: launch one with launch_app")
		}
		// A dialog comes first: it blocks its application until answered.
		for i := len(ws) - 1; i >= 0; i-- {
			if dialogRoles[ws[i].Role] {
				return ws[i], ws, nil
			}
		}
		best := ws[len(ws)-1]
		for _, w := range ws {
			if w.Active {
				best = w
			}
		}
		return best, ws, nil
	}
	for _, w := range ws {
		if w.ID == id {
			return w, ws, nil
		}
	}
	if _, known := d.wins.byID[id]; known {
		return Window{}, ws, fmt.Errorf("window %s is gone (closed, or its application quit); open windows: %s", id, windowList(ws))
	}
	return Window{}, ws, fmt.Errorf("no window %q; open windows: %s", id, windowList(ws))
}

// ownWindow reports whether w belongs to the application of Options.App:
// a process this desktop launched, or an application of that name.
func (d *Desktop) ownWindow(w Window) bool {
	for _, p := range d.apps {
		if p.cmd.Process.Pid == w.PID {
			return true
		}
	}
	return strings.EqualFold(w.App, filepath.Base(d.opts.App[0]))
}

var dialogRoles = map[string]bool{"dialog": true, "file chooser": true, "alert": true, "color chooser": true, "font chooser": true}

func windowList(ws []Window) string {
	if len(ws) == 0 {
		return "none"
	}
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s %q (%s)", w.ID, w.Title, w.App))
	}
	return strings.Join(parts, ", ")
}

// ObserveOptions pick what an observation includes.
type ObserveOptions struct {
	Screenshot bool // capture the window
	Marks      bool // draw the controls' boxes and ids on the capture
}

// Observe reads a window's controls ("" for the active window) and, as
// asked, its annotated screenshot.
func (d *Desktop) Observe(ctx context.Context, window string, o ObserveOptions) (*Observation, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, _, err := d.window(ctx, window)
	if err != nil {
		return nil, err
	}
	return d.observe(ctx, w, o)
}

func (d *Desktop) observe(ctx context.Context, w Window, o ObserveOptions) (*Observation, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	obs := &Observation{Window: w, Fetch: d.opts.Fetch, byID: map[int]*Control{}}
	t0 := time.Now()
	var nodes []*node
	var err error
	ok := false
	if d.opts.Fetch != "walk" {
		nodes, ok, err = d.a.bulk(ctx, w.ref)
		if err != nil {
			return nil, d.appErr(w, err)
		}
	}
	if !ok {
		obs.Fetch = "walk"
		if nodes, err = d.a.walk(ctx, w.ref); err != nil {
			return nil, d.appErr(w, err)
		}
	}
	obs.Nodes = len(nodes)
	t1 := time.Now()
	var keep []*node
	for _, n := range nodes[1:] {
		if worthShowing(n) {
			keep = append(keep, n)
		}
	}
	dets := d.a.details(ctx, keep)
	t2 := time.Now()
	obs.Timing.Tree, obs.Timing.Details = t1.Sub(t0), t2.Sub(t1)
	for i, n := range keep {
		det := dets[i]
		det.bounds = det.bounds.add(w.dx, w.dy)
		if det.bounds.empty() || clip(det.bounds, w.Bounds).empty() {
			continue
		}
		role := roleName(n.role)
		c := Control{ID: d.ids.id(n.ref), Role: role, Name: strings.TrimSpace(n.name), States: n.states.shown(),
			Bounds: det.bounds, Actions: det.actions, Value: det.value, ref: n.ref, st: n.states}
		if det.text != "" && det.text != c.Name {
			c.Text = det.text
		}
		if !interactive[role] && len(c.Actions) == 0 && c.Value == nil && c.Name == "" && c.Text == "" {
			continue
		}
		obs.Controls = append(obs.Controls, c)
	}
	for i := range obs.Controls {
		obs.byID[obs.Controls[i].ID] = &obs.Controls[i]
	}
	d.last[w.ref] = obs
	if o.Screenshot {
		if err := d.capture(obs, o.Marks); err != nil {
			return nil, err
		}
	}
	return obs, nil
}

// worthShowing keeps the objects that may be controls: interactive or
// readable roles, or objects that act, edit or hold a value. Containers
// (panels, fillers, scroll panes) are left out; their children are not.
func worthShowing(n *node) bool {
	if !n.states.has(stShowing) || !n.states.has(stVisible) {
		return false
	}
	role := roleName(n.role)
	if interactive[role] {
		return true
	}
	if readable[role] && strings.TrimSpace(n.name) != "" {
		return true
	}
	return n.has(ifAction) || n.has(ifEditableText) || n.has(ifValue) || (n.has(ifText) && role != "filler" && role != "panel")
}

// appErr says which window's application failed.
func (d *Desktop) appErr(w Window, err error) error {
	if gone(err) {
		return fmt.Errorf("window %s %q is gone: its application closed it or quit (%v)", w.ID, w.Title, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the application of window %s %q did not answer within %s: it may be hung", w.ID, w.Title, callTimeout)
	}
	return fmt.Errorf("read window %s %q: %w", w.ID, w.Title, err)
}

// capture takes the window's screenshot, raising it first so that no
// other window covers it, and draws the marks.
func (d *Desktop) capture(obs *Observation, marks bool) error {
	t0 := time.Now()
	if xw, ok := d.xwindow(obs.Window); ok {
		_ = d.x.raise(xw.id)
	}
	img, area, err := d.x.capture(obs.Window.Bounds)
	if errors.Is(err, errCannot) {
		obs.NoScreenshot = err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	t1 := time.Now()
	if marks {
		ms := make([]mark, 0, len(obs.Controls))
		for _, c := range obs.Controls {
			b := c.Bounds
			ms = append(ms, mark{c.ID, image.Rect(b.X-area.X, b.Y-area.Y, b.X-area.X+b.W, b.Y-area.Y+b.H)})
		}
		annotate(img, ms)
	}
	t2 := time.Now()
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return err
	}
	obs.PNG = buf.Bytes()
	obs.Timing.Capture, obs.Timing.Annotate, obs.Timing.Encode = t1.Sub(t0), t2.Sub(t1), time.Since(t2)
	return nil
}

// xwindow finds the X window of an AT-SPI window: same process and
// title, else the only window of that process.
func (d *Desktop) xwindow(w Window) (xwin, bool) {
	xs, err := d.x.topLevels()
	if err != nil {
		return xwin{}, false
	}
	return matchWindow(xs, w)
}

// Text renders the observation for a model: one line per control.
func (o *Observation) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Window %s %q (%s, pid %d) at %d,%d %dx%d: %d controls. Use the number in [brackets] as the control id.\n",
		o.Window.ID, o.Window.Title, o.Window.App, o.Window.PID, o.Window.Bounds.X, o.Window.Bounds.Y, o.Window.Bounds.W, o.Window.Bounds.H, len(o.Controls))
	if o.NoScreenshot != "" {
		fmt.Fprintf(&b, "(No screenshot: %s.)\n", o.NoScreenshot)
	}
	for _, c := range o.Controls {
		b.WriteString(c.line())
		b.WriteByte('\n')
	}
	return b.String()
}

func (c Control) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] %s", c.ID, c.Role)
	if c.Name != "" {
		fmt.Fprintf(&b, " %q", c.Name)
	}
	if c.Text != "" {
		t := c.Text
		if len(t) > 200 {
			t = t[:200] + "…"
		}
		fmt.Fprintf(&b, " text=%q", t)
	}
	if c.Value != nil {
		fmt.Fprintf(&b, " value=%g", *c.Value)
	}
	if len(c.States) > 0 {
		fmt.Fprintf(&b, " {%s}", strings.Join(c.States, ", "))
	}
	if len(c.Actions) > 0 {
		fmt.Fprintf(&b, " actions=%s", strings.Join(c.Actions, ","))
	}
	fmt.Fprintf(&b, " @%d,%d %dx%d", c.Bounds.X, c.Bounds.Y, c.Bounds.W, c.Bounds.H)
	return b.String()
}

// Control returns the control with the id from the latest observation
// that holds it.
func (o *Observation) Control(id int) (Control, bool) {
	c, ok := o.byID[id]
	if !ok {
		return Control{}, false
	}
	return *c, true
}

// Find returns the first control with that role and name.
func (o *Observation) Find(role, name string) (Control, bool) {
	for _, c := range o.Controls {
		if c.Role == role && c.Name == name {
			return c, true
		}
	}
	return Control{}, false
}

// control finds a control by id and the window it was seen in, and checks
// that it still exists.
func (d *Desktop) control(ctx context.Context, id int) (Control, Window, error) {
	r, known := d.ids.byID[id]
	if !known {
		return Control{}, Window{}, fmt.Errorf("no control %d has been observed: observe the window and use an id from its list", id)
	}
	var (
		c     Control
		w     Window
		found bool
	)
	for _, obs := range d.last {
		if cc, ok := obs.byID[id]; ok {
			c, w, found = *cc, obs.Window, true
		}
	}
	var words []uint32
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := d.a.goCall(cctx, r, ifAccessible+".GetState").store(&words)
	if err != nil || statesOf(words).has(stDefunct) {
		if err != nil && !gone(err) && !errors.Is(err, context.DeadlineExceeded) {
			return Control{}, Window{}, fmt.Errorf("control %d: %w", id, err)
		}
		what := fmt.Sprintf("control %d", id)
		if found {
			what = fmt.Sprintf("control %d (%s %q of window %s)", id, c.Role, c.Name, w.ID)
		}
		return Control{}, Window{}, fmt.Errorf("%s no longer exists: its window was closed or its application rebuilt it since it was observed; observe again for current ids", what)
	}
	if !found {
		return Control{}, Window{}, fmt.Errorf("control %d is no longer shown in its window (it changed since it was observed): observe again for current ids", id)
	}
	c.st = statesOf(words)
	return c, w, nil
}

// dbusMethod calls a method on a control and waits.
func (d *Desktop) dbusMethod(ctx context.Context, r ref, method string, out any, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c := d.a.goCall(ctx, r, method, args...)
	if out == nil {
		<-c.c.Done
		return c.c.Err
	}
	return c.store(out)
}

func (d *Desktop) setProp(ctx context.Context, r ref, iface, name string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return d.a.obj(r).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Set", 0, iface, name, dbus.MakeVariant(v)).Err
}

// pngImage decodes a screenshot, for tests.
func pngImage(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
