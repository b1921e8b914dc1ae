package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/constellation"
)

// followEvents shows the planner's refused edits with their reasons, not
// only a count of the edits made, and the nodes that wait for a device.
func TestFollowEventsShowsRefusals(t *testing.T) {
	var in bytes.Buffer
	for _, e := range []constellation.Event{
		{Kind: "planner", Status: "CONTINUE", Edits: []constellation.Edit{
			{Op: "add_node", Args: map[string]any{"id": "u"}, Reason: "not applied: the edits of one reply are applied together or not at all, and …"},
			{Op: "add_edge", Args: map[string]any{"from": "u", "to": "v"}, Reason: `add_edge: node "v" is running`},
		}},
		{Kind: "node_wait", Node: "k4", Device: "sb1"},
		{Kind: "end", Status: "failed", Graph: &constellation.Graph{ID: "g", Status: constellation.Failed}},
	} {
		b, _ := json.Marshal(e)
		in.WriteString("data: " + string(b) + "\n\n")
	}
	var out bytes.Buffer
	g, err := followEvents(&in, &out)
	if err != nil || g == nil || g.ID != "g" {
		t.Fatalf("%v %v", g, err)
	}
	for _, want := range []string{"planner: CONTINUE, 0 edit(s) made [], 2 refused", "refused add_node u: not applied", `refused add_edge u→v: add_edge: node "v" is running`,
		"k4 waits for device sb1 to connect"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}
