package evals

import (
	"encoding/json"
	"testing"

	"github.com/saucerhq/saucer/command"
)

func TestClickOfUsesWhereAResultLanded(t *testing.T) {
	click := []command.Command{{ToolName: "click", Parameters: map[string]any{"id": 15}}}
	res := []command.Result{{Status: command.Success, Result: json.RawMessage(`{"did":"pressed","point":{"x":35,"y":280}}`)}}
	if x, y, ok := clickOf(click, res); !ok || x != 35 || y != 280 {
		t.Fatalf("clickOf = %v, %v, %v; want the result's point 35, 280", x, y, ok)
	}
	// Coordinates in the command win; a failed result says nothing.
	byXY := []command.Command{{Parameters: map[string]any{"x": 1.0, "y": 2.0}}}
	if x, y, ok := clickOf(byXY, res); !ok || x != 1 || y != 2 {
		t.Fatalf("clickOf = %v, %v, %v", x, y, ok)
	}
	if _, _, ok := clickOf(click, []command.Result{{Status: command.Failure, Error: "gone"}}); ok {
		t.Fatal("a failed click was marked")
	}
}
