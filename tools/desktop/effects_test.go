package desktop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// observationOf is an observation of controls, indexed as observe does.
func observationOf(cs ...Control) *Observation {
	o := &Observation{Controls: cs, byID: map[int]*Control{}}
	for i := range o.Controls {
		o.byID[o.Controls[i].ID] = &o.Controls[i]
	}
	return o
}

// An effect names the controls that came and went (it said only
// "disappeared":1): a few, named ones first, each cut short, with the
// count of all; an appeared one with the id that acts on it.
func TestEffectNamesControlsThatCameAndWent(t *testing.T) {
	stay := Control{ID: 1, Role: "push button", Name: "OK"}
	var before, after []Control
	before = append(before, stay, Control{ID: 2, Role: "label", Name: "Saving…"})
	after = append(after, stay)
	for i := range 8 {
		name := ""
		if i%2 == 1 {
			name = fmt.Sprintf("row %d", i)
		}
		after = append(after, Control{ID: 10 + i, Role: "list item", Name: name})
	}
	after = append(after, Control{ID: 30, Role: "label", Name: strings.Repeat("long ", 40)})
	eff := &Effect{}
	diffControls(eff, observationOf(before...), observationOf(after...))
	if eff.Disappeared == nil || eff.Disappeared.Count != 1 || !slices.Equal(eff.Disappeared.Some, []string{`label "Saving…"`}) {
		t.Errorf("disappeared: %+v", eff.Disappeared)
	}
	want := []string{`[11] list item "row 1"`, `[13] list item "row 3"`, `[15] list item "row 5"`, `[17] list item "row 7"`,
		`[30] label "` + strings.Repeat("long ", 12) + `…"`}
	if eff.Appeared == nil || eff.Appeared.Count != 9 || !slices.Equal(eff.Appeared.Some, want) {
		t.Errorf("appeared: %+v\nwant %q", eff.Appeared, want)
	}
	b, _ := json.Marshal(eff)
	if len(b) > 400 {
		t.Errorf("the effect takes %d bytes: %s", len(b), b)
	}
	// Nothing came or went: nothing is said.
	eff = &Effect{}
	diffControls(eff, observationOf(stay), observationOf(stay))
	if b, _ := json.Marshal(eff); strings.Contains(string(b), "appeared") {
		t.Errorf("%s", b)
	}
}

// On a real window: selecting a notebook's second tab shows its page's
// label and hides the first's, and the effect names both.
func TestSelectingATabNamesWhatCameAndWent(t *testing.T) {
	python := "/usr/bin/python3"
	_, d := start(t, python)
	ctx := context.Background()
	_, obs := widgets(t, d)
	eff, err := d.Select(ctx, Target{ID: mustFind(t, obs, "page tab", "Second").ID})
	if err != nil {
		t.Fatal(err)
	}
	if eff.Appeared == nil || !slices.ContainsFunc(eff.Appeared.Some, func(s string) bool { return strings.HasSuffix(s, `] label "second page"`) }) {
		t.Errorf("appeared: %+v", eff.Appeared)
	}
	if eff.Disappeared == nil || !slices.Contains(eff.Disappeared.Some, `label "first page"`) {
		t.Errorf("disappeared: %+v", eff.Disappeared)
	}
}
