package llm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Native computer use. Some models were trained on a computer-use tool of
// their provider's (Anthropic's "computer" tool type, OpenAI's computer-use
// tool): they see screenshots and answer with pointer and keyboard actions
// in the screenshot's pixels. Saucer offers it in a provider-neutral form:
//
//   - Request.Computer asks the provider to declare its native tool, with
//     the display size the model is told (the size of the screenshots it
//     is shown, after any scaling).
//   - A reply's call of that tool is a ToolCall named ComputerTool whose
//     Arguments are a ComputerCall in JSON (Saucer's normalized actions),
//     and whose Raw keeps what the provider sent, for the recording and to
//     send the turn back to the provider as it was.
//   - The result goes back as a tool turn (RoleTool, ToolCallID) carrying
//     the screenshot in Images and, for OpenAI's safety checks, the checks
//     a person acknowledged in Acknowledged.
//
// Providers without such a tool refuse a request with Computer set; a
// model says whether it has one through ComputerUser.

// ComputerTool is the reserved tool name of native computer-use calls.
const ComputerTool = "computer"

// Computer describes the native computer-use tool of a request.
type Computer struct {
	// Width and Height are the display size the model is told, in pixels:
	// the size of the screenshots it is shown, and the space of the
	// coordinates it answers in.
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Check refuses a display size no screenshot has.
func (c *Computer) Check() error {
	if c.Width <= 0 || c.Height <= 0 {
		return fmt.Errorf("computer use: display size %dx%d: give the screenshots' width and height in pixels, both above 0", c.Width, c.Height)
	}
	return nil
}

// ComputerUser is a Model that can say whether it offers a native
// computer-use tool (Request.Computer). A model that does not implement
// it has none.
type ComputerUser interface {
	SupportsComputer() bool
}

// SupportsComputer reports whether m offers a native computer-use tool.
func SupportsComputer(m Model) bool {
	cu, ok := m.(ComputerUser)
	return ok && cu.SupportsComputer()
}

// The normalized actions (ComputerAction.Action). Coordinates are in the
// display's pixels (Computer), from 0,0 at its top left.
const (
	// ActScreenshot asks for a screenshot and nothing else.
	ActScreenshot = "screenshot"
	// ActClick clicks Button (left, right, middle) Count times (1-3) at X,Y.
	ActClick = "click"
	// ActMove moves the pointer to X,Y.
	ActMove = "move"
	// ActDrag presses Button at Path[0], moves through the path and
	// releases at its last point.
	ActDrag = "drag"
	// ActScroll turns the wheel at X,Y: ScrollY notches down (negative up),
	// ScrollX right (negative left).
	ActScroll = "scroll"
	// ActType types Text.
	ActType = "type"
	// ActKeys presses the chords of Keys in order, in Saucer's chord
	// syntax: "ctrl+s", "Return", "alt+F4" (X keysym names joined by +).
	ActKeys = "keys"
	// ActWait waits Seconds (default 1).
	ActWait = "wait"
	// ActMouseDown and ActMouseUp press or release Button (at X,Y when
	// given); ActHoldKey holds Keys for Seconds; ActCursor asks where the
	// pointer is; ActZoom asks for a part of the screen at full size
	// (Region). Saucer's desktop does not carry these out yet: they come
	// back to the model as failures that say so.
	ActMouseDown = "mouse_down"
	ActMouseUp   = "mouse_up"
	ActHoldKey   = "hold_key"
	ActCursor    = "cursor_position"
	ActZoom      = "zoom"
)

// ComputerAction is one normalized action. Which fields apply depends on
// Action (see the Act constants); an action a provider sends that has no
// Saucer name keeps the provider's name, so that it can be refused by name.
type ComputerAction struct {
	Action string `json:"action"`
	X      *int   `json:"x,omitempty"`
	Y      *int   `json:"y,omitempty"`
	// Button is left, right or middle; empty means left.
	Button string `json:"button,omitempty"`
	// Count is 1 (or 0), 2 for a double and 3 for a triple click.
	Count int `json:"count,omitempty"`
	// Path are the points of a drag, [x, y] each, at least two.
	Path [][2]int `json:"path,omitempty"`
	// ScrollX and ScrollY are wheel notches.
	ScrollX int    `json:"scroll_x,omitempty"`
	ScrollY int    `json:"scroll_y,omitempty"`
	Text    string `json:"text,omitempty"`
	// Keys are chords for ActKeys and ActHoldKey.
	Keys []string `json:"keys,omitempty"`
	// Hold are modifier keys held during a click, scroll or drag
	// ("shift", "ctrl").
	Hold []string `json:"hold,omitempty"`
	// Seconds is how long ActWait waits or ActHoldKey holds.
	Seconds float64 `json:"seconds,omitempty"`
	// Region is ActZoom's [x0, y0, x1, y1].
	Region []int `json:"region,omitempty"`
}

// Point returns the action's point and whether it has one.
func (a ComputerAction) Point() (x, y int, ok bool) {
	if a.X == nil || a.Y == nil {
		return 0, 0, false
	}
	return *a.X, *a.Y, true
}

// At returns a with its point set to x, y.
func (a ComputerAction) At(x, y int) ComputerAction {
	a.X, a.Y = &x, &y
	return a
}

// SafetyCheck is a check a provider raised on a computer-use call
// (OpenAI's pending_safety_checks): the call may run only once a person
// has acknowledged it, and the acknowledgement goes back with the result.
type SafetyCheck struct {
	ID      string `json:"id"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// ComputerCall is the Arguments of a ToolCall named ComputerTool: the
// actions to carry out in order (Anthropic sends one per call, OpenAI may
// send several), then a screenshot goes back as the call's result.
type ComputerCall struct {
	Actions []ComputerAction `json:"actions"`
	// SafetyChecks must each be acknowledged by a person before the
	// actions run; never acknowledge one by default.
	SafetyChecks []SafetyCheck `json:"safety_checks,omitempty"`
}

// ParseComputerCall reads a computer call's Arguments.
func ParseComputerCall(args string) (ComputerCall, error) {
	var c ComputerCall
	if err := json.Unmarshal([]byte(args), &c); err != nil {
		return c, fmt.Errorf("computer call: arguments are not a ComputerCall object ({\"actions\": [...]}): %v", err)
	}
	if len(c.Actions) == 0 {
		return c, fmt.Errorf("computer call: no actions: give at least one, such as {\"action\": \"screenshot\"}")
	}
	for i, a := range c.Actions {
		if strings.TrimSpace(a.Action) == "" {
			return c, fmt.Errorf("computer call: action %d has no name (screenshot, click, move, drag, scroll, type, keys, wait)", i+1)
		}
	}
	return c, nil
}

// ComputerToolCall builds the ToolCall of a normalized computer call,
// keeping raw (the provider's own form of it).
func ComputerToolCall(id string, call ComputerCall, raw json.RawMessage) ToolCall {
	b, _ := json.Marshal(call) // plain data: cannot fail
	return ToolCall{ID: id, Name: ComputerTool, Arguments: string(b), Raw: raw}
}

// String prints a call as {ID Name Arguments}, with the provider's own
// form after it when there is one.
func (c ToolCall) String() string {
	if len(c.Raw) == 0 {
		return "{" + c.ID + " " + c.Name + " " + c.Arguments + "}"
	}
	return "{" + c.ID + " " + c.Name + " " + c.Arguments + " raw " + string(c.Raw) + "}"
}
