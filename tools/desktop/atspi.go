package desktop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godbus/dbus/v5"
)

// AT-SPI's D-Bus names.
const (
	ifAccessible   = "org.a11y.atspi.Accessible"
	ifApplication  = "org.a11y.atspi.Application"
	ifComponent    = "org.a11y.atspi.Component"
	ifAction       = "org.a11y.atspi.Action"
	ifText         = "org.a11y.atspi.Text"
	ifEditableText = "org.a11y.atspi.EditableText"
	ifValue        = "org.a11y.atspi.Value"
	ifSelection    = "org.a11y.atspi.Selection"
	ifTable        = "org.a11y.atspi.Table"
	ifCache        = "org.a11y.atspi.Cache"
	rootPath       = dbus.ObjectPath("/org/a11y/atspi/accessible/root")
	cachePath      = dbus.ObjectPath("/org/a11y/atspi/cache")
	nullPath       = dbus.ObjectPath("/org/a11y/atspi/null")
)

// ref names an accessible object: the application's bus name and the
// object's path.
type ref struct {
	Bus  string
	Path dbus.ObjectPath
}

func (r ref) String() string { return r.Bus + string(r.Path) }

// a11y is a connection to the AT-SPI bus of one session.
type a11y struct {
	conn *dbus.Conn
	// pids are the applications' process ids by bus name, for telling a
	// busy application from a frozen one.
	pids map[string]int
	// events are each application's object events (children, states,
	// properties changed) and the objects that sent them: a window's tree
	// read when the count was n still holds while no object it read has
	// sent one since.
	mu     sync.Mutex
	events map[string]*appEvents
	// calls counts the method calls sent, and trips the waits for them
	// (calls sent together cost one trip), for the benchmark: unlike
	// time, these counts do not change with the machine's load.
	calls, trips atomic.Uint64
	// wake is closed (and replaced) at every event, for those waiting for
	// a window to change (launch_app, wait_for).
	wake chan struct{}
}

// changes returns a channel closed at the next accessibility event.
func (a *a11y) changes() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wake
}

// The object events Saucer registers for: those that may change a
// tree's shape, states or names, and boxes moved or resized; and a
// document's end of loading (what launch_app waits for in a browser).
var treeEvents = []string{"object:children-changed", "object:state-changed", "object:property-change", "object:bounds-changed",
	"document:load-complete", "document:load-stopped"}

// appEvents are one application's object events: how many so far, and
// the latest at which each object sent one.
type appEvents struct {
	n     uint64 // the events that may change a tree
	paths map[dbus.ObjectPath]objectEvent
	// floor: the objects of events up to it are forgotten (more than
	// maxEventPaths objects sent events).
	floor uint64
	// all counts every event, boxes moved or resized included.
	all uint64
}

// objectEvent is the count at one object's latest event, and at its
// latest event that changed its children.
type objectEvent struct{ seq, children uint64 }

// maxEventPaths bounds the objects remembered per application.
const maxEventPaths = 4096

// version is the count of application bus's object events so far.
func (a *a11y) version(bus string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.events[bus]; e != nil {
		return e.n
	}
	return 0
}

// allEvents is the count of every object event application bus has
// sent so far, boxes moved or resized included.
func (a *a11y) allEvents(bus string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.events[bus]; e != nil {
		return e.all
	}
	return 0
}

// changedSince says which objects read (those read says yes to) sent an
// object event after the application's count was v, and whether any of
// them changed its children; all is set when that cannot be told (the
// objects of those events are forgotten).
func (a *a11y) changedSince(bus string, v uint64, read func(dbus.ObjectPath) bool) (changed []dbus.ObjectPath, children, all bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.events[bus]
	if e == nil || e.n == v {
		return nil, false, false
	}
	if v < e.floor {
		return nil, false, true
	}
	for p, ev := range e.paths {
		if ev.seq > v && read(p) {
			changed = append(changed, p)
			children = children || ev.children > v
		}
	}
	return changed, children, false
}

// DeliverSignal records the object events the applications send. The
// connection calls it from the goroutine that reads the bus, before it
// reads any later message: once a call to an application is answered,
// every event that application sent before answering is counted (D-Bus
// keeps one sender's messages in order), so an observation never
// reuses what an event it could have seen says has changed. Every
// event wakes those waiting for a window to change.
func (a *a11y) DeliverSignal(iface, member string, sig *dbus.Signal) {
	if !strings.HasPrefix(iface, "org.a11y.atspi.Event.") {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if iface == "org.a11y.atspi.Event.Object" {
		a.countLocked(member, sig)
	}
	// Waiters wake once the event is counted, so that what they read
	// next knows of it.
	close(a.wake)
	a.wake = make(chan struct{})
}

// countLocked records an object event of the kinds that change a tree or
// move a box. a.mu is held.
func (a *a11y) countLocked(member string, sig *dbus.Signal) {
	switch member {
	case "ChildrenChanged", "StateChanged", "PropertyChange", "BoundsChanged":
	default:
		return
	}
	e := a.events[sig.Sender]
	if e == nil {
		e = &appEvents{paths: map[dbus.ObjectPath]objectEvent{}}
		a.events[sig.Sender] = e
	}
	e.all++
	if member == "BoundsChanged" {
		return // not a tree's change
	}
	e.n++
	if _, ok := e.paths[sig.Path]; !ok && len(e.paths) >= maxEventPaths {
		clear(e.paths)
		e.floor = e.n - 1
	}
	ev := e.paths[sig.Path]
	ev.seq = e.n
	if member == "ChildrenChanged" {
		ev.children = e.n
	}
	e.paths[sig.Path] = ev
}

// dialA11y finds the AT-SPI bus through org.a11y.Bus on the session bus
// (sessionAddr, or the environment's when empty) and connects to it. ctx
// bounds the dialling only: the connection lives until Close.
func dialA11y(ctx context.Context, sessionAddr, addr string) (*a11y, error) {
	if addr == "" {
		if sessionAddr == "" {
			sessionAddr = envSessionBus()
		}
		if sessionAddr == "" {
			return nil, errors.New("no session D-Bus: DBUS_SESSION_BUS_ADDRESS is not set (start the desktop session, or set it)")
		}
		var err error
		if addr, err = a11yBusAddress(ctx, sessionAddr); err != nil {
			return nil, err
		}
	}
	a := &a11y{pids: map[string]int{}, events: map[string]*appEvents{}, wake: make(chan struct{})}
	conn, err := dbus.Connect(addr, dbus.WithContext(context.WithoutCancel(ctx)), dbus.WithSignalHandler(a))
	if err != nil {
		return nil, fmt.Errorf("connect to the accessibility bus %s: %w", addr, err)
	}
	a.conn = conn
	// Applications send the events some client listens for (and GTK's
	// atk-bridge serves its object cache only once one does): Saucer
	// listens for those that change a tree, to reuse a window's tree
	// while its application sends none, for moved boxes, to reuse a
	// GTK 3 window's boxes while it sends no event at all, and for
	// documents' loading, which launch_app waits on.
	for _, iface := range []string{"org.a11y.atspi.Event.Object", "org.a11y.atspi.Event.Document"} {
		if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchInterface(iface)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("listen for accessibility events: %w", err)
		}
	}
	for _, ev := range treeEvents {
		_ = conn.Object("org.a11y.atspi.Registry", "/org/a11y/atspi/registry").
			CallWithContext(ctx, "org.a11y.atspi.Registry.RegisterEvent", 0, ev).Err
	}
	return a, nil
}

// a11yBusAddress asks the session bus for the accessibility bus's address.
func a11yBusAddress(ctx context.Context, sessionAddr string) (string, error) {
	sess, err := dbus.Connect(sessionAddr, dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("connect to the session D-Bus %s: %w", sessionAddr, err)
	}
	defer sess.Close()
	var addr string
	if err := sess.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return "", fmt.Errorf("ask org.a11y.Bus for the accessibility bus (is at-spi2-core installed and its bus launcher running?): %w", err)
	}
	return addr, nil
}

func (a *a11y) Close() error { return a.conn.Close() }

func (a *a11y) obj(r ref) dbus.BusObject { return a.conn.Object(r.Bus, r.Path) }

// An application that leaves Saucer's calls unanswered is looked at
// every appTimeout: a stopped process (SIGSTOP, a debugger) is "not
// responding" at once. One that is at work is waited on, up to
// appBusyLimit in all: since the last look it used the processor, or
// one of its threads waited in the run queue for one (on a loaded
// machine a process at work may get no processor for a while: a
// LibreOffice opening a document at load 40 is slow, not frozen), or a
// thread is runnable or in an uninterruptible wait now. One that does
// none of these for appIdleLimit (a deadlock, or a wait on a peer that
// never answers) is not responding; on a machine with more runnable
// threads than processors that limit grows with the excess, up to
// appBusyLimit/3, since there the process may only wait for a starved
// peer (the bus daemon that has yet to hand it Saucer's call, the X
// server).
const (
	appTimeout   = 400 * time.Millisecond
	appIdleLimit = 2 * time.Second
	appBusyLimit = 60 * time.Second
)

// activity follows one process between looks, to tell a busy one from a
// frozen one.
type activity struct {
	pid  int
	last procSample
	idle time.Duration // unanswered and doing nothing, so far
}

func newActivity(pid int) *activity { return &activity{pid: pid, last: sampleProc(pid)} }

// look is called every appTimeout while calls are unanswered; it says
// whether the process is stopped, or has been idle past appIdleLimit.
func (p *activity) look() (frozen bool) {
	now := sampleProc(p.pid)
	defer func() { p.last = now }()
	switch {
	case now.stopped:
		return true
	case now.working || now.cpu > p.last.cpu || now.queued > p.last.queued:
		p.idle = 0
		return false
	}
	p.idle += appTimeout
	return p.idle >= idleLimit()
}

// idleLimit is appIdleLimit times the machine's runnable threads per
// processor (procs_running in /proc/stat, which counts the looking
// thread too), at least once and at most up to appBusyLimit/3.
func idleLimit() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return appIdleLimit
	}
	_, rest, _ := strings.Cut(string(b), "\nprocs_running ")
	line, _, _ := strings.Cut(rest, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n <= runtime.NumCPU() {
		return appIdleLimit
	}
	return min(appIdleLimit*time.Duration(n)/time.Duration(runtime.NumCPU()), appBusyLimit/3)
}

// answered resets the idle time: the process answered a call.
func (p *activity) answered() { p.idle = 0 }

// procSample is what /proc says of a process's threads at one moment.
type procSample struct {
	stopped bool   // its main thread is stopped (T, or t under a tracer)
	working bool   // a thread is runnable (R) or in an uninterruptible wait (D)
	cpu     uint64 // nanoseconds its threads have run
	queued  uint64 // nanoseconds its threads have waited for a processor
}

// sampleProc reads the state and scheduler figures of each thread of
// process pid (zero when unknown: another namespace's, or gone).
func sampleProc(pid int) procSample {
	var s procSample
	if pid <= 0 {
		return s
	}
	if f := procStat(pid); len(f) > 0 && (f[0] == "T" || f[0] == "t") {
		s.stopped = true
		return s
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, t.Name())
		if b, err := os.ReadFile(dir + "stat"); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'R' || b[i+2] == 'D') {
				s.working = true
			}
		}
		// schedstat: time on a processor, time waiting for one, slices.
		if b, err := os.ReadFile(dir + "schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 2 {
				run, _ := strconv.ParseUint(f[0], 10, 64)
				wait, _ := strconv.ParseUint(f[1], 10, 64)
				s.cpu, s.queued = s.cpu+run, s.queued+wait
			}
		}
	}
	return s
}

// errNotResponding is a batch given up on.
var errNotResponding = errors.New("not responding")

// batch is a set of calls to one application, sent together so that they
// share a round trip's latency and waited on together with the
// application's deadline (appTimeout without an answer).
type batch struct {
	a      *a11y
	ctx    context.Context
	cancel context.CancelFunc
	calls  []call
	bus    string // the application's (the first call's)
}

func (a *a11y) batch(ctx context.Context) *batch {
	ctx, cancel := context.WithCancel(ctx)
	return &batch{a: a, ctx: ctx, cancel: cancel}
}

// call is one method call in flight.
type call struct {
	c *dbus.Call
	// answered is set once its batch has seen the reply (dbus.Call's Done
	// delivers it once).
	answered *bool
}

func (b *batch) call(r ref, method string, args ...any) call {
	if b.bus == "" {
		b.bus = r.Bus
	}
	b.a.calls.Add(1)
	c := call{b.a.obj(r).GoWithContext(b.ctx, method, 0, make(chan *dbus.Call, 1), args...), new(bool)}
	b.calls = append(b.calls, c)
	return c
}

func (b *batch) prop(r ref, iface, name string) call {
	return b.call(r, "org.freedesktop.DBus.Properties.Get", iface, name)
}

// wait waits for every call of the batch. It returns errNotResponding
// when the application is stopped, or idle or busy past its limits with
// calls unanswered (the calls are then abandoned), or the context's
// error.
func (b *batch) wait() error {
	defer b.cancel()
	if len(b.calls) > 0 {
		b.a.trips.Add(1)
	}
	timer := time.NewTimer(appTimeout)
	defer timer.Stop()
	act := newActivity(b.a.pids[b.bus])
	limit := time.Now().Add(appBusyLimit)
	for _, c := range b.calls {
		for waiting := true; waiting; {
			select {
			case <-c.c.Done:
				*c.answered, waiting = true, false
				act.answered()
				timer.Reset(appTimeout)
			case <-timer.C:
				if act.look() || time.Now().After(limit) {
					return errNotResponding
				}
				timer.Reset(appTimeout)
			case <-b.ctx.Done():
				return b.ctx.Err()
			}
		}
	}
	return nil
}

// procStat is /proc/PID/stat's fields after the command, which may hold
// spaces and parentheses (nil when unknown).
func procStat(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// do sends one call and waits for it with the application's deadline.
func (a *a11y) do(ctx context.Context, r ref, method string, out any, args ...any) error {
	b := a.batch(ctx)
	c := b.call(r, method, args...)
	if err := b.wait(); err != nil {
		return err
	}
	if out == nil {
		return c.c.Err
	}
	return c.store(out)
}

// get reads a property with the application's deadline.
func (a *a11y) get(ctx context.Context, r ref, iface, name string, out any) error {
	var v dbus.Variant
	if err := a.do(ctx, r, "org.freedesktop.DBus.Properties.Get", &v, iface, name); err != nil {
		return err
	}
	return v.Store(out)
}

func (c call) store(v ...any) error {
	if c.c == nil {
		return errors.New("no call was made")
	}
	if !*c.answered {
		return errNotResponding // abandoned by its batch
	}
	if c.c.Err != nil {
		return c.c.Err
	}
	return c.c.Store(v...)
}

// storeVariant reads a Properties.Get reply.
func (c call) storeVariant(v any) error {
	var vr dbus.Variant
	if err := c.store(&vr); err != nil {
		return err
	}
	return vr.Store(v)
}

type childRef struct {
	Bus  string
	Path dbus.ObjectPath
}

func (c childRef) ref() ref { return ref{c.Bus, c.Path} }

// ifaces is the set of AT-SPI interfaces an object implements, of those
// Saucer uses.
type ifaces uint16

const (
	hasComponent ifaces = 1 << iota
	hasAction
	hasText
	hasEditableText
	hasValue
	hasSelection
	hasTable
)

var ifaceBits = map[string]ifaces{
	ifComponent: hasComponent, ifAction: hasAction, ifText: hasText, ifEditableText: hasEditableText,
	ifValue: hasValue, ifSelection: hasSelection, ifTable: hasTable,
}

func ifacesOf(names []string) ifaces {
	var s ifaces
	for _, n := range names {
		s |= ifaceBits[n]
	}
	return s
}

// cacheItem is one entry of org.a11y.atspi.Cache.GetItems in AT-SPI 2.x's
// current shape: self, application, parent, index in parent, child
// count, interfaces, name, role, description, state.
type cacheItem struct {
	Self        childRef
	App         childRef
	Parent      childRef
	Index       int32
	ChildCount  int32
	Ifaces      []string
	Name        string
	Role        uint32
	Description string
	State       []uint32
}

// cached reads an application's object cache in one call: what the
// toolkit's bridge holds, which may be part of the tree only (GTK 4
// caches an object once something has asked for it; at-spi2-atk leaves
// out the children of containers that manage their descendants). ok is
// false when the application offers no cache.
func (a *a11y) cached(ctx context.Context, bus string) (items []cacheItem, ok bool, err error) {
	b := a.batch(ctx)
	c := b.call(ref{bus, cachePath}, ifCache+".GetItems")
	if err := b.wait(); err != nil {
		return nil, false, err
	}
	if c.c.Err != nil {
		var de dbus.Error
		if errors.As(c.c.Err, &de) && (strings.Contains(de.Name, "UnknownMethod") || strings.Contains(de.Name, "UnknownObject") || strings.Contains(de.Name, "UnknownInterface")) {
			return nil, false, nil
		}
		return nil, false, c.c.Err
	}
	if err := c.c.Store(&items); err != nil {
		return nil, false, nil // an older cache shape: walk instead
	}
	return items, true, nil
}

// Rect is a box on the screen, in pixels.
type Rect struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

func (r Rect) empty() bool { return r.W <= 0 || r.H <= 0 }

func (r Rect) centre() (int, int) { return r.X + r.W/2, r.Y + r.H/2 }

func (r Rect) add(dx, dy int) Rect { return Rect{r.X + dx, r.Y + dy, r.W, r.H} }

// overlaps reports whether r has an area and shares some of it with area.
func (r Rect) overlaps(area Rect) bool { return !r.empty() && !clip(r, area).empty() }

func (r Rect) contains(x, y int) bool { return x >= r.X && x < r.X+r.W && y >= r.Y && y < r.Y+r.H }

type extents struct{ X, Y, W, H int32 }

func (e extents) rect() Rect { return Rect{int(e.X), int(e.Y), int(e.W), int(e.H)} }

// apps lists the applications on the bus. The registry answers, not the
// applications, so a hung application does not hold this up.
func (a *a11y) apps(ctx context.Context) ([]ref, error) {
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	a.calls.Add(1)
	a.trips.Add(1)
	var kids []childRef
	if err := a.conn.Object("org.a11y.atspi.Registry", rootPath).CallWithContext(ctx, ifAccessible+".GetChildren", 0).Store(&kids); err != nil {
		return nil, fmt.Errorf("list the applications on the accessibility bus: %w", err)
	}
	out := make([]ref, len(kids))
	for i, k := range kids {
		out[i] = k.ref()
	}
	return out, nil
}

// registryTimeout bounds a call to the bus itself or the AT-SPI registry
// (never to an application): they answer at once unless the session is
// broken.
const registryTimeout = 5 * time.Second

// pid is the process id of the application at bus, from the bus daemon.
func (a *a11y) pid(ctx context.Context, bus string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	a.calls.Add(1)
	a.trips.Add(1)
	var pid uint32
	err := a.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, bus).Store(&pid)
	return int(pid), err
}

// gone reports whether err says the object or its application no longer
// exists.
func gone(err error) bool {
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.ServiceUnknown",
			"org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.UnknownMethod",
			"org.freedesktop.DBus.Error.NameHasNoOwner":
			return true
		}
	}
	return false
}
