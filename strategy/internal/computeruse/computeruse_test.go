package computeruse_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/strategy/internal/computeruse"
)

var d = computeruse.Display{Width: 1280, Height: 720, Scale: 0.6666666666666666}

func at(a llm.ComputerAction, x, y int) llm.ComputerAction { return a.At(x, y) }

func TestStepsMapEachAction(t *testing.T) {
	call := llm.ComputerCall{Actions: []llm.ComputerAction{
		{Action: llm.ActScreenshot},
		at(llm.ComputerAction{Action: llm.ActClick, Button: "right", Count: 2}, 10, 20),
		at(llm.ComputerAction{Action: llm.ActClick, Hold: []string{"ctrl+shift"}}, 1, 1),
		at(llm.ComputerAction{Action: llm.ActMove}, 0, 719),
		{Action: llm.ActDrag, Path: [][2]int{{1, 2}, {5, 5}, {3, 4}}, Hold: []string{"shift"}},
		{Action: llm.ActScroll, ScrollY: -3, Hold: []string{"Control_L"}},
		{Action: llm.ActType, Text: "12+30\n"},
		{Action: llm.ActKeys, Keys: []string{"ctrl+a", "KP_Enter", "ctrl++", "Prior"}},
		{Action: llm.ActWait, Seconds: 60},
		at(llm.ComputerAction{Action: llm.ActMouseDown}, 7, 8),
		{Action: llm.ActMouseUp, Button: "right"},
		{Action: llm.ActCursor},
		{Action: llm.ActHoldKey, Keys: []string{"shift"}, Seconds: 1.5},
	}}
	s := d.Scale
	want := []computeruse.Step{
		{Tool: "click_at", Args: map[string]any{"x": 10, "y": 20, "scale": s, "button": "right", "count": 2}},
		{Tool: "click_at", Args: map[string]any{"x": 1, "y": 1, "scale": s, "button": "left", "count": 1, "keys": []any{"ctrl", "shift"}}},
		{Tool: "move_to", Args: map[string]any{"x": 0, "y": 719, "scale": s}},
		{Tool: "drag", Args: map[string]any{"x": 1, "y": 2, "to_x": 3, "to_y": 4, "button": "left", "scale": s, "keys": []any{"shift"}}},
		{Tool: "scroll_at", Args: map[string]any{"x": 640, "y": 360, "dx": 0, "dy": -3, "scale": s, "keys": []any{"ctrl"}}},
		{Tool: "type_text", Args: map[string]any{"text": "12+30\n"}},
		{Tool: "press_keys", Args: map[string]any{"keys": []any{"ctrl+a", "Return", "ctrl++", "Page_Up"}}},
		{Tool: computeruse.Wait, Args: map[string]any{"seconds": float64(computeruse.MaxWait)}},
		{Tool: "mouse_button", Args: map[string]any{"x": 7, "y": 8, "scale": s, "button": "left", "action": "press"}},
		{Tool: "mouse_button", Args: map[string]any{"button": "right", "action": "release"}},
		{Tool: "pointer_position", Args: map[string]any{"scale": s}},
		{Tool: "press_keys", Args: map[string]any{"keys": []any{"shift"}, "hold": 1.5}},
		{Tool: "screenshot", Args: map[string]any{"screen": true, "scale": s}},
	}
	if got := computeruse.Steps(call, d); !reflect.DeepEqual(got, want) {
		t.Errorf("steps\n%+v\nwant\n%+v", got, want)
	}
}

func TestStepsRefuseWhatTheDesktopCannotDo(t *testing.T) {
	for _, c := range []struct {
		a    llm.ComputerAction
		want string
	}{
		{at(llm.ComputerAction{Action: llm.ActClick}, 1280, 5), "outside the display, 1280x720"},
		{llm.ComputerAction{Action: llm.ActClick}, "needs a point"},
		{at(llm.ComputerAction{Action: llm.ActClick, Button: "back"}, 1, 1), `button "back"`},
		{at(llm.ComputerAction{Action: llm.ActMove, Hold: []string{"shift"}}, 1, 1), "move with keys held"},
		{at(llm.ComputerAction{Action: llm.ActClick, Count: 4}, 1, 1), "at most 3"},
		{llm.ComputerAction{Action: llm.ActDrag, Path: [][2]int{{1, 1}}}, "start and an end"},
		{llm.ComputerAction{Action: llm.ActScroll}, "0 notches"},
		{llm.ComputerAction{Action: llm.ActKeys}, "no keys"},
		{llm.ComputerAction{Action: llm.ActType}, "no text"},
		{at(llm.ComputerAction{Action: llm.ActMouseDown}, 2000, 5), "outside the display"},
		{llm.ComputerAction{Action: llm.ActHoldKey, Keys: []string{"shift"}, Seconds: 60}, "at most 10 s"},
		{llm.ComputerAction{Action: llm.ActZoom}, "zoom action is not supported"},
		{llm.ComputerAction{Action: "teleport"}, `unknown computer action "teleport"`},
		{llm.ComputerAction{Action: "invalid: scroll: scroll_direction \"x\""}, "scroll_direction"},
	} {
		steps := computeruse.Steps(llm.ComputerCall{Actions: []llm.ComputerAction{c.a}}, d)
		if len(steps) != 2 || !strings.Contains(steps[0].Invalid, c.want) || steps[1].Tool != "screenshot" {
			t.Errorf("%+v: %+v, want a refusal saying %q, then the screenshot", c.a, steps, c.want)
		}
	}
}

func TestParseShotReadsTheDesktopsText(t *testing.T) {
	// As tools/desktop's shotText writes it.
	text := "Screenshot of the screen: 1280x720 pixels at scale 0.6666666666666666 of the screen's 1920x1080 at 0,0. click_at, move_to, drag and scroll_at take x,y in this image's pixels."
	got, err := computeruse.ParseShot(text)
	if err != nil || got != d {
		t.Fatalf("got %+v, %v; want %+v", got, err, d)
	}
	if c := got.Computer(); c.Width != 1280 || c.Height != 720 {
		t.Errorf("computer %+v", c)
	}
	for _, bad := range []string{"Screenshot of window w1: 10x10 pixels at scale 1", "Screenshot of the screen: 0x10 pixels at scale 1", "Screenshot of the screen: 10x10 pixels at scale 2"} {
		if _, err := computeruse.ParseShot(bad); err == nil {
			t.Errorf("%q read as a display", bad)
		}
	}
	if args := computeruse.FirstScreenshotArgs(0, 0); args["max_width"] != 1024 || args["max_height"] != 768 || args["screen"] != true {
		t.Errorf("first screenshot %v", args)
	}
}
