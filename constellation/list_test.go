package constellation

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server/store"
)

// storedOrchestrator is an orchestrator over st that runs nothing by
// itself: the tests put graphs in its store.
func storedOrchestrator(t testing.TB, st Store) *Orchestrator {
	t.Helper()
	o, err := New(Options{Devices: newFake(), Store: st, NewPlanner: planOnce(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// bigGraph is a layered graph of n nodes (layers of 10, each node after
// two of the layer before) with results of about 100 characters, as a
// planner's large fan-out graphs look.
func bigGraph(id string, created time.Time, n int, status NodeStatus) *Graph {
	g := &Graph{ID: id, Request: "run the nightly checks on every shard and sum them up", Status: Running, CreatedAt: created, Version: 1, PlannerSteps: 1}
	for i := range n {
		nd := &Node{ID: fmt.Sprintf("n%04d", i), Device: fmt.Sprintf("linux%d", i%7), Task: fmt.Sprintf("Check shard %d and write its total to total-%d.txt", i, i),
			Apps: []string{"shell"}, Outputs: []string{fmt.Sprintf("total-%d.txt", i)}, Status: status, Attempts: 1, Tries: 1, TaskID: fmt.Sprintf("task-%s-%d", id, i)}
		if status == NodeCompleted {
			nd.Result = fmt.Sprintf("Shard %d checked: 1,204 rows, 0 errors; the total 88,213.40 is in total-%d.txt on the device.", i, i)
			nd.Sent = nd.Task
		}
		g.Nodes = append(g.Nodes, nd)
		if i >= 10 {
			g.Edges = append(g.Edges, Edge{From: fmt.Sprintf("n%04d", i-10), To: nd.ID}, Edge{From: fmt.Sprintf("n%04d", i-i%10-10+(i%10+1)%10), To: nd.ID})
		}
	}
	return g
}

func TestSummaryCountsAndCuts(t *testing.T) {
	g := bigGraph("c1", time.Now(), 30, NodeCompleted)
	g.Nodes[0].Status, g.Nodes[1].Status, g.Nodes[2].Status, g.Nodes[3].Status = NodeRunning, NodeFailed, NodeCancelled, NodePending
	g.Answer = strings.Repeat("é", SummaryTextLimit+10)
	g.Error = "short"
	s := Summarize(g)
	want := NodeCounts{Total: 30, Pending: 1, Running: 1, Completed: 26, Failed: 1, Cancelled: 1}
	if s.Nodes != want {
		t.Errorf("counts %+v, want %+v", s.Nodes, want)
	}
	if n := len([]rune(s.Answer)); n != SummaryTextLimit || !strings.HasSuffix(s.Answer, "…") || fmt.Sprint(s.Cut) != "[answer]" || s.Error != "short" {
		t.Errorf("answer of %d characters, cut %v, error %q", n, s.Cut, s.Error)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), `"edges"`) || strings.Contains(string(b), `"task"`) {
		t.Errorf("a summary carries the graph: %s", b)
	}
}

// TestListPages: the list is newest first (creation time, then id),
// pages by cursor, and a page's next one stays the same when
// constellations start meanwhile; on the server's store a list reads the
// index, and a graph again only while another server may run it.
func TestListPages(t *testing.T) {
	for name, mk := range map[string]func() (Store, Store){
		"memory": func() (Store, Store) { s := NewMemoryStore(); return s, s },
		"server": func() (Store, Store) {
			st := store.NewMemory()
			return NewServerStore(st), NewServerStore(st) // the second writes as another server would
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st, other := mk()
			o := storedOrchestrator(t, st)
			base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			save := func(s Store, g *Graph) {
				t.Helper()
				if err := s.Save(ctx, g); err != nil {
					t.Fatal(err)
				}
			}
			// c0..c6, one a minute; c3 and c3b share their creation time.
			for i := range 7 {
				save(st, bigGraph(fmt.Sprintf("c%d", i), base.Add(time.Duration(i)*time.Minute), 3, NodeCompleted))
			}
			save(st, bigGraph("c3b", base.Add(3*time.Minute), 3, NodeCompleted))
			var got []string
			page, err := o.ListPage(ctx, 3, "")
			for pages := 0; ; pages++ {
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range page.Constellations {
					got = append(got, s.ID)
				}
				if pages == 0 {
					// A constellation starts after the first page: the
					// next pages are what they were.
					save(st, bigGraph("new", base.Add(time.Hour), 3, NodePending))
				}
				if page.Next == "" {
					break
				}
				page, err = o.ListPage(ctx, 3, page.Next)
			}
			if want := "c6 c5 c4 c3b c3 c2 c1 c0"; strings.Join(got, " ") != want {
				t.Errorf("pages %v, want %s", got, want)
			}
			first, err := o.ListPage(ctx, DefaultPageLimit, "")
			if err != nil || len(first.Constellations) != 9 || first.Constellations[0].ID != "new" || first.Next != "" {
				t.Fatalf("first page: %+v, %v", first, err)
			}
			// Another server runs c6 on and ends it: the list shows it
			// as that server left it.
			g6 := bigGraph("c6", base.Add(6*time.Minute), 3, NodeCompleted)
			g6.Status, g6.Version = Running, 2
			save(st, g6)
			g6 = g6.Clone()
			g6.Status, g6.Version, g6.Answer = Completed, 3, "all summed"
			save(other, g6)
			again, err := o.ListPage(ctx, 2, "")
			if err != nil || again.Constellations[1].ID != "c6" {
				t.Fatalf("%+v, %v", again, err)
			}
			if s := again.Constellations[1]; s.Status != Completed || s.Version != 3 || s.Answer != "all summed" || s.Nodes.Completed != 3 {
				t.Errorf("c6 listed as %+v, want it completed at version 3", s)
			}
			for _, tc := range []struct {
				limit  int
				cursor string
			}{{0, ""}, {MaxPageLimit + 1, ""}, {3, "not-a-cursor"}, {3, "bm8tc2xhc2g"}} {
				if _, err := o.ListPage(ctx, tc.limit, tc.cursor); err == nil {
					t.Errorf("limit %d, cursor %q: no error", tc.limit, tc.cursor)
				}
			}
		})
	}
}

// TestListAPI: GET /api/constellations pages with ?limit= and ?cursor=
// (next_url leads to the next page) and refuses what it cannot page by,
// saying what to send.
func TestListAPI(t *testing.T) {
	ctx := t.Context()
	st := NewMemoryStore()
	o := storedOrchestrator(t, st)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		if err := st.Save(ctx, bigGraph(fmt.Sprintf("c%d", i), base.Add(time.Duration(i)*time.Second), 20, NodeCompleted)); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(Handler(o, "k", nil))
	defer hs.Close()
	get := func(path string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+path, nil)
		req.Header.Set("X-API-Key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	var ids []string
	path := "/api/constellations?limit=2"
	for path != "" {
		code, m := get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", path, code, m)
		}
		for _, c := range m["constellations"].([]any) {
			s := c.(map[string]any)
			ids = append(ids, s["id"].(string))
			if _, ok := s["edges"]; ok || s["nodes"].(map[string]any)["completed"] != 20.0 {
				t.Errorf("a listed constellation: %v", s)
			}
		}
		path, _ = m["next_url"].(string)
	}
	if strings.Join(ids, " ") != "c4 c3 c2 c1 c0" {
		t.Errorf("listed %v", ids)
	}
	for _, tc := range []struct{ query, says string }{
		{"limit=0", "from 1 to 500"}, {"limit=501", "from 1 to 500"}, {"limit=ten", "whole number"},
		{"cursor=%21%21", "give the next value of the page before"}, {"offset=5", "pages by cursor"},
	} {
		code, m := get("/api/constellations?" + tc.query)
		if msg, _ := m["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, tc.says) {
			t.Errorf("?%s: %d %q, want 400 saying %q", tc.query, code, msg, tc.says)
		}
	}
}

// TestStreamReplaysPlannerSteps: a stream opened after the planner's
// first plan (here, after the constellation ended) starts with that
// plan's step and its edits, then the end.
func TestStreamReplaysPlannerSteps(t *testing.T) {
	f := newFake(Device{ID: "d1", Apps: []string{"shell"}})
	o, err := New(Options{Devices: f, NewPlanner: planOnce(t, []map[string]any{node("a", "d1", "first", "shell"), node("b", "d1", "second", "shell")}, [2]string{"a", "b"})})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(Handler(o, "", nil))
	defer hs.Close()
	id, err := o.Start(t.Context(), "do a then b")
	if err != nil {
		t.Fatal(err)
	}
	if g := wait(t, o, id); g.Status != Completed {
		t.Fatalf("%s: %s", g.Status, g.Error)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/constellations/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var kinds []string
	var first Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == "planner" && first.Kind == "" {
			first = e
		}
		kinds = append(kinds, e.Kind)
	}
	if len(kinds) < 2 || kinds[0] != "planner" || kinds[len(kinds)-1] != "end" {
		t.Fatalf("events %v, want the planner's steps, then the end", kinds)
	}
	var ops []string
	for _, ed := range first.Edits {
		if ed.OK {
			ops = append(ops, ed.Op)
		}
	}
	if strings.Join(ops, " ") != "add_node add_node add_edge" {
		t.Errorf("the first step's edits: %v", first.Edits)
	}
	io.Copy(io.Discard, resp.Body)
}

// BenchmarkList: GET /api/constellations over 20 graphs of 1,000 nodes
// (3 versions each) in the server's store, as the whole graphs were
// listed before (full) and as summaries now: warm (the store has seen
// them, as a server that ran or resumed them has) and cold (a list just
// after a restart, every graph read once).
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	st := store.NewMemory()
	ss := NewServerStore(st)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 20 {
		g := bigGraph(fmt.Sprintf("c%02d", i), base.Add(time.Duration(i)*time.Minute), 1000, NodeCompleted)
		for v := 1; v <= 3; v++ {
			g.Version = v
			if v == 3 {
				g.Status, g.Answer = Completed, "Every shard is checked; the totals sum to 88,213,400."
			}
			if err := ss.Save(ctx, g); err != nil {
				b.Fatal(err)
			}
		}
	}
	list := func(b *testing.B, o *Orchestrator) int {
		w := httptest.NewRecorder()
		Handler(o, "", nil).ServeHTTP(w, httptest.NewRequest("GET", "/api/constellations", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		return w.Body.Len()
	}
	b.Run("full", func(b *testing.B) {
		o := storedOrchestrator(b, ss)
		var n int
		for b.Loop() {
			gs, err := o.List(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var buf strings.Builder
			json.NewEncoder(&buf).Encode(map[string]any{"constellations": gs})
			n = buf.Len()
		}
		b.ReportMetric(float64(n), "bytes/list")
	})
	b.Run("summary", func(b *testing.B) {
		o := storedOrchestrator(b, ss)
		var n int
		for b.Loop() {
			n = list(b, o)
		}
		b.ReportMetric(float64(n), "bytes/list")
	})
	b.Run("summary-cold", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = list(b, storedOrchestrator(b, NewServerStore(st)))
		}
		b.ReportMetric(float64(n), "bytes/list")
	})
}
