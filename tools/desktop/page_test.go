package desktop

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var idRE = regexp.MustCompile(`(?m)^\[(\d+)\] `)

func listedIDs(text string) []int {
	var ids []int
	for _, m := range idRE.FindAllStringSubmatch(text, -1) {
		id, _ := strconv.Atoi(m[1])
		ids = append(ids, id)
	}
	return ids
}

// TestObservePagesAndFilters observes a window of 500 controls with pages
// of at most 4,000 characters: every page holds whole lines, the ids its
// text lists are exactly the ids drawn on its screenshot, and the pages
// together list every control once. Role, name and region filters narrow
// the list.
func TestObservePagesAndFilters(t *testing.T) {
	python := "/usr/bin/python3"
	_, d := start(t, python)
	ctx := context.Background()
	w := launch(t, d, python, "testdata/many_controls.py", "500")
	seen := map[int]int{}
	var all []Control
	pages := 0
	for n := 1; ; n++ {
		page := Page{Number: n, MaxChars: 4000}
		obs, err := d.Observe(ctx, w.ID, ObserveOptions{Screenshot: true, Marks: true, Page: page})
		if err != nil {
			t.Fatal(err)
		}
		all = obs.Controls
		text, shown, err := obs.Page(page)
		if err != nil {
			t.Fatal(err)
		}
		if len(text) > 4000 {
			t.Fatalf("page %d holds %d characters, more than 4000", n, len(text))
		}
		ids := listedIDs(text)
		if len(ids) != len(shown) || len(ids) == 0 {
			t.Fatalf("page %d lists %d ids for %d controls:\n%s", n, len(ids), len(shown), text)
		}
		drawn := slices.Clone(obs.Drawn)
		slices.Sort(drawn)
		slices.Sort(ids)
		if !slices.Equal(drawn, ids) {
			t.Fatalf("page %d: the text lists ids %v but the screenshot marks %v", n, ids, drawn)
		}
		for _, id := range ids {
			seen[id]++
		}
		pages++
		if !strings.Contains(text, "observe with page=") {
			break
		}
		if n > 50 {
			t.Fatal("more than 50 pages")
		}
	}
	if pages < 5 {
		t.Fatalf("500 controls in pages of 4000 characters made %d pages", pages)
	}
	if len(all) < 500 {
		t.Fatalf("observed %d controls, want the window's 500", len(all))
	}
	for _, c := range all {
		if seen[c.ID] != 1 {
			t.Fatalf("control %d was listed %d times over the pages", c.ID, seen[c.ID])
		}
	}
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := obs.Page(Page{Number: pages + 1, MaxChars: 4000}); err == nil || !strings.Contains(err.Error(), "page(s)") {
		t.Fatalf("a page past the last: %v", err)
	}
	_, boxes, _ := obs.Page(Page{Role: "check box"})
	if len(boxes) != 50 || slices.ContainsFunc(boxes, func(c Control) bool { return c.Role != "check box" }) {
		t.Fatalf("the role filter kept %d controls", len(boxes))
	}
	// 49, 149, 249, 349, 449 and 490-499 hold "49".
	_, named, _ := obs.Page(Page{Name: "49"})
	if len(named) != 15 || slices.ContainsFunc(named, func(c Control) bool { return !strings.Contains(c.Name+c.Text, "49") }) {
		t.Fatalf("the name filter kept %d controls: %+v", len(named), named)
	}
	// Controls of 46x26 pixels, 2 apart: three columns and three rows
	// reach into the top-left 100x60.
	region := Rect{0, 0, 100, 60}
	text, inRegion, _ := obs.Page(Page{Region: &region})
	if len(inRegion) != 9 {
		t.Fatalf("the region %+v kept %d controls:\n%s", region, len(inRegion), text)
	}
}
