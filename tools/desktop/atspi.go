package desktop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

// AT-SPI's D-Bus names.
const (
	ifAccessible   = "org.a11y.atspi.Accessible"
	ifComponent    = "org.a11y.atspi.Component"
	ifAction       = "org.a11y.atspi.Action"
	ifText         = "org.a11y.atspi.Text"
	ifEditableText = "org.a11y.atspi.EditableText"
	ifValue        = "org.a11y.atspi.Value"
	ifSelection    = "org.a11y.atspi.Selection"
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
}

// dialA11y finds the AT-SPI bus through org.a11y.Bus on the session bus
// (sessionAddr, or the environment's when empty) and connects to it.
func dialA11y(ctx context.Context, sessionAddr string) (*a11y, error) {
	var (
		sess *dbus.Conn
		err  error
	)
	if sessionAddr == "" {
		sessionAddr = envSessionBus()
	}
	if sessionAddr == "" {
		return nil, errors.New("no session D-Bus: DBUS_SESSION_BUS_ADDRESS is not set (start the desktop session, or set it)")
	}
	sess, err = dbus.Connect(sessionAddr, dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("connect to the session D-Bus %s: %w", sessionAddr, err)
	}
	defer sess.Close()
	var addr string
	if err := sess.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return nil, fmt.Errorf("ask org.a11y.Bus for the accessibility bus (is at-spi2-core installed and its bus launcher running?): %w", err)
	}
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("connect to the accessibility bus %s: %w", addr, err)
	}
	// Toolkit bridges (GTK's atk-bridge) serve their object cache only
	// once some client listens for events; registering one turns it on in
	// every application, those that start later included.
	_ = conn.Object("org.a11y.atspi.Registry", "/org/a11y/atspi/registry").
		CallWithContext(ctx, "org.a11y.atspi.Registry.RegisterEvent", 0, "object:children-changed").Err
	return &a11y{conn: conn}, nil
}

func (a *a11y) Close() error { return a.conn.Close() }

func (a *a11y) obj(r ref) dbus.BusObject { return a.conn.Object(r.Bus, r.Path) }

// call is one method call in flight.
type call struct {
	c *dbus.Call
}

// goCall starts a method call without waiting for its reply, so that many
// calls share one round trip's latency.
func (a *a11y) goCall(ctx context.Context, r ref, method string, args ...any) call {
	return call{a.obj(r).GoWithContext(ctx, method, 0, make(chan *dbus.Call, 1), args...)}
}

func (c call) store(v ...any) error {
	<-c.c.Done
	if c.c.Err != nil {
		return c.c.Err
	}
	return c.c.Store(v...)
}

func (a *a11y) getProp(ctx context.Context, r ref, iface, name string) call {
	return a.goCall(ctx, r, "org.freedesktop.DBus.Properties.Get", iface, name)
}

// storeVariant waits for a Properties.Get reply.
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

// node is one accessible object as fetched.
type node struct {
	ref      ref
	parent   ref
	role     uint32
	name     string
	states   states
	ifaces   []string
	children []ref
	depth    int
}

func (n *node) has(iface string) bool {
	for _, i := range n.ifaces {
		if i == iface {
			return true
		}
	}
	return false
}

// maxNodes bounds a tree fetch: a table that lists a million rows is cut,
// not walked.
const maxNodes = 5000

// walk fetches the tree under root one level at a time: each level's
// calls go out together, so a level costs about one round trip. It does
// not descend into objects that are not showing.
func (a *a11y) walk(ctx context.Context, root ref) ([]*node, error) {
	var out []*node
	level := []*node{{ref: root}}
	for depth := 0; len(level) > 0 && len(out) < maxNodes; depth++ {
		type pending struct{ role, name, state, ifaces, kids call }
		ps := make([]pending, len(level))
		for i, n := range level {
			ps[i] = pending{
				role:   a.goCall(ctx, n.ref, ifAccessible+".GetRole"),
				name:   a.getProp(ctx, n.ref, ifAccessible, "Name"),
				state:  a.goCall(ctx, n.ref, ifAccessible+".GetState"),
				ifaces: a.goCall(ctx, n.ref, ifAccessible+".GetInterfaces"),
				kids:   a.goCall(ctx, n.ref, ifAccessible+".GetChildren"),
			}
		}
		var next []*node
		for i, n := range level {
			p := ps[i]
			var words []uint32
			var kids []childRef
			errs := []error{p.role.store(&n.role), p.name.storeVariant(&n.name), p.state.store(&words),
				p.ifaces.store(&n.ifaces), p.kids.store(&kids)}
			if err := errors.Join(errs...); err != nil {
				if depth == 0 {
					return nil, err
				}
				continue // an object that went away while we looked
			}
			n.states, n.depth = statesOf(words), depth
			out = append(out, n)
			if depth > 0 && !n.states.has(stShowing) {
				continue
			}
			for _, k := range kids {
				c := ref{k.Bus, k.Path}
				n.children = append(n.children, c)
				next = append(next, &node{ref: c, parent: n.ref})
			}
		}
		level = next
	}
	return preorder(out), nil
}

// preorder puts a level-order walk into depth-first order, the order the
// tree reads in (and the order of a bulk fetch).
func preorder(level []*node) []*node {
	if len(level) == 0 {
		return level
	}
	byRef := make(map[ref]*node, len(level))
	for _, n := range level {
		byRef[n.ref] = n
	}
	out := make([]*node, 0, len(level))
	var visit func(n *node)
	visit = func(n *node) {
		out = append(out, n)
		for _, c := range n.children {
			if k := byRef[c]; k != nil {
				visit(k)
			}
		}
	}
	visit(level[0])
	return out
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

// bulk fetches every object the application caches in one call and keeps
// the showing subtree under root. ok is false when the application offers
// no cache (its toolkit bridge does not implement it), for walk to be used.
func (a *a11y) bulk(ctx context.Context, root ref) (nodes []*node, ok bool, err error) {
	var items []cacheItem
	c := a.conn.Object(root.Bus, cachePath).CallWithContext(ctx, ifCache+".GetItems", 0)
	if c.Err != nil {
		var de dbus.Error
		if errors.As(c.Err, &de) && (strings.Contains(de.Name, "UnknownMethod") || strings.Contains(de.Name, "UnknownObject") || strings.Contains(de.Name, "UnknownInterface")) {
			return nil, false, nil
		}
		return nil, false, c.Err
	}
	if err := c.Store(&items); err != nil {
		return nil, false, nil // an older cache shape: walk instead
	}
	byRef := make(map[ref]*node, len(items))
	for _, it := range items {
		r := ref{it.Self.Bus, it.Self.Path}
		byRef[r] = &node{ref: r, parent: ref{it.Parent.Bus, it.Parent.Path}, role: it.Role, name: it.Name,
			states: statesOf(it.State), ifaces: it.Ifaces}
	}
	for _, n := range byRef {
		if p := byRef[n.parent]; p != nil {
			p.children = append(p.children, n.ref)
		}
	}
	top := byRef[root]
	if top == nil {
		return nil, false, nil // the window is not in the cache: walk it
	}
	// The cache does not order siblings; the walk's order is the index in
	// parent, which GetItems gives too.
	index := make(map[ref]int32, len(items))
	for _, it := range items {
		index[ref{it.Self.Bus, it.Self.Path}] = it.Index
	}
	var visit func(n *node, depth int)
	visit = func(n *node, depth int) {
		if len(nodes) >= maxNodes {
			return
		}
		n.depth = depth
		nodes = append(nodes, n)
		if depth > 0 && !n.states.has(stShowing) {
			return
		}
		sortRefs(n.children, index)
		for _, c := range n.children {
			if k := byRef[c]; k != nil {
				visit(k, depth+1)
			}
		}
	}
	visit(top, 0)
	return nodes, true, nil
}

func sortRefs(rs []ref, index map[ref]int32) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && index[rs[j]] < index[rs[j-1]]; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
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

// details are what Saucer reads of a control beyond the tree: where it
// is, what it can do, and its text or value.
type details struct {
	bounds  Rect
	actions []string
	text    string
	value   *float64
}

// maxText bounds the text read from one control.
const maxText = 2000

// details fetches the details of nodes, all calls in flight together.
func (a *a11y) details(ctx context.Context, nodes []*node) []details {
	type pending struct {
		ext, act, text, val     call
		hasAct, hasText, hasVal bool
	}
	ps := make([]pending, len(nodes))
	for i, n := range nodes {
		p := &ps[i]
		p.ext = a.goCall(ctx, n.ref, ifComponent+".GetExtents", uint32(0))
		if p.hasAct = n.has(ifAction); p.hasAct {
			p.act = a.goCall(ctx, n.ref, ifAction+".GetActions")
		}
		if p.hasText = n.has(ifText); p.hasText {
			p.text = a.goCall(ctx, n.ref, ifText+".GetText", int32(0), int32(maxText))
		}
		if p.hasVal = n.has(ifValue); p.hasVal {
			p.val = a.getProp(ctx, n.ref, ifValue, "CurrentValue")
		}
	}
	out := make([]details, len(nodes))
	for i, p := range ps {
		d := &out[i]
		var ext struct{ X, Y, W, H int32 }
		if p.ext.store(&ext) == nil {
			d.bounds = Rect{int(ext.X), int(ext.Y), int(ext.W), int(ext.H)}
		}
		if p.hasAct {
			var acts []struct{ Name, Description, Key string }
			if p.act.store(&acts) == nil {
				for _, x := range acts {
					d.actions = append(d.actions, x.Name)
				}
			}
		}
		if p.hasText {
			_ = p.text.store(&d.text)
		}
		if p.hasVal {
			var v float64
			if p.val.storeVariant(&v) == nil {
				d.value = &v
			}
		}
	}
	return out
}

// apps lists the applications on the bus.
func (a *a11y) apps(ctx context.Context) ([]ref, error) {
	var kids []childRef
	if err := a.conn.Object("org.a11y.atspi.Registry", rootPath).CallWithContext(ctx, ifAccessible+".GetChildren", 0).Store(&kids); err != nil {
		return nil, fmt.Errorf("list the applications on the accessibility bus: %w", err)
	}
	out := make([]ref, len(kids))
	for i, k := range kids {
		out[i] = ref{k.Bus, k.Path}
	}
	return out, nil
}

// pid is the process id of the application at bus.
func (a *a11y) pid(ctx context.Context, bus string) call {
	return call{a.conn.BusObject().GoWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, make(chan *dbus.Call, 1), bus)}
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

// callTimeout bounds one D-Bus exchange with an application: a hung
// application makes a failure, not a hang.
const callTimeout = 5 * time.Second
