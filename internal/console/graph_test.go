package console_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/server"
)

// layeredGraph is an ended constellation of n nodes in layers of 10,
// each node after two of the layer before.
func layeredGraph(id string, created time.Time, n int) *constellation.Graph {
	g := &constellation.Graph{ID: id, Request: fmt.Sprintf("Check the %d shards and sum them up", n), Status: constellation.Completed,
		Version: 3, CreatedAt: created, Answer: "The shards sum to 88,213,400.", PlannerSteps: 1}
	for i := range n {
		g.Nodes = append(g.Nodes, &constellation.Node{ID: fmt.Sprintf("n%04d", i), Device: fmt.Sprintf("linux%d", i%7),
			Task: fmt.Sprintf("Check shard %d and write its total", i), Status: constellation.NodeCompleted, Attempts: 1,
			Result: fmt.Sprintf("shard %d: 1,204 rows", i)})
		if i >= 10 {
			g.Edges = append(g.Edges, constellation.Edge{From: fmt.Sprintf("n%04d", i-10), To: g.Nodes[i].ID},
				constellation.Edge{From: fmt.Sprintf("n%04d", i-i%10-10+(i%10+1)%10), To: g.Nodes[i].ID})
		}
	}
	return g
}

// TestConstellationGraphAtScale: a constellation of 300 nodes is drawn
// whole (fitted to the view); the search finds a node by id and by words
// of its task, marks it and brings it into view; the buttons, the keys
// and the wheel zoom, the arrow keys pan, 0 fits it again. The list of
// 56 constellations shows the newest 50 and loads the rest. axe-core
// passes.
func TestConstellationGraphAtScale(t *testing.T) {
	axe := axeScript(t)
	st := constellation.NewMemoryStore()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 55 {
		if err := st.Save(context.Background(), layeredGraph(fmt.Sprintf("small%02d", i), base.Add(time.Duration(i)*time.Minute), 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Save(context.Background(), layeredGraph("big", base.Add(time.Hour), 300)); err != nil {
		t.Fatal(err)
	}
	s := newSiteWith(t, scripts{}, func(srv *server.Server) http.Handler {
		o, err := constellation.New(constellation.Options{Devices: constellation.ServerDevices{Server: srv}, Store: st,
			NewPlanner: func(*constellation.Graph) (constellation.Stepper, error) {
				return nil, fmt.Errorf("the test plans nothing")
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Stop)
		return constellation.ServerHandler(o, srv, srv.Handler())
	})
	ctx := browser(t)
	loggedIn(t, ctx, s.url)
	rows := `document.querySelectorAll("table.cons tbody tr").length`
	run(t, ctx, "the list's first page", chromedp.Navigate(s.url+"/#/constellations"),
		waitFor(ctx, rows+` === 50`), waitFor(ctx, hasText("table.cons tr[data-constellation=big]", "300 (300 done)")),
		chromedp.Click(chromedp.CSS("button.more")), waitFor(ctx, rows+` === 56`), waitFor(ctx, `!document.querySelector("button.more")`),
		waitFor(ctx, `!!document.querySelector("tr[data-constellation=small00]")`))

	run(t, ctx, "the big graph", chromedp.Navigate(s.url+"/#/constellations/big"),
		waitFor(ctx, `document.querySelectorAll("svg g.node").length === 300`))
	checkA11y(t, ctx, axe, "a graph of 300 nodes")
	zoom := func() float64 {
		return get(t, ctx, "the zoom", chromedp.Evaluate[float64](`+document.querySelector(".graph-frame").dataset.zoom`))
	}
	// inView: the node's box is inside the frame.
	inView := func(id string) string {
		return `(() => { const f = document.querySelector(".graph-frame").getBoundingClientRect();
			const n = document.querySelector('svg g.node[data-node="` + id + `"] rect').getBoundingClientRect();
			return n.width > 0 && n.left >= f.left && n.right <= f.right && n.top >= f.top && n.bottom <= f.bottom; })()`
	}
	fit := zoom()
	if fit >= 1 {
		t.Fatalf("a graph of 300 nodes is shown at %.3f, not fitted", fit)
	}
	run(t, ctx, "fitted: the first and last nodes are in view", waitFor(ctx, inView("n0000")), waitFor(ctx, inView("n0299")))

	run(t, ctx, "find a node by id",
		chromedp.SendKeys(chromedp.CSS("#graph-q"), "n0123"+kb.Enter),
		waitFor(ctx, `!!document.querySelector('svg g.node.found[data-node="n0123"]')`),
		waitFor(ctx, `document.querySelectorAll("svg g.node.found").length === 1`),
		waitFor(ctx, inView("n0123")),
		waitFor(ctx, hasText(".graph-found", "n0123: 1 of 1 match")))
	if z := zoom(); z < 1 {
		t.Errorf("a found node is shown at %.3f, too small to read", z)
	}
	if ok := get(t, ctx, "n0000 out of view", chromedp.Evaluate[bool](inView("n0000"))); ok {
		t.Error("zoomed in on n0123, n0000 is still in view: the view did not move")
	}
	clear := chromedp.Evaluate[chromedp.Void](`document.querySelector("#graph-q").value = ""`)
	run(t, ctx, "find a node by its task",
		clear, chromedp.SendKeys(chromedp.CSS("#graph-q"), "shard 257 and"+kb.Enter),
		waitFor(ctx, `!!document.querySelector('svg g.node.found[data-node="n0257"]')`), waitFor(ctx, inView("n0257")),
		waitFor(ctx, `!document.querySelector('svg g.node.found[data-node="n0123"]')`))
	run(t, ctx, "no match says so",
		clear, chromedp.SendKeys(chromedp.CSS("#graph-q"), "no such shard"+kb.Enter), waitFor(ctx, hasText(".graph-found", "No node matches")))

	z0 := zoom()
	run(t, ctx, "zoom in with the button", chromedp.Click(chromedp.CSS(`button[aria-label="Zoom in"]`)),
		waitFor(ctx, fmt.Sprintf(`+document.querySelector(".graph-frame").dataset.zoom > %f`, z0*1.2)))
	z1 := zoom()
	pan := func() string {
		return get(t, ctx, "the pan", chromedp.Evaluate[string](`document.querySelector("svg g.pan").getAttribute("transform")`))
	}
	before := pan()
	run(t, ctx, "keys: pan, zoom out, fit", chromedp.Focus(chromedp.CSS(".graph-frame")), chromedp.KeyEvent(kb.ArrowRight),
		waitFor(ctx, fmt.Sprintf(`document.querySelector("svg g.pan").getAttribute("transform") !== %q`, before)),
		chromedp.KeyEvent("-"), waitFor(ctx, fmt.Sprintf(`+document.querySelector(".graph-frame").dataset.zoom < %f`, z1*0.9)),
		chromedp.KeyEvent("0"), waitFor(ctx, fmt.Sprintf(`Math.abs(+document.querySelector(".graph-frame").dataset.zoom - %f) < 0.001`, fit)),
		waitFor(ctx, inView("n0000")), waitFor(ctx, inView("n0299")))
	run(t, ctx, "the wheel zooms in around the pointer",
		chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector(".graph-frame"), r = f.getBoundingClientRect();
			f.dispatchEvent(new WheelEvent("wheel", {deltaY: -400, clientX: r.left + r.width / 2, clientY: r.top + 40, bubbles: true, cancelable: true})); })()`),
		waitFor(ctx, fmt.Sprintf(`+document.querySelector(".graph-frame").dataset.zoom > %f`, fit*1.5)))
	checkA11y(t, ctx, axe, "a graph of 300 nodes, zoomed")
}
