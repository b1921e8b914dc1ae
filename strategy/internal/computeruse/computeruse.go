// Package computeruse maps a model's native computer-use calls (the
// normalized llm.ComputerCall that llm/langchain and llm/openai read from
// Anthropic's computer tool and OpenAI's computer-use tool) onto the
// desktop server's pixel tools, as ordinary Saucer commands: click_at,
// move_to, drag, scroll_at, mouse_button, pointer_position, type_text,
// press_keys and screenshot. The
// commands then go through the dispatcher like any other, so approvals,
// the recording, replay and evals apply unchanged.
//
// The model acts on the whole screen, seen at a scale (a Display): the
// screenshot of the screen shrunk to fit a bound, whose size is the
// display size the model is told. Every pixel command names that scale,
// so the desktop maps each point back to the screen exactly as it shrank
// the picture; and every call ends with a new screenshot at that scale,
// which goes back to the model as the call's result.
package computeruse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/saucerhq/saucer/llm"
)

// The desktop tools a computer call becomes.
const (
	ToolClick      = "click_at"
	ToolMove       = "move_to"
	ToolDrag       = "drag"
	ToolScroll     = "scroll_at"
	ToolType       = "type_text"
	ToolKeys       = "press_keys"
	ToolScreenshot = "screenshot"
	ToolButton     = "mouse_button"
	ToolPointer    = "pointer_position"
)

// PixelTools are the desktop tools computer use needs: an app whose tools
// include them all can be offered the native tool, and these are not
// offered beside it (the native tool does what they do).
var PixelTools = []string{ToolClick, ToolMove, ToolDrag, ToolScroll, ToolScreenshot}

// Wait is the pseudo-tool of a wait action: the agent waits itself (no
// device is asked), at most MaxWait.
const Wait = "computer_wait"

// MaxWait bounds one wait action, in seconds.
const MaxWait = 10

// MaxHold bounds one hold_key action, in seconds, as the desktop's
// press_keys hold does.
const MaxHold = 10

// DefaultMaxWidth and DefaultMaxHeight bound the screenshots the model
// sees (and so the display size it is told): XGA, the size Anthropic's
// guide recommends (larger images are shrunk by the API, and the model's
// points with them) and OpenAI's examples use.
const (
	DefaultMaxWidth  = 1024
	DefaultMaxHeight = 768
)

// Display is the screen as the model sees it: its screenshots are Width x
// Height pixels at Scale (image pixels per screen pixel).
type Display struct {
	Width, Height int
	Scale         float64
}

// Computer is the native tool's declaration for this display.
func (d Display) Computer() *llm.Computer { return &llm.Computer{Width: d.Width, Height: d.Height} }

// ScreenshotArgs are the screenshot command's arguments: the whole screen
// at the display's scale.
func (d Display) ScreenshotArgs() map[string]any {
	return map[string]any{"screen": true, "scale": d.Scale}
}

// FirstScreenshotArgs ask the desktop for the screen shrunk to fit the
// bounds (0: the defaults); its answer gives the Display (ParseShot).
func FirstScreenshotArgs(maxWidth, maxHeight int) map[string]any {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxWidth
	}
	if maxHeight <= 0 {
		maxHeight = DefaultMaxHeight
	}
	return map[string]any{"screen": true, "max_width": maxWidth, "max_height": maxHeight}
}

// shotLine is how the desktop's screenshot tool says what it took
// (tools/desktop's shotText).
var shotLine = regexp.MustCompile(`Screenshot of the screen: (\d+)x(\d+) pixels at scale ([0-9.eE+-]+)`)

// ParseShot reads the display from the screenshot tool's text about the
// screen. The scale is printed in the shortest form that reads back to
// the same number, so the display is exactly the desktop's.
func ParseShot(text string) (Display, error) {
	m := shotLine.FindStringSubmatch(text)
	if m == nil {
		return Display{}, fmt.Errorf("the screenshot's text does not say its size and scale (%q): is the app's server Saucer's desktop?", cut(text, 120))
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	s, err := strconv.ParseFloat(m[3], 64)
	if err != nil || w <= 0 || h <= 0 || s <= 0 || s > 1 {
		return Display{}, fmt.Errorf("the screenshot's size %sx%s at scale %s cannot be a display", m[1], m[2], m[3])
	}
	return Display{Width: w, Height: h, Scale: s}, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Step is one command of a computer call: a desktop tool and its
// arguments, or why the action cannot be carried out (Invalid, which the
// model gets back as the action's failure).
type Step struct {
	Tool    string
	Args    map[string]any
	Invalid string
}

// Steps are the commands of a computer call on display d: each action's,
// then a screenshot of the screen at the display's scale (a screenshot
// action asks for nothing else).
func Steps(call llm.ComputerCall, d Display) []Step {
	var out []Step
	for _, a := range call.Actions {
		if a.Action == llm.ActScreenshot {
			continue
		}
		out = append(out, step(a, d))
	}
	return append(out, Step{Tool: ToolScreenshot, Args: d.ScreenshotArgs()})
}

func step(a llm.ComputerAction, d Display) Step {
	invalid := func(format string, args ...any) Step {
		return Step{Tool: a.Action, Invalid: fmt.Sprintf(format, args...)}
	}
	point := func(args map[string]any) (map[string]any, string) {
		x, y, ok := a.Point()
		if !ok {
			return nil, fmt.Sprintf("%s needs a point: give x and y", a.Action)
		}
		if x < 0 || y < 0 || x >= d.Width || y >= d.Height {
			return nil, fmt.Sprintf("the point %d,%d is outside the display, %dx%d pixels from 0,0 at its top left", x, y, d.Width, d.Height)
		}
		args["x"], args["y"], args["scale"] = x, y, d.Scale
		return args, ""
	}
	// Modifier keys held meanwhile, as the desktop's keys argument takes
	// them ("ctrl+shift" held is ctrl and shift).
	var hold []any
	for _, h := range a.Hold {
		for _, k := range strings.Split(Chord(h), "+") {
			if k = strings.TrimSpace(k); k != "" {
				hold = append(hold, k)
			}
		}
	}
	held := func(st Step) Step {
		if len(hold) > 0 && st.Invalid == "" {
			st.Args["keys"] = hold
		}
		return st
	}
	switch a.Action {
	case llm.ActClick:
		button, err := buttonOf(a.Button)
		if err != "" {
			return invalid("%s", err)
		}
		count := max(a.Count, 1)
		if count > 3 {
			return invalid("click count %d: at most 3 (a triple click)", a.Count)
		}
		args, bad := point(map[string]any{"button": button, "count": count})
		if bad != "" {
			return invalid("%s", bad)
		}
		return held(Step{Tool: ToolClick, Args: args})
	case llm.ActMove:
		if len(hold) > 0 {
			return invalid("a move with keys held is not supported: hold them during a click, drag or scroll")
		}
		args, bad := point(map[string]any{})
		if bad != "" {
			return invalid("%s", bad)
		}
		return Step{Tool: ToolMove, Args: args}
	case llm.ActDrag:
		button, err := buttonOf(a.Button)
		if err != "" {
			return invalid("%s", err)
		}
		if len(a.Path) < 2 {
			return invalid("a drag needs a start and an end point (path of at least two)")
		}
		from, to := a.Path[0], a.Path[len(a.Path)-1]
		for _, p := range [][2]int{from, to} {
			if p[0] < 0 || p[1] < 0 || p[0] >= d.Width || p[1] >= d.Height {
				return invalid("the point %d,%d is outside the display, %dx%d pixels", p[0], p[1], d.Width, d.Height)
			}
		}
		// The desktop drags in a straight line: the points between are
		// passed through in order only when they lie on it.
		return held(Step{Tool: ToolDrag, Args: map[string]any{"x": from[0], "y": from[1], "to_x": to[0], "to_y": to[1], "button": button, "scale": d.Scale}})
	case llm.ActScroll:
		if a.ScrollX == 0 && a.ScrollY == 0 {
			return invalid("a scroll of 0 notches: give scroll_x or scroll_y")
		}
		if a.X == nil || a.Y == nil {
			a = a.At(d.Width/2, d.Height/2) // the display's centre
		}
		args, bad := point(map[string]any{"dx": a.ScrollX, "dy": a.ScrollY})
		if bad != "" {
			return invalid("%s", bad)
		}
		return held(Step{Tool: ToolScroll, Args: args})
	case llm.ActType:
		if a.Text == "" {
			return invalid("type with no text")
		}
		return Step{Tool: ToolType, Args: map[string]any{"text": a.Text}}
	case llm.ActKeys:
		if len(a.Keys) == 0 {
			return invalid("keys with no keys: give chords such as ctrl+s or Return")
		}
		chords := make([]any, len(a.Keys))
		for i, k := range a.Keys {
			chords[i] = Chord(k)
		}
		return Step{Tool: ToolKeys, Args: map[string]any{"keys": chords}}
	case llm.ActWait:
		s := a.Seconds
		if s <= 0 {
			s = 1
		}
		return Step{Tool: Wait, Args: map[string]any{"seconds": min(s, MaxWait)}}
	case llm.ActMouseDown, llm.ActMouseUp:
		button, err := buttonOf(a.Button)
		if err != "" {
			return invalid("%s", err)
		}
		args := map[string]any{"button": button, "action": map[bool]string{true: "press", false: "release"}[a.Action == llm.ActMouseDown]}
		if _, _, ok := a.Point(); ok {
			var bad string
			if args, bad = point(args); bad != "" {
				return invalid("%s", bad)
			}
		}
		return held(Step{Tool: ToolButton, Args: args})
	case llm.ActCursor:
		return Step{Tool: ToolPointer, Args: map[string]any{"scale": d.Scale}}
	case llm.ActHoldKey:
		if len(a.Keys) == 0 {
			return invalid("hold_key with no keys: give a key or chord such as shift or Right")
		}
		if a.Seconds <= 0 || a.Seconds > MaxHold {
			return invalid("hold_key for %g s: give a duration above 0 and at most %d s", a.Seconds, MaxHold)
		}
		chords := make([]any, len(a.Keys))
		for i, k := range a.Keys {
			chords[i] = Chord(k)
		}
		return Step{Tool: ToolKeys, Args: map[string]any{"keys": chords, "hold": a.Seconds}}
	case llm.ActZoom:
		return invalid("the zoom action is not supported by Saucer's desktop yet: look at the screenshot")
	}
	if strings.HasPrefix(a.Action, "invalid: ") {
		return invalid("%s", strings.TrimPrefix(a.Action, "invalid: "))
	}
	return invalid("unknown computer action %q: use screenshot, click, move, drag, scroll, type, keys or wait", a.Action)
}

func buttonOf(b string) (string, string) {
	switch b {
	case "", "left":
		return "left", ""
	case "right", "middle":
		return b, ""
	}
	return "", fmt.Sprintf("mouse button %q is not supported: use left, right or middle", b)
}

// keyAliases are xdotool's key names (which Anthropic's models use) and
// others that Saucer's desktop chords name differently.
var keyAliases = map[string]string{
	"kp_enter": "Return", "prior": "Page_Up", "next": "Page_Down", "cmd": "super", "command": "super",
	"super_l": "super", "super_r": "super", "control_l": "ctrl", "control_r": "ctrl", "alt_l": "alt", "alt_r": "alt",
	"shift_l": "shift", "shift_r": "shift", "meta_l": "meta", "esc": "Escape", "option": "alt",
	"control": "ctrl", "kp_add": "plus", "kp_subtract": "minus", "arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
}

// Chord is a key chord in the desktop tools' syntax: xdotool's names
// ("ctrl+s", "Return", "KP_Enter") with the few that differ renamed.
func Chord(k string) string {
	parts := strings.Split(k, "+")
	if strings.HasSuffix(k, "++") {
		parts = append(parts[:len(parts)-2], "+")
	}
	for i, p := range parts {
		if alias, ok := keyAliases[strings.ToLower(strings.TrimSpace(p))]; ok {
			parts[i] = alias
		}
	}
	return strings.Join(parts, "+")
}
