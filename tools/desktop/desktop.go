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
	"os/exec"
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
	// Fetch picks how a window's tree is read: "cache" (each
	// application's object cache in one call, completed by walking where
	// it is partial), "walk" (a level-order walk, each level's calls in
	// flight together). Default "cache".
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
	// Launcher, when set, starts the applications where the display runs
	// (a desktop of its own inside a sandbox), and A11yBus is the AT-SPI
	// bus's address as this process reaches it (default: asked of the
	// session bus).
	Launcher Launcher
	A11yBus  string
}

// A Launcher starts applications on a display that runs in another PID
// namespace than this process (a sandbox's: package display's Display
// inside a jail). The buses and the display server there know processes
// by their ids there; HostPID gives the id here, by which the desktop
// tells launched processes, their windows and frozen ones.
type Launcher interface {
	// AppCommand prepares argv to run there, in dir (there), with env
	// added to that place's environment.
	AppCommand(dir string, env []string, argv ...string) *exec.Cmd
	// HostPID is the id here of the process with id pid there; 0 when
	// there is none.
	HostPID(pid int) int
}

// hostPID is the id here of a process a bus or the display server
// reports.
func (d *Desktop) hostPID(pid int) int {
	if d.opts.Launcher == nil || pid <= 0 {
		return pid
	}
	return d.opts.Launcher.HostPID(pid)
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

	mu       sync.Mutex
	a        *a11y
	x        screen
	ids      idMap[int]
	wins     idMap[string]
	last     map[ref]*Observation // the latest observation of each window
	apps     map[string]*appInfo  // by bus name
	launched []*launched
	// trees are the windows' trees as last read, with the count of their
	// application's object events then: reused while it holds.
	trees map[ref]readTree
	// noReuse reads every tree afresh (the benchmark's cold case).
	noReuse bool
	// frames are how the last screenshot of each window, and of the
	// screen, maps to the screen: the pixel tools take points in them.
	frames      map[ref]Frame
	screenFrame Frame
	// held are the mouse buttons mouse_button pressed and has not
	// released.
	held map[byte]bool
}

type readTree struct {
	t       *tree
	version uint64
	area    Rect
	at      time.Time
	// boxes are the candidates' boxes as last read (GTK 3 only), when
	// the application's count of all events was boxesAt and the window
	// was at bounds: reused with the tree while neither has changed.
	boxes   map[ref]Rect
	boxesAt uint64
	bounds  Rect
	// loading: a document was still loading when the tree was read. Such
	// a tree is read again every time: a page arrives under objects it
	// did not read, whose events would not stop its reuse.
	loading bool
}

// keepsBoxes says whether an application's boxes may be reused while it
// sends no event: GTK 3 sends one whenever a control moves or is resized
// within its window (bounds-changed on every new allocation) and when a
// view scrolls (its scroll bar's value changes), and the window's own
// moves are seen in its bounds. Other toolkits read their boxes every
// time: a web page scrolls, or a toolkit lays out, without such events.
// LibreOffice's GTK 3 plugin names its toolkit GTK 3 too, but its
// accessible objects are its own, not GTK's widgets, and move without
// GTK's allocations: it reads its boxes every time.
func keepsBoxes(app *appInfo) bool { return app.gtk3 && app.name != "soffice" }

// maxTreeAge bounds how long a tree is reused without events, against a
// toolkit that sends none.
const maxTreeAge = 10 * time.Second

// New returns a Desktop; it connects on first use, so that a missing
// display is a failure of the call that needs it, with its reason.
func New(opts Options) *Desktop {
	return &Desktop{opts: opts.withDefaults(), ids: newIDMap(func(n int) int { return n }),
		wins: newIDMap(func(n int) string { return fmt.Sprintf("w%d", n) }), last: map[ref]*Observation{},
		apps: map[string]*appInfo{}, trees: map[ref]readTree{}, frames: map[ref]Frame{}}
}

// Close stops the applications this Desktop launched and closes its
// connections.
func (d *Desktop) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.x != nil {
		d.releaseHeld()
	}
	for _, p := range d.launched {
		p.stop()
	}
	d.launched = nil
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
	for _, app := range d.apps {
		app.endProbe()
	}
	d.apps = map[string]*appInfo{}
	d.trees = map[ref]readTree{}
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
		a, err := dialA11y(ctx, d.opts.Bus, d.opts.A11yBus)
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
	if (d.a != nil && !d.a.conn.Connected()) || (d.x != nil && d.x.closed()) {
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

// appInfo is what the desktop knows of one application on the bus.
type appInfo struct {
	bus     string
	name    string
	pid     int
	toolkit string // ToolkitName and Version, e.g. "GTK 4.8.3"
	// gtk4 is GTK 4's accessibility: boxes relative to the window, and no
	// SHOWING state below the window.
	gtk4 bool
	// gtk3 is GTK 3's (at-spi2-atk, which names it "gtk").
	gtk3 bool
	// probe, while set, is a call to an application that stopped
	// answering: it is listed as not responding, without waiting on it,
	// until the probe is answered.
	probe   *probe
	windows []Window // as last listed
}

// probe is a call that says when a frozen application answers again.
type probe struct {
	done   chan struct{} // closed once answered (or given up after a minute)
	err    error
	cancel context.CancelFunc
	proc   procSample // the process when it was marked
}

func (app *appInfo) frozen() bool { return app.probe != nil }

func (app *appInfo) endProbe() {
	if app.probe != nil {
		app.probe.cancel()
	}
	app.probe = nil
}

// notResponding marks app as not answering and starts a probe.
func (d *Desktop) notResponding(app *appInfo) {
	if app.frozen() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	p := &probe{done: make(chan struct{}), cancel: cancel, proc: sampleProc(app.pid)}
	ch := make(chan *dbus.Call, 1)
	d.a.obj(ref{app.bus, rootPath}).GoWithContext(ctx, ifAccessible+".GetChildren", 0, ch)
	go func() {
		c := <-ch
		p.err = c.Err
		close(p.done)
	}()
	app.probe = p
}

// stillFrozen reports whether a frozen app's probe is unanswered; an
// answered probe ends the freeze (a timed-out one is sent again).
func (d *Desktop) stillFrozen(app *appInfo) bool {
	if !app.frozen() {
		return false
	}
	select {
	case <-app.probe.done:
	default:
		return true
	}
	err := app.probe.err
	app.endProbe()
	if err == nil || gone(err) {
		return false
	}
	d.notResponding(app)
	return true
}

// awaitBusy waits on the probe of an application marked not responding
// while its process shows that it is at work (see activity), up to
// appBusyLimit, and reports whether it answers again. A stopped process,
// or one that has done nothing since it was marked, is not waited on.
func (d *Desktop) awaitBusy(ctx context.Context, app *appInfo) bool {
	if !d.stillFrozen(app) {
		return true
	}
	act := newActivity(app.pid)
	if was := app.probe.proc; act.last.stopped || !act.last.working && act.last.cpu == was.cpu && act.last.queued == was.queued {
		return false
	}
	timer := time.NewTimer(appTimeout)
	defer timer.Stop()
	limit := time.Now().Add(appBusyLimit)
	for {
		select {
		case <-app.probe.done:
			return !d.stillFrozen(app)
		case <-timer.C:
			if act.look() || time.Now().After(limit) {
				return false
			}
			timer.Reset(appTimeout)
		case <-ctx.Done():
			return false
		}
	}
}

// notRespondingErr says which application does not answer.
func notRespondingErr(app *appInfo) error {
	return fmt.Errorf("the application %s (pid %d) is not responding: it leaves calls unanswered (it may be stopped, hung or overloaded); other applications still work",
		app.name, app.pid)
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
	// NotResponding is set when the window's application has stopped
	// answering: the window is as last seen.
	NotResponding bool `json:"not_responding,omitempty"`
	ref           ref
	// dx, dy turn the application's boxes into screen positions (GTK 4,
	// and every toolkit under Wayland, gives boxes relative to the
	// window).
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
	// Table is set on a container that manages its descendants: its size
	// and the cells in view.
	Table *Table `json:"table,omitempty"`
	// Cell is set on a table's cell or column header: where it is.
	Cell *Cell `json:"cell,omitempty"`
	ref  ref
	st   states
}

// Table is the size of a table (a spreadsheet, a long list) and the part
// of it in view; rows and columns count from 1.
type Table struct {
	Rows    int `json:"rows"`
	Columns int `json:"columns"`
	// The cells in view: rows FirstRow..LastRow, columns
	// FirstColumn..LastColumn (0 when none is in view).
	FirstRow    int `json:"first_row,omitempty"`
	LastRow     int `json:"last_row,omitempty"`
	FirstColumn int `json:"first_column,omitempty"`
	LastColumn  int `json:"last_column,omitempty"`
	// Listed is how many of the cells in view are listed as controls: all
	// of them when there are at most maxListedCells; of a larger view (a
	// spreadsheet's), when its cells were read (CellsRead: the
	// observation asked for cells by role or name), those with text or
	// the focus. NotRead counts cells in view beyond the bound.
	Listed int `json:"listed"`
	// Selected counts the rows selected whole; SelectedRows names them
	// (from 1) when there are at most 20, in view or not.
	Selected     int   `json:"selected,omitempty"`
	SelectedRows []int `json:"selected_rows,omitempty"`
	CellsRead    bool  `json:"cells_read"`
	NotRead      int   `json:"not_read,omitempty"`
}

// Cell is a table cell's place: its table's id, row and column from 1
// (row 0 for a column header).
type Cell struct {
	Table  int `json:"table"`
	Row    int `json:"row"`
	Column int `json:"column"`
}

// maxListedCells is the most cells of one table listed one by one; a
// larger view (a spreadsheet) lists the cells with text or the focus, and
// any other is reached by its row and column.
const maxListedCells = 100

// Observation is what one look at a window saw.
type Observation struct {
	Window   Window    `json:"window"`
	Controls []Control `json:"controls"`
	// Fetch says how the tree was read: "cache", "cache+walk" or "walk";
	// Reused, that it was read before and its application has sent no
	// event that changes it since (its boxes, texts and values are read
	// again: they change without such events).
	Fetch  string `json:"fetch"`
	Reused bool   `json:"reused,omitempty"`
	// Nodes is how many accessible objects were read; Cut how many were
	// not, because of the bounds.
	Nodes int `json:"nodes"`
	Cut   int `json:"cut,omitempty"`
	// PNG is the screenshot, annotated when asked, if one was taken.
	PNG []byte `json:"-"`
	// Stale says why the screenshot may not show the window as it is
	// (it did not repaint in time after being raised); empty when fresh.
	Stale string `json:"stale,omitempty"`
	// NoScreenshot says why none was taken where one was asked for (a
	// compositor without screen capture).
	NoScreenshot string `json:"no_screenshot,omitempty"`
	// Frame is the screenshot's size and place on the screen (full
	// size: scale 1).
	Frame Frame `json:"-"`
	// Drawn are the ids marked on the screenshot.
	Drawn []int `json:"-"`
	// Timing of the parts, for the benchmark.
	Timing Timing `json:"-"`
	byID   map[int]*Control
}

// Timing splits an observation's time. The screenshot is taken (Capture)
// while the tree and details are read, so the parts add up to more than
// the whole.
type Timing struct {
	Tree, Details, Capture, Annotate, Encode time.Duration
	// All is the whole observation, from its first read to its PNG.
	All time.Duration
}

// DBus is the time spent in D-Bus calls.
func (t Timing) DBus() time.Duration { return t.Tree + t.Details }

// Total is the whole observation.
func (t Timing) Total() time.Duration { return t.All }

// Windows lists the applications' top-level windows that are showing.
func (d *Desktop) Windows(ctx context.Context) ([]Window, error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return d.windows(ctx)
}

// windows lists the windows of every application, each application's
// calls in flight together and waited on with its own deadline: an
// application that does not answer is listed as not responding (its
// windows as last seen) and costs the others nothing.
func (d *Desktop) windows(ctx context.Context) ([]Window, error) {
	buses, err := d.a.apps(ctx)
	if err != nil {
		return nil, err
	}
	type appCalls struct {
		app                     *appInfo
		b                       *batch
		name, kids, tk, version call
	}
	var live []appCalls
	var out []Window
	seen := map[string]bool{}
	for _, r := range buses {
		seen[r.Bus] = true
		app := d.apps[r.Bus]
		if app == nil {
			app = &appInfo{bus: r.Bus}
			pid, _ := d.a.pid(ctx, r.Bus)
			app.pid = d.hostPID(pid)
			d.apps[r.Bus] = app
			d.a.pids[r.Bus] = app.pid
		}
		if d.stillFrozen(app) {
			out = append(out, d.frozenWindows(app)...)
			continue
		}
		ac := appCalls{app: app, b: d.a.batch(ctx)}
		ac.name, ac.kids = ac.b.prop(r, ifAccessible, "Name"), ac.b.call(r, ifAccessible+".GetChildren")
		if app.toolkit == "" {
			ac.tk, ac.version = ac.b.prop(r, ifApplication, "ToolkitName"), ac.b.prop(r, ifApplication, "Version")
		}
		live = append(live, ac)
	}
	for bus, app := range d.apps {
		if !seen[bus] {
			app.endProbe()
			delete(d.apps, bus)
			delete(d.a.pids, bus)
		}
	}
	type winCalls struct {
		w                      Window
		role, name, state, ext call
	}
	type appWins struct {
		app *appInfo
		b   *batch
		ws  []winCalls
	}
	var pending []appWins
	for _, ac := range live {
		err := ac.b.wait()
		if errors.Is(err, errNotResponding) {
			d.notResponding(ac.app)
			out = append(out, d.frozenWindows(ac.app)...)
			continue
		}
		if err != nil {
			return nil, err
		}
		var kids []childRef
		if ac.name.storeVariant(&ac.app.name) != nil || ac.kids.store(&kids) != nil {
			continue // an application that quit while we looked
		}
		if ac.tk.c != nil {
			var tk, v string
			_ = ac.tk.storeVariant(&tk)
			_ = ac.version.storeVariant(&v)
			ac.app.toolkit = strings.TrimSpace(tk + " " + v)
			ac.app.gtk4 = tk == "GTK" && strings.HasPrefix(v, "4.")
			ac.app.gtk3 = strings.EqualFold(tk, "gtk") && strings.HasPrefix(v, "3.")
		}
		aw := appWins{app: ac.app, b: d.a.batch(ctx)}
		for _, k := range kids {
			r := k.ref()
			aw.ws = append(aw.ws, winCalls{w: Window{App: ac.app.name, PID: ac.app.pid, ref: r},
				role: aw.b.call(r, ifAccessible+".GetRole"), name: aw.b.prop(r, ifAccessible, "Name"),
				state: aw.b.call(r, ifAccessible+".GetState"), ext: aw.b.call(r, ifComponent+".GetExtents", uint32(0))})
		}
		pending = append(pending, aw)
	}
	var xs []xwin
	for _, aw := range pending {
		err := aw.b.wait()
		if errors.Is(err, errNotResponding) {
			d.notResponding(aw.app)
			out = append(out, d.frozenWindows(aw.app)...)
			continue
		}
		if err != nil {
			return nil, err
		}
		var mine []Window
		for _, wc := range aw.ws {
			var role uint32
			var words []uint32
			var e extents
			w := wc.w
			if errors.Join(wc.role.store(&role), wc.name.storeVariant(&w.Title), wc.state.store(&words), wc.ext.store(&e)) != nil {
				continue
			}
			st := statesOf(words)
			if !st.has(stShowing) && !st.has(stVisible) {
				continue
			}
			w.Role, w.Active, w.Bounds = roleName(role), st.has(stActive), e.rect()
			if aw.app.gtk4 && w.Bounds.X == 0 && w.Bounds.Y == 0 && !d.x.windowRelative() {
				// GTK 4 gives boxes relative to the window: its X window
				// says where that is (under Wayland place does it for
				// every toolkit).
				if xs == nil {
					xs, _ = d.x.topLevels()
				}
				if xw, ok := matchWindow(xs, w); ok {
					w.dx, w.dy = xw.box.X+(xw.box.W-w.Bounds.W)/2, xw.box.Y+(xw.box.H-w.Bounds.H)/2
					w.Bounds = w.Bounds.add(w.dx, w.dy)
				}
			}
			w.ID = d.wins.id(w.ref)
			mine = append(mine, w)
		}
		aw.app.windows = mine
		out = append(out, mine...)
	}
	d.place(out)
	return out, nil
}

// frozenWindows are a not-responding application's windows as last seen,
// or, if it was never seen answering, its X windows.
func (d *Desktop) frozenWindows(app *appInfo) []Window {
	var out []Window
	for _, w := range app.windows {
		w.NotResponding = true
		out = append(out, w)
	}
	if len(out) > 0 {
		return out
	}
	xs, _ := d.x.topLevels()
	for _, x := range xs {
		if int(x.pid) == app.pid && app.pid > 0 {
			r := ref{app.bus, dbus.ObjectPath(fmt.Sprintf("/x11/%d", x.id))}
			name := app.name
			if name == "" {
				name = fmt.Sprintf("pid %d", app.pid)
			}
			out = append(out, Window{ID: d.wins.id(r), Title: x.title, App: name, PID: app.pid, Role: "frame",
				Bounds: x.box, NotResponding: true, ref: r})
		}
	}
	return out
}

// window finds a window by id; "" is the newest dialog, else the active
// window, else the newest.
func (d *Desktop) window(ctx context.Context, id string) (Window, []Window, error) {
	ws, err := d.windows(ctx)
	if err != nil {
		return Window{}, nil, err
	}
	w, err := d.pickWindow(ws, id)
	if err == nil && w.NotResponding {
		// An application busy at work (opening a document on a loaded
		// machine) is waited on when its own window is wanted.
		if app := d.apps[w.ref.Bus]; app != nil && d.awaitBusy(ctx, app) {
			if ws, err = d.windows(ctx); err != nil {
				return Window{}, nil, err
			}
			w, err = d.pickWindow(ws, id)
		}
	}
	return w, ws, err
}

// pickWindow finds window id among ws; "" is the newest dialog, else the
// active window, else the newest.
func (d *Desktop) pickWindow(ws []Window, id string) (Window, error) {
	if id == "" {
		if len(d.opts.App) > 0 {
			var mine []Window
			for _, w := range ws {
				if d.ownWindow(w) {
					mine = append(mine, w)
				}
			}
			if len(mine) == 0 {
				return Window{}, fmt.Errorf("%s has no window open: launch it with launch_app", filepath.Base(d.opts.App[0]))
			}
			ws = mine
		}
		if len(ws) == 0 {
			return Window{}, errors.New("no application window is open: launch one with launch_app" + d.installedNote())
		}
		// A dialog comes first: it blocks its application until answered.
		for i := len(ws) - 1; i >= 0; i-- {
			if dialogRoles[ws[i].Role] {
				return ws[i], nil
			}
		}
		best := ws[len(ws)-1]
		for _, w := range ws {
			if w.Active {
				best = w
			}
		}
		return best, nil
	}
	for _, w := range ws {
		if w.ID == id {
			return w, nil
		}
	}
	if _, known := d.wins.byID[id]; known {
		return Window{}, fmt.Errorf("window %s is gone (closed, or its application quit); open windows: %s", id, windowList(ws))
	}
	return Window{}, fmt.Errorf("no window %q; open windows: %s", id, windowList(ws))
}

// ownWindow reports whether w belongs to the application of Options.App:
// a process this desktop launched (or one of its descendants), or an
// application of that name.
func (d *Desktop) ownWindow(w Window) bool {
	if d.launchedWindow(w) {
		return true
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
		s := fmt.Sprintf("%s %q (%s)", w.ID, w.Title, w.App)
		if w.NotResponding {
			s += " not responding"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ObserveOptions pick what an observation includes.
type ObserveOptions struct {
	Screenshot bool // capture the window
	Marks      bool // draw the controls' boxes and ids on the capture
	// Page picks which controls are marked on the screenshot: those its
	// text lists. Empty marks them all.
	Page Page
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

// screenArea is the part of w on the screen.
func (d *Desktop) screenArea(w Window) Rect {
	return clip(w.Bounds, d.x.area())
}

func (d *Desktop) observe(ctx context.Context, w Window, o ObserveOptions) (*Observation, error) {
	app := d.apps[w.ref.Bus]
	if w.NotResponding || app == nil || d.stillFrozen(app) {
		if app == nil {
			return nil, fmt.Errorf("window %s %q is gone: its application quit", w.ID, w.Title)
		}
		return nil, fmt.Errorf("window %s %q: %w", w.ID, w.Title, notRespondingErr(app))
	}
	obs := &Observation{Window: w, byID: map[int]*Control{}}
	area := d.screenArea(w)
	s := scope{root: w.ref, area: area.add(-w.dx, -w.dy), noShowing: app.gtk4}
	t0 := time.Now()
	// The screenshot (raising the window if covered, and waiting for it
	// to repaint) is taken while the tree and details are read: neither
	// depends on the other, and the reads mostly wait on the application.
	var shooting chan shot
	if o.Screenshot {
		shooting = make(chan shot, 1)
		go func() { shooting <- d.shoot(w) }()
		defer func() {
			if shooting != nil {
				<-shooting // returning early: d.x is free again once it is done
			}
		}()
	}
	// A tree read before is reused while no object it read has sent an
	// event that changes trees since (GTK 4 is read afresh: what it shows
	// follows its objects' boxes, which change without events). Events of
	// objects it did not read (a spreadsheet's cells, another window's
	// controls, what is under a hidden container) leave it as it is; the
	// objects it read that sent one are read again in place, unless their
	// children changed or they were shown or hidden.
	version, all := d.a.version(w.ref.Bus), d.a.allEvents(w.ref.Bus)
	rt, ok := d.trees[w.ref]
	reuse := ok && rt.area == s.area && time.Since(rt.at) < maxTreeAge &&
		!rt.loading && !app.gtk4 && !d.noReuse && d.opts.Fetch != "walk"
	if reuse && rt.version != version {
		changed, children, all := d.a.changedSince(w.ref.Bus, rt.version, func(p dbus.ObjectPath) bool {
			return rt.t.taken[ref{w.ref.Bus, p}]
		})
		reuse = !children && !all
		if reuse && len(changed) > 0 {
			var err error
			if reuse, err = d.a.refresh(ctx, s, rt.t, changed); err != nil {
				return nil, d.appErr(w, app, err)
			}
		}
		if reuse {
			rt.version = version
			d.trees[w.ref] = rt
		}
	}
	t := rt.t
	// The boxes read last time hold while the application has sent no
	// event of any kind since and the window has not moved.
	var boxes map[ref]Rect
	if reuse && keepsBoxes(app) && rt.boxes != nil && rt.boxesAt == all && rt.bounds == w.Bounds {
		boxes = rt.boxes
	}
	if !reuse {
		var err error
		if t, err = d.a.fetchTree(ctx, s, d.opts.Fetch != "walk"); err != nil {
			return nil, d.appErr(w, app, err)
		}
		rt = readTree{t: t, version: version, area: s.area, at: time.Now(), loading: docLoading(t) != ""}
		d.trees[w.ref] = rt
	}
	if app.name == "soffice" {
		d.placeLibreOffice(ctx, w, t)
	}
	obs.Fetch, obs.Nodes, obs.Cut, obs.Reused = t.fetch, t.read, t.cut, reuse
	t1 := time.Now()
	var cands []*node
	for _, n := range t.nodes[1:] {
		if candidate(n) || n.states.has(stManagesDescendants) {
			cands = append(cands, n)
		}
	}
	dets, err := d.a.details(ctx, cands, boxes)
	if err != nil {
		return nil, d.appErr(w, app, err)
	}
	if keepsBoxes(app) && boxes == nil && !d.noReuse {
		rt.boxes, rt.boxesAt, rt.bounds = make(map[ref]Rect, len(cands)), all, w.Bounds
		for i, n := range cands {
			rt.boxes[n.ref] = dets[i].box
		}
		d.trees[w.ref] = rt
	}
	grids := map[*node]*grid{}
	for _, n := range t.managed {
		g, err := d.a.readGrid(ctx, n, s.area, o.Page.wantsCells())
		if err != nil {
			if gone(err) {
				continue // the container went away while we looked
			}
			return nil, d.appErr(w, app, err)
		}
		grids[n] = g
		obs.Nodes += len(g.cells) + len(g.headers)
		obs.Cut += g.cut
	}
	obs.Timing.Tree, obs.Timing.Details = t1.Sub(t0), time.Since(t1)
	hidden := d.a.inEmptyMenuBars(ctx, t)
	for i, n := range cands {
		det := dets[i]
		g := grids[n]
		if !det.box.overlaps(s.area) || !(control(n, det) || g != nil) || hidden[n.ref] {
			continue
		}
		c := d.newControl(n, n.ref, det, w)
		if g == nil {
			obs.Controls = append(obs.Controls, c)
			continue
		}
		d.addGrid(obs, c, n, g, w)
	}
	for i := range obs.Controls {
		obs.byID[obs.Controls[i].ID] = &obs.Controls[i]
	}
	d.last[w.ref] = obs
	if o.Screenshot {
		sh := <-shooting
		shooting = nil
		if err := d.mark(obs, o, sh); err != nil {
			return nil, err
		}
		if sh.err == nil {
			obs.Frame = newFrame(sh.area, 1)
			obs.Frame.Window = w.ID
			d.frames[w.ref] = obs.Frame
		}
	}
	obs.Timing.All = time.Since(t0)
	return obs, nil
}

// newControl makes the control of a node, its box on the screen, its id
// that of r.
func (d *Desktop) newControl(n *node, r ref, det details, w Window) Control {
	c := Control{ID: d.ids.id(r), Role: roleName(n.role), Name: cleanName(n.name), States: n.states.shown(),
		Bounds: det.box.add(w.dx, w.dy), Actions: det.actions, Value: det.value, ref: r, st: n.states}
	if t := strings.TrimSpace(det.text); t != "" && t != c.Name {
		c.Text = det.text
	}
	return c
}

// addGrid adds a managed container, its column headers and its cells in
// view (all of them up to maxListedCells, else those with text or the
// focus).
func (d *Desktop) addGrid(obs *Observation, c Control, n *node, g *grid, w Window) {
	inView := 0
	if g.r0 >= 0 {
		inView = (g.r1 - g.r0 + 1) * (g.c1 - g.c0 + 1)
	}
	listAll := inView <= maxListedCells
	tab := &Table{Rows: g.rows, Columns: g.cols, NotRead: g.cut, CellsRead: len(g.cells) > 0 || inView == 0, Selected: g.selected}
	for _, r := range g.selectedRows {
		tab.SelectedRows = append(tab.SelectedRows, r+1)
	}
	if g.r0 >= 0 {
		tab.FirstRow, tab.LastRow, tab.FirstColumn, tab.LastColumn = g.r0+1, g.r1+1, g.c0+1, g.c1+1
	}
	c.Table = tab
	obs.Controls = append(obs.Controls, c)
	add := func(it gridItem, r ref) {
		cc := d.newControl(it.node, r, it.det, w)
		if it.col >= 0 {
			cc.Cell = &Cell{Table: c.ID, Row: it.row + 1, Column: it.col + 1}
		}
		obs.Controls = append(obs.Controls, cc)
	}
	for _, h := range g.headers {
		add(h, h.node.ref)
	}
	for _, it := range g.cells {
		if !listAll && strings.TrimSpace(it.det.text) == "" && !it.node.states.has(stFocused) && !it.node.states.has(stSelected) {
			continue
		}
		add(it, cellRef(n.ref, it.row, it.col))
		tab.Listed++
	}
}

// appErr says which window's application failed.
func (d *Desktop) appErr(w Window, app *appInfo, err error) error {
	if errors.Is(err, errNotResponding) {
		d.notResponding(app)
		return fmt.Errorf("window %s %q: %w", w.ID, w.Title, notRespondingErr(app))
	}
	if gone(err) {
		return fmt.Errorf("window %s %q is gone: its application closed it or quit (%v)", w.ID, w.Title, err)
	}
	return fmt.Errorf("read window %s %q: %w", w.ID, w.Title, err)
}

// shot is a window's screenshot as taken, before its marks.
type shot struct {
	img   *image.RGBA
	area  Rect // the part of the screen it shows
	stale string
	took  time.Duration
	err   error
}

// shoot takes the window's screenshot, raising it first if another
// window covers it (and waiting for it to repaint). A display that
// cannot capture says so in err (errCannot).
func (d *Desktop) shoot(w Window) (sh shot) {
	t0 := time.Now()
	defer func() { sh.took = time.Since(t0) }()
	if xw, ok := d.xwindow(w); ok {
		if sh.stale, sh.err = d.x.bringToFront(xw, repaintTimeout); sh.err != nil {
			return sh
		}
	}
	sh.img, sh.area, sh.err = d.x.capture(w.Bounds)
	return sh
}

// mark draws on the screenshot the marks of the controls the page lists
// and encodes it.
func (d *Desktop) mark(obs *Observation, o ObserveOptions, sh shot) error {
	obs.Stale = sh.stale
	obs.Timing.Capture = sh.took
	if errors.Is(sh.err, errCannot) {
		obs.NoScreenshot = sh.err.Error()
		return nil
	}
	if sh.err != nil {
		return sh.err
	}
	img, area := sh.img, sh.area
	t1 := time.Now()
	if o.Marks {
		_, shown, err := obs.Page(o.Page)
		if err != nil {
			return err
		}
		ms := make([]mark, 0, len(shown))
		for _, c := range shown {
			b := c.Bounds
			ms = append(ms, mark{c.ID, image.Rect(b.X-area.X, b.Y-area.Y, b.X-area.X+b.W, b.Y-area.Y+b.H)})
		}
		obs.Drawn = annotate(img, ms)
	}
	t2 := time.Now()
	var err error
	if obs.PNG, err = encodePNG(img); err != nil {
		return err
	}
	obs.Timing.Annotate, obs.Timing.Encode = t2.Sub(t1), time.Since(t2)
	return nil
}

// repaintTimeout bounds the wait for a raised window to repaint what was
// covered; past it the screenshot is taken and marked stale.
const repaintTimeout = 2 * time.Second

// xwindow finds the X window of an AT-SPI window: same process and
// title, else the only window of that process.
func (d *Desktop) xwindow(w Window) (xwin, bool) {
	xs, err := d.x.topLevels()
	if err != nil {
		return xwin{}, false
	}
	return matchWindow(xs, w)
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

// pngImage decodes a screenshot, for tests.
func pngImage(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
