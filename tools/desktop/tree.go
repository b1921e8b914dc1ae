package desktop

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Bounds of one observation: no toolkit, however large its tree, makes an
// observation read more than these. docs/desktop.md explains them.
const (
	// maxNodes is the most objects read of one window's tree.
	maxNodes = 4000
	// maxChildren is the most children read of one object (the first).
	maxChildren = 1000
	// maxCells is the most cells read of one table: those in view, from
	// the top left.
	maxCells = 400
	// maxText bounds the text read from one control.
	maxText = 2000
)

// node is one accessible object as fetched.
type node struct {
	ref        ref
	role       uint32
	name       string
	states     states
	ifaces     ifaces
	childCount int
	children   []ref
	known      bool // role, name, states, interfaces and child count read
	box        Rect // as the application reports it
	hasBox     bool
	depth      int
}

func (n *node) has(i ifaces) bool { return n.ifaces&i != 0 }

// scope is what a tree fetch knows of its window.
type scope struct {
	root ref
	// area is the window's part of the screen, in the application's
	// coordinates: objects outside it are not on screen.
	area Rect
	// noShowing is set for a toolkit that does not set SHOWING below the
	// window (GTK 4): VISIBLE and a box on the window stand in for it.
	noShowing bool
}

// shown reports whether n is on screen as far as its states and box say.
// Without SHOWING, an object with no box at all (GTK 4's stack pages,
// which only group) is judged by VISIBLE alone.
func (s scope) shown(n *node) bool {
	if s.noShowing {
		return n.states.has(stVisible) && (!n.has(hasComponent) || n.box.overlaps(s.area))
	}
	return n.states.has(stShowing)
}

// tree is a window's shown objects.
type tree struct {
	nodes []*node // depth first, the window first
	// managed are the shown tables that manage their descendants
	// (spreadsheets, long lists): their children are never enumerated.
	// (A container that manages its descendants without being a table is
	// walked like any other, within the bounds.)
	managed []*node
	// fetch says how it was read: "cache" (all from the toolkit's cache),
	// "cache+walk" (a partial cache completed by walking), "walk".
	fetch string
	read  int // objects read
	cut   int // objects not read because of the bounds
	taken map[ref]bool
}

// fetchTree reads the shown part of the tree under s.root. With useCache,
// it starts from the application's object cache (one call) and walks
// only where the cache is incomplete: an object whose cached children do
// not add up to its child count. Otherwise it walks the whole tree. A
// walk reads one level at a time, each level's calls in flight together.
// A container that manages its descendants is never descended into.
func (a *a11y) fetchTree(ctx context.Context, s scope, useCache bool) (*tree, error) {
	t := &tree{fetch: "walk", taken: map[ref]bool{s.root: true}}
	byRef := map[ref]*node{}
	cachedKids := map[ref][]ref{}
	if useCache {
		items, ok, err := a.cached(ctx, s.root.Bus)
		if err != nil {
			return nil, err
		}
		if ok {
			t.fetch = "cache"
			index := make(map[ref]int32, len(items))
			for _, it := range items {
				r := it.Self.ref()
				byRef[r] = &node{ref: r, role: it.Role, name: it.Name, states: statesOf(it.State),
					ifaces: ifacesOf(it.Ifaces), childCount: int(it.ChildCount), known: true}
				index[r] = it.Index
				p := it.Parent.ref()
				cachedKids[p] = append(cachedKids[p], r)
			}
			for _, kids := range cachedKids {
				slices.SortFunc(kids, func(x, y ref) int { return int(index[x]) - int(index[y]) })
			}
		}
	}
	root := byRef[s.root]
	if root == nil {
		root = &node{ref: s.root}
		byRef[s.root] = root
	}
	walked := false
	t.read = 1
	level := []*node{root}
	for depth := 0; len(level) > 0; depth++ {
		// What the cache did not say: each object's role, name, states,
		// interfaces and child count; and its box where SHOWING is not set.
		b := a.batch(ctx)
		type info struct{ role, name, state, ifaces, count, box call }
		infos := make([]info, len(level))
		for i, n := range level {
			n.depth = depth
			if n.known && n.states.has(stManagesDescendants) {
				// at-spi2-atk's cache does not count such a container's
				// children: ask.
				infos[i].count = b.prop(n.ref, ifAccessible, "ChildCount")
			}
			if !n.known {
				walked = true
				infos[i] = info{role: b.call(n.ref, ifAccessible+".GetRole"), name: b.prop(n.ref, ifAccessible, "Name"),
					state: b.call(n.ref, ifAccessible+".GetState"), ifaces: b.call(n.ref, ifAccessible+".GetInterfaces"),
					count: b.prop(n.ref, ifAccessible, "ChildCount")}
			}
			if s.noShowing && depth > 0 && (!n.known || n.has(hasComponent)) {
				infos[i].box = b.call(n.ref, ifComponent+".GetExtents", uint32(0))
			}
		}
		if err := b.wait(); err != nil {
			return nil, err
		}
		var expand []*node
		var next []*node
		for i, n := range level {
			in := infos[i]
			if !n.known {
				var words []uint32
				var names []string
				var count int32
				err := errors.Join(in.role.store(&n.role), in.name.storeVariant(&n.name), in.state.store(&words),
					in.ifaces.store(&names), in.count.storeVariant(&count))
				if err != nil {
					if depth == 0 {
						return nil, err
					}
					continue // an object that went away while we looked
				}
				n.states, n.ifaces, n.childCount, n.known = statesOf(words), ifacesOf(names), int(count), true
			}
			if n.known && in.count.c != nil && in.role.c == nil {
				var count int32
				if in.count.storeVariant(&count) == nil {
					n.childCount = int(count)
				}
			}
			if in.box.c != nil {
				var e extents
				if in.box.store(&e) == nil {
					n.box, n.hasBox = e.rect(), true
				}
			}
			if depth > 0 && !s.shown(n) {
				continue
			}
			t.nodes = append(t.nodes, n)
			if n.states.has(stManagesDescendants) && n.has(hasTable) {
				t.managed = append(t.managed, n)
				continue
			}
			if n.childCount <= 0 {
				continue
			}
			if kids, ok := cachedKids[n.ref]; ok && len(kids) == n.childCount {
				n.children = kids
				next = append(next, t.take(kids, byRef)...)
				continue
			}
			expand = append(expand, n)
		}
		if len(expand) > 0 {
			walked = true
			kids, err := a.children(ctx, expand)
			if err != nil {
				return nil, err
			}
			for i, n := range expand {
				n.children = kids[i]
				next = append(next, t.take(kids[i], byRef)...)
			}
		}
		level = next
	}
	if walked && t.fetch == "cache" {
		t.fetch = "cache+walk"
	}
	t.nodes = preorder(t.nodes)
	return t, nil
}

// refresh reads again, in place, the objects of t at paths (of its
// application), which sent events since t was read: their role, name,
// states, interfaces and child count. It reports false, leaving t to be
// read again, when t's shape may have changed: an object shown or
// hidden, gone, or whose role or child count changed, or a scroll bar's
// view scrolled.
func (a *a11y) refresh(ctx context.Context, s scope, t *tree, paths []dbus.ObjectPath) (bool, error) {
	shown := make(map[ref]*node, len(t.nodes))
	for _, n := range t.nodes {
		shown[n.ref] = n
	}
	type info struct{ role, name, state, ifaces, count call }
	b := a.batch(ctx)
	infos := make([]info, len(paths))
	for i, p := range paths {
		r := ref{s.root.Bus, p}
		infos[i].state = b.call(r, ifAccessible+".GetState")
		if shown[r] != nil {
			infos[i].role, infos[i].name = b.call(r, ifAccessible+".GetRole"), b.prop(r, ifAccessible, "Name")
			infos[i].ifaces, infos[i].count = b.call(r, ifAccessible+".GetInterfaces"), b.prop(r, ifAccessible, "ChildCount")
		}
	}
	if err := b.wait(); err != nil {
		return false, err
	}
	for i, p := range paths {
		r, in := ref{s.root.Bus, p}, infos[i]
		var words []uint32
		if in.state.store(&words) != nil {
			return false, nil // gone
		}
		now := node{ref: r, states: statesOf(words)}
		n := shown[r]
		if n == nil {
			// Read but not shown: its part of the tree changes only if it
			// is shown now.
			if r != s.root && s.shown(&now) {
				return false, nil
			}
			continue
		}
		var names []string
		var count int32
		if errors.Join(in.role.store(&now.role), in.name.storeVariant(&now.name), in.ifaces.store(&names),
			in.count.storeVariant(&count)) != nil {
			return false, nil
		}
		now.ifaces, now.childCount = ifacesOf(names), int(count)
		managed := func(n *node) bool { return n.states.has(stManagesDescendants) }
		// A scroll bar's event is a view scrolled: what it shows changes
		// without events from what it shows (GTK 3 sets SHOWING on the
		// controls scrolled into view without saying so).
		if roleName(n.role) == "scroll bar" ||
			r != s.root && !s.shown(&now) || now.role != n.role || managed(&now) != managed(n) ||
			!managed(n) && now.childCount != n.childCount {
			return false, nil
		}
		n.name, n.states, n.ifaces = now.name, now.states, now.ifaces
	}
	return true, nil
}

// take returns the nodes for refs, within the bound on objects read.
func (t *tree) take(refs []ref, byRef map[ref]*node) []*node {
	refs = slices.DeleteFunc(slices.Clone(refs), func(r ref) bool { return t.taken[r] }) // a broken tree's cycle
	room := max(maxNodes-t.read, 0)
	if len(refs) > room {
		t.cut += len(refs) - room
		refs = refs[:room]
	}
	t.read += len(refs)
	out := make([]*node, 0, len(refs))
	for _, r := range refs {
		t.taken[r] = true
		n := byRef[r]
		if n == nil {
			n = &node{ref: r}
			byRef[r] = n
		}
		out = append(out, n)
	}
	return out
}

// children reads the children of nodes: all of them where there are at
// most maxChildren, else the first maxChildren one by one.
func (a *a11y) children(ctx context.Context, nodes []*node) ([][]ref, error) {
	b := a.batch(ctx)
	calls := make([][]call, len(nodes))
	for i, n := range nodes {
		if n.childCount <= maxChildren {
			calls[i] = []call{b.call(n.ref, ifAccessible+".GetChildren")}
			continue
		}
		for j := range maxChildren {
			calls[i] = append(calls[i], b.call(n.ref, ifAccessible+".GetChildAtIndex", int32(j)))
		}
	}
	if err := b.wait(); err != nil {
		return nil, err
	}
	out := make([][]ref, len(nodes))
	for i, n := range nodes {
		if n.childCount <= maxChildren {
			var kids []childRef
			if calls[i][0].store(&kids) == nil {
				for _, k := range kids {
					if k.Path != nullPath {
						out[i] = append(out[i], k.ref())
					}
				}
			}
			continue
		}
		for _, c := range calls[i] {
			var k childRef
			if c.store(&k) == nil && k.Path != nullPath {
				out[i] = append(out[i], k.ref())
			}
		}
	}
	return out, nil
}

// preorder puts nodes (each level after the one above) into depth-first
// order, the order the tree reads in.
func preorder(nodes []*node) []*node {
	if len(nodes) == 0 {
		return nodes
	}
	byRef := make(map[ref]*node, len(nodes))
	for _, n := range nodes {
		byRef[n.ref] = n
	}
	out := make([]*node, 0, len(nodes))
	seen := make(map[ref]bool, len(nodes))
	var visit func(n *node)
	visit = func(n *node) {
		seen[n.ref] = true
		out = append(out, n)
		for _, c := range n.children {
			if k := byRef[c]; k != nil && !seen[c] {
				visit(k)
			}
		}
	}
	visit(nodes[0])
	return out
}

// The definition of a control (docs/desktop.md, "What counts as a
// control"), which the coverage test's independent walk
// (testdata/atspi_walk.py) applies too.

// candidate reports whether a shown object may be a control, from what
// the tree says; control decides once its details are read.
func candidate(n *node) bool {
	role := roleName(n.role)
	switch {
	case interactive[role], readable[role] && cleanName(n.name) != "", n.has(hasEditableText | hasValue):
		return true
	}
	return !container[role] && n.has(hasAction|hasText)
}

// control reports whether a candidate is a control, given its details.
func control(n *node, det details) bool {
	role := roleName(n.role)
	switch {
	case interactive[role], readable[role] && cleanName(n.name) != "", n.has(hasEditableText | hasValue):
		return true
	}
	return !container[role] && (len(det.actions) > 0 || strings.TrimSpace(det.text) != "")
}

// cleanName is an object's name as shown: GTK 4.8 names a widget that has
// no accessible name after its type (GtkButton, AdwGizmo), which names
// nothing.
func cleanName(name string) string {
	name = strings.TrimSpace(name)
	if len(name) > 3 && (strings.HasPrefix(name, "Gtk") || strings.HasPrefix(name, "Adw")) &&
		name[3] >= 'A' && name[3] <= 'Z' && !strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		return ""
	}
	return name
}

// details are what Saucer reads of a control beyond the tree: where it
// is, what it can do, and its text or value.
type details struct {
	box     Rect
	actions []string
	text    string
	value   *float64
}

// details fetches the details of nodes, all calls in flight together:
// each one's box (unless the walk read it, or boxes holds it), its actions unless its role
// implies them (a button clicks; they are read when it is acted on), its
// text, and its value if its role has one (a slider's; LibreOffice gives
// its buttons a Value interface too).
func (a *a11y) details(ctx context.Context, nodes []*node, boxes map[ref]Rect) ([]details, error) {
	type pending struct{ ext, act, text, val call }
	b := a.batch(ctx)
	ps := make([]pending, len(nodes))
	for i, n := range nodes {
		p := &ps[i]
		role := roleName(n.role)
		if _, ok := boxes[n.ref]; !ok && !n.hasBox {
			p.ext = b.call(n.ref, ifComponent+".GetExtents", uint32(0))
		}
		if n.has(hasAction) && !impliedActions[role] {
			p.act = b.call(n.ref, ifAction+".GetActions")
		}
		if n.has(hasText) {
			p.text = b.call(n.ref, ifText+".GetText", int32(0), int32(maxText))
		}
		if n.has(hasValue) && valued[role] {
			p.val = b.prop(n.ref, ifValue, "CurrentValue")
		}
	}
	if err := b.wait(); err != nil {
		return nil, err
	}
	out := make([]details, len(nodes))
	// Texts asked again whole: LibreOffice refuses an end past a text's
	// (an error), or, for a Writer paragraph or a status bar's label,
	// answers it with "" (asked again only for those, so that empty fields
	// cost no second call).
	var retry []int
	for i, p := range ps {
		d := &out[i]
		d.box = nodes[i].box
		if box, ok := boxes[nodes[i].ref]; ok {
			d.box = box
		}
		if p.ext.c != nil {
			var e extents
			if p.ext.store(&e) == nil {
				d.box = e.rect()
			}
		}
		if p.act.c != nil {
			var acts []struct{ Name, Description, Key string }
			if p.act.store(&acts) == nil {
				d.actions = userActions(acts)
			}
		}
		if p.text.c != nil && (p.text.store(&d.text) != nil || d.text == "" && emptyMayHoldText(nodes[i])) {
			retry = append(retry, i)
		}
		if p.val.c != nil {
			var v float64
			if p.val.storeVariant(&v) == nil {
				d.value = &v
			}
		}
	}
	if len(retry) > 0 {
		b := a.batch(ctx)
		texts := make([]call, len(retry))
		for j, i := range retry {
			texts[j] = b.call(nodes[i].ref, ifText+".GetText", int32(0), int32(-1))
		}
		if err := b.wait(); err != nil {
			return nil, err
		}
		for j, i := range retry {
			if texts[j].store(&out[i].text) == nil {
				out[i].text = capText(out[i].text)
			}
		}
	}
	return out, nil
}

// documentText are the roles of a document's text, which LibreOffice
// Writer gives as "" when asked for more than it holds.
var documentText = map[string]bool{"paragraph": true, "heading": true}

// emptyMayHoldText reports whether a text read as "" is asked again whole:
// a document's paragraph or heading, or a label with no name, whose text
// is all it shows (LibreOffice's status bar: "Sheet 1 of 1", "Sum: 60",
// the zoom, in labels it answers the same way).
func emptyMayHoldText(n *node) bool {
	role := roleName(n.role)
	return documentText[role] || role == "label" && cleanName(n.name) == ""
}

// inEmptyMenuBars are the objects under a menu bar of no size, which
// shows nothing: LibreOffice keeps its own menu bar, hidden behind GTK's
// native one, and reports its menus in a box of no height (over the first
// toolbar's row once its boxes are right: see showPointer). A tree has a
// menu bar or two: one call each.
func (a *a11y) inEmptyMenuBars(ctx context.Context, t *tree) map[ref]bool {
	var bars []*node
	byRef := make(map[ref]*node, len(t.nodes))
	for _, n := range t.nodes {
		byRef[n.ref] = n
		if roleName(n.role) == "menu bar" {
			bars = append(bars, n)
		}
	}
	if len(bars) == 0 {
		return nil
	}
	b := a.batch(ctx)
	exts := make([]call, len(bars))
	for i, n := range bars {
		exts[i] = b.call(n.ref, ifComponent+".GetExtents", uint32(0))
	}
	if b.wait() != nil {
		return nil
	}
	hidden := map[ref]bool{}
	for i, n := range bars {
		var e extents
		if exts[i].store(&e) != nil || !e.rect().empty() {
			continue
		}
		for todo := slices.Clone(n.children); len(todo) > 0; {
			r := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if !hidden[r] {
				hidden[r] = true
				if k := byRef[r]; k != nil {
					todo = append(todo, k.children...)
				}
			}
		}
	}
	return hidden
}

// userActions are the names of the actions a user does: GTK 4 lists its
// widgets' internal actions (clipboard.copy, menu.popup) beside them.
func userActions(acts []struct{ Name, Description, Key string }) []string {
	var out []string
	for _, x := range acts {
		if x.Name != "" && !strings.Contains(x.Name, ".") {
			out = append(out, x.Name)
		}
	}
	return out
}

// capText bounds a text read whole to maxText characters.
func capText(s string) string {
	if r := []rune(s); len(r) > maxText {
		return string(r[:maxText])
	}
	return s
}
