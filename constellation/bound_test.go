package constellation

import (
	"math"
	"testing"
	"time"
)

// boundCase is a diamond (a before b and c, both before d) beside an
// independent node e; c shares linux1 with a, e shares linux2 with b.
var boundCase = suiteCase{Name: "bound", Nodes: []suiteNode{
	{ID: "a", Device: "linux1"},
	{ID: "b", Device: "linux2", After: []string{"a"}},
	{ID: "c", Device: "linux1", After: []string{"a"}},
	{ID: "d", Device: "linux3", After: []string{"b", "c"}},
	{ID: "e", Device: "linux2"},
}}

// played is a run's events as the loop would emit them: the first node
// starts lead after begin, each node's task takes took[id] (ms) on its
// case device, one after another in the order given, all at once.
func played(lead time.Duration, took map[string]int, order ...string) *runTimes {
	r := newRunTimes()
	r.begin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := r.begin.Add(lead)
	r.see(Event{Kind: "node_start", Node: order[0], Time: at})
	for _, id := range order {
		dev := ""
		for _, sn := range boundCase.Nodes {
			if sn.ID == id {
				dev = sn.Device
			}
		}
		r.see(Event{Kind: "node_task", Node: id, Device: dev, Time: at})
		at = at.Add(time.Duration(took[id]) * time.Millisecond)
		r.see(Event{Kind: "node_end", Node: id, Device: dev, Time: at})
	}
	r.see(Event{Kind: "end", Time: at})
	r.wall = at.Sub(r.begin)
	return r
}

func TestFloorOfAKnownGraph(t *testing.T) {
	for _, tc := range []struct {
		name string
		took map[string]int
		want int
	}{
		// a, b, d: 100+300+100; linux2 (b, e) is 300+150.
		{"critical path", map[string]int{"a": 100, "b": 300, "c": 200, "d": 100, "e": 150}, 500},
		// c outgrows b: a, c, d.
		{"the other branch", map[string]int{"a": 100, "b": 300, "c": 450, "d": 100, "e": 150}, 650},
		// linux2 runs b and e one after the other: 300+400 > 500.
		{"a busy device", map[string]int{"a": 100, "b": 300, "c": 200, "d": 100, "e": 400}, 700},
	} {
		r := played(0, tc.took, "a", "b", "c", "d", "e")
		if got := r.floor(boundCase); got != time.Duration(tc.want)*time.Millisecond {
			t.Errorf("%s: floor %v, want %dms", tc.name, got, tc.want)
		}
	}
}

// Five independent nodes on two devices, then a sixth after them all
// (the suite's wide_fan_in): the critical path is two nodes long and the
// busiest device's total two nodes, but no schedule ends before three,
// since two of the five run one after the other on linux1 before the
// sixth can start.
func TestFloorCountsTheAncestorsOnOneDevice(t *testing.T) {
	sc := suiteCase{Name: "fan in", Nodes: []suiteNode{
		{ID: "n1", Device: "linux1"}, {ID: "n2", Device: "linux2"}, {ID: "n3", Device: "linux3"},
		{ID: "n4", Device: "linux1"}, {ID: "n5", Device: "linux2"},
		{ID: "tot", Device: "linux3", After: []string{"n1", "n2", "n3", "n4", "n5"}},
	}}
	r := newRunTimes()
	for _, sn := range sc.Nodes {
		r.took[sn.ID], r.device[sn.ID] = 100*time.Millisecond, sn.Device
	}
	if got := r.floor(sc); got != 300*time.Millisecond {
		t.Errorf("floor %v, want 300ms", got)
	}
}

// The measurement that reported 38.5 % lower against a bound of 12.4 %: a
// node (Mousepad's launch) took far longer in the serial run than in the
// parallel one. The bound comes from the parallel run's own node times
// and lead, so no measurement can beat it.
func TestBoundIsNotBeaten(t *testing.T) {
	fast := map[string]int{"a": 100, "b": 300, "c": 200, "d": 100, "e": 150}
	slowD := map[string]int{"a": 100, "b": 300, "c": 200, "d": 10000, "e": 150}
	// The parallel run: its planner's first step (50ms), then a; b, c and
	// e at once; d: it ends at 50+100+300+100 = 550ms, plus a 60ms tail.
	par := played(50*time.Millisecond, fast, "a", "b", "d")
	par.took["c"], par.took["e"] = 200*time.Millisecond, 150*time.Millisecond
	par.device["c"], par.device["e"] = "linux1", "linux2"
	par.wall += 60 * time.Millisecond
	ser := played(50*time.Millisecond, slowD, "a", "e", "b", "c", "d")
	ser.wall += 60 * time.Millisecond
	p, s, bound := latencyBound([]caseRuns{{sc: boundCase, parallel: par, serial: ser}})
	if p != 610*time.Millisecond || s != 10860*time.Millisecond {
		t.Fatalf("totals %v and %v, want 610ms and 10.86s", p, s)
	}
	measured := 1 - float64(p)/float64(s)
	// The best the parallel run could do: its 50ms lead and its 500ms
	// floor.
	if want := 1 - 550.0/10860; math.Abs(bound-want) > 1e-9 {
		t.Errorf("bound %.4f, want %.4f", bound, want)
	}
	if bound < measured {
		t.Errorf("the measurement (%.1f %% lower) beats its bound (%.1f %%)", 100*measured, 100*bound)
	}
}
