package command

import "encoding/json"

// Point finds where a step acted on the screen, for the pictures that
// mark it (the console's step view and the eval report): the first
// command with numeric x and y parameters (or coordinates [x, y]), else
// the first successful result that says where it landed ({"point":
// {"x", "y"}}, as the desktop tools' clicks on a control id do).
func Point(cmds []Command, results []Result) (x, y float64, ok bool) {
	for _, c := range cmds {
		p := c.Parameters
		if x, y, ok := pair(p["x"], p["y"]); ok {
			return x, y, true
		}
		if xy, is := p["coordinates"].([]any); is && len(xy) == 2 {
			if x, y, ok := pair(xy[0], xy[1]); ok {
				return x, y, true
			}
		}
	}
	for _, r := range results {
		var landed struct {
			Point *struct{ X, Y float64 } `json:"point"`
		}
		if r.OK() && len(r.Result) > 0 && r.Result[0] == '{' && json.Unmarshal(r.Result, &landed) == nil && landed.Point != nil {
			return landed.Point.X, landed.Point.Y, true
		}
	}
	return 0, 0, false
}

// pair reads two numbers as a model's arguments carry them.
func pair(a, b any) (float64, float64, bool) {
	x, ok1 := number(a)
	y, ok2 := number(b)
	return x, y, ok1 && ok2
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
