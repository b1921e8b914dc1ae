package command

import (
	"encoding/json"
	"testing"
)

func TestPointUsesWhereAResultLanded(t *testing.T) {
	click := []Command{{ToolName: "click", Parameters: map[string]any{"id": 15}}}
	res := []Result{{Status: Success, Result: json.RawMessage(`{"did":"pressed","point":{"x":35,"y":280}}`)}}
	if x, y, ok := Point(click, res); !ok || x != 35 || y != 280 {
		t.Fatalf("Point = %v, %v, %v; want the result's point 35, 280", x, y, ok)
	}
	// Coordinates in the command win, in any of the forms a model sends;
	// a failed result says nothing.
	for _, p := range []map[string]any{
		{"x": 1.0, "y": 2.0},
		{"x": 1, "y": 2},
		{"x": json.Number("1"), "y": json.Number("2")},
		{"coordinates": []any{1.0, 2.0}},
	} {
		if x, y, ok := Point([]Command{{Parameters: p}}, res); !ok || x != 1 || y != 2 {
			t.Fatalf("Point(%v) = %v, %v, %v; want 1, 2", p, x, y, ok)
		}
	}
	if _, _, ok := Point([]Command{{Parameters: map[string]any{"x": "1", "y": 2.0}}}, nil); ok {
		t.Fatal("a string coordinate was taken for a number")
	}
	if _, _, ok := Point(click, []Result{{Status: Failure, Error: "gone"}}); ok {
		t.Fatal("a failed click was marked")
	}
}
