package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/saucerhq/saucer/tools"
)

// Tool names, for the agents' data collection.
const (
	ToolObserve     = "observe"
	ToolListWindows = "list_windows"
)

type windowArgs struct {
	Window string `json:"window,omitempty" jsonschema_description:"Window id from list_windows (w1, w2, ...); empty: the open dialog if any, else the active window."`
}

type observeArgs struct {
	windowArgs
	Screenshot *bool  `json:"screenshot,omitempty" jsonschema_description:"Attach a screenshot of the window with each listed control's box and id drawn on it (default true)."`
	Role       string `json:"role,omitempty" jsonschema_description:"List only controls of this role (push button, entry, table cell, ...)."`
	Name       string `json:"name,omitempty" jsonschema_description:"List only controls whose name or text contains this (any case)."`
	Region     *Rect  `json:"region,omitempty" jsonschema_description:"List only controls overlapping this part of the window, in the screenshot's pixels: {x, y, w, h}."`
	Page       int    `json:"page,omitempty" jsonschema_description:"Page of the list to show, from 1 (a long list says how many pages it has)."`
	MaxChars   int    `json:"max_chars,omitempty" jsonschema_description:"Most characters of text per page (default 12000); a page holds whole lines."`
}

// cellArgs are the arguments that pick a cell of a table given by id;
// every argument set that takes an id has them, after the id.
type cellArgs struct {
	Row    int    `json:"row,omitempty" jsonschema_description:"With id a table: the row of its cell to act on, from 1."`
	Column int    `json:"column,omitempty" jsonschema_description:"With id a table: the column of its cell to act on, from 1."`
	Cell   string `json:"cell,omitempty" jsonschema_description:"With id a spreadsheet's table: the cell to act on by its address (B7), instead of row and column."`
}

// at is the target: control id, or its cell that a picks.
func (a cellArgs) at(id int) Target {
	return Target{ID: id, Row: a.Row, Column: a.Column, Cell: a.Cell}
}

type idArgs struct {
	ID int `json:"id" jsonschema_description:"Control id from the latest observe."`
	cellArgs
}

type clickArgs struct {
	ID int `json:"id" jsonschema_description:"Control id from the latest observe."`
	cellArgs
	Button string `json:"button,omitempty" jsonschema:"enum=left,enum=right,enum=middle" jsonschema_description:"Mouse button (default left)."`
	Double bool   `json:"double,omitempty" jsonschema_description:"Double-click."`
}

type typeArgs struct {
	Text string `json:"text" jsonschema_description:"Text to type; \\n presses Return."`
	ID   int    `json:"id,omitempty" jsonschema_description:"Control to focus first; 0 or absent: type where the keyboard focus is."`
	cellArgs
	Window string `json:"window,omitempty" jsonschema_description:"Window to type into when no id is given; empty: the open dialog if any, else the active window."`
}

type keysArgs struct {
	Keys []string `json:"keys" jsonschema_description:"Key chords pressed in order, e.g. [\"ctrl+s\"], [\"Return\"], [\"ctrl+shift+Tab\", \"Escape\"]."`
	ID   int      `json:"id,omitempty" jsonschema_description:"Control to focus first; 0 or absent: where the keyboard focus is."`
	cellArgs
	Window string `json:"window,omitempty" jsonschema_description:"Window when no id is given; empty: the open dialog if any, else the active window."`
	// Hold is only press_keys'.
	Hold float64 `json:"hold,omitempty" jsonschema_description:"Seconds to hold each chord down before releasing it (up to 10): a long press, a game's key; default: pressed and released at once."`
}

type setValueArgs struct {
	ID int `json:"id" jsonschema_description:"Control id from the latest observe: an editable text field, a control with a value (slider, spin button), or a table (with row and column, or cell)."`
	cellArgs
	Value string `json:"value" jsonschema_description:"The new text, or number for a value control."`
}

type scrollArgs struct {
	ID int `json:"id,omitempty" jsonschema_description:"Control to scroll over; 0 or absent: the window's centre."`
	cellArgs
	Window    string `json:"window,omitempty" jsonschema_description:"Window when no id is given; empty: the open dialog if any, else the active window."`
	Direction string `json:"direction" jsonschema:"enum=up,enum=down,enum=left,enum=right" jsonschema_description:"Scroll direction."`
	Amount    int    `json:"amount,omitempty" jsonschema_description:"Wheel steps (default 3, at most 50)."`
}

type screenshotArgs struct {
	windowArgs
	Screen    bool    `json:"screen,omitempty" jsonschema_description:"The whole screen instead of a window."`
	Scale     float64 `json:"scale,omitempty" jsonschema_description:"Shrink the image: image pixels per screen pixel, above 0 and at most 1 (default 1, full size)."`
	MaxWidth  int     `json:"max_width,omitempty" jsonschema_description:"Shrink the image to at most this many pixels wide (keeps its proportions)."`
	MaxHeight int     `json:"max_height,omitempty" jsonschema_description:"Shrink the image to at most this many pixels high."`
}

// pointArgs place a pixel action: a point of a window's screenshot, or
// of the screen's.
type pointArgs struct {
	Window string  `json:"window,omitempty" jsonschema_description:"Window id (w1, ...): x and y are in that window's screenshot. Empty: in the screen's (screenshot with screen true)."`
	X      int     `json:"x" jsonschema_description:"Pixels from the screenshot's left edge."`
	Y      int     `json:"y" jsonschema_description:"Pixels from the screenshot's top edge."`
	Scale  float64 `json:"scale,omitempty" jsonschema_description:"The screenshot's scale, as it said (0.5 for a half-size image); default: that of the last screenshot of this window (or the screen), else 1."`
}

func (a pointArgs) at() At { return At{Window: a.Window, X: a.X, Y: a.Y, Scale: a.Scale} }

// holdArgs are the modifier keys a pixel action holds.
type holdArgs struct {
	Keys []string `json:"keys,omitempty" jsonschema_description:"Modifier keys held meanwhile: ctrl, shift, alt, super (e.g. [\"ctrl\"] for a ctrl+click)."`
}

func (a pointArgs) holding(h holdArgs) At { at := a.at(); at.Hold = h.Keys; return at }

type clickAtArgs struct {
	pointArgs
	holdArgs
	Button string `json:"button,omitempty" jsonschema:"enum=left,enum=right,enum=middle" jsonschema_description:"Mouse button (default left)."`
	Count  int    `json:"count,omitempty" jsonschema_description:"Clicks: 1 (default), 2 double-click, 3 triple-click."`
}

type dragArgs struct {
	pointArgs
	holdArgs
	ToX    int    `json:"to_x" jsonschema_description:"Where to release: pixels from the same screenshot's left edge."`
	ToY    int    `json:"to_y" jsonschema_description:"Where to release: pixels from its top edge."`
	Button string `json:"button,omitempty" jsonschema:"enum=left,enum=right,enum=middle" jsonschema_description:"Mouse button held (default left)."`
}

type mouseButtonArgs struct {
	Window string  `json:"window,omitempty" jsonschema_description:"Window id (w1, ...): x and y are in that window's screenshot. Empty: in the screen's (screenshot with screen true)."`
	X      *int    `json:"x,omitempty" jsonschema_description:"Pixels from the screenshot's left edge; with y, the pointer moves there first. Neither: where the pointer is."`
	Y      *int    `json:"y,omitempty" jsonschema_description:"Pixels from the screenshot's top edge."`
	Scale  float64 `json:"scale,omitempty" jsonschema_description:"The screenshot's scale, as it said; default: that of the last screenshot of this window (or the screen), else 1."`
	Button string  `json:"button,omitempty" jsonschema:"enum=left,enum=right,enum=middle" jsonschema_description:"Mouse button (default left)."`
	Action string  `json:"action" jsonschema:"enum=press,enum=release" jsonschema_description:"press holds the button down; release lets it go."`
}

type pointerArgs struct {
	Window string  `json:"window,omitempty" jsonschema_description:"Window id (w1, ...): the position in that window's screenshot. Empty: in the screen's."`
	Scale  float64 `json:"scale,omitempty" jsonschema_description:"The screenshot's scale; default: that of the last screenshot of this window (or the screen), else 1."`
}

type scrollAtArgs struct {
	pointArgs
	holdArgs
	DX int `json:"dx,omitempty" jsonschema_description:"Wheel notches right (negative: left)."`
	DY int `json:"dy,omitempty" jsonschema_description:"Wheel notches down (negative: up)."`
}

type resizeArgs struct {
	windowArgs
	Width  int `json:"width" jsonschema_description:"The window's new width in pixels."`
	Height int `json:"height" jsonschema_description:"The window's new height in pixels."`
}

type moveArgs struct {
	windowArgs
	X int `json:"x" jsonschema_description:"Where the window's top-left corner goes, in the screen's pixels (list_windows gives bounds the same way)."`
	Y int `json:"y" jsonschema_description:"The same, from the screen's top."`
}

type launchArgs struct {
	Command     argv    `json:"command,omitempty" jsonschema_description:"Program and arguments, e.g. [\"mousepad\", \"notes.txt\"] (a string is split as a desktop file's Exec line is)."`
	DesktopFile string  `json:"desktop_file,omitempty" jsonschema_description:"Instead of command: a desktop file's name (galculator) or path; its Exec line is run."`
	Timeout     float64 `json:"timeout,omitempty" jsonschema_description:"Seconds to wait for its window (default: the desktop's launch timeout); more for an application slow to start."`
}

// argv is a command: program and arguments. A model sends it as one
// string often enough (a model in the seat's first launch_app did) that
// a string is taken too, split with quotes as a desktop file's Exec line
// is; the schema asks for the array.
type argv []string

func (a *argv) UnmarshalJSON(b []byte) error {
	var line string
	if json.Unmarshal(b, &line) == nil {
		args, err := execArgs(line)
		if err != nil {
			return fmt.Errorf("command %q: %w", line, err)
		}
		*a = args
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("command: give the program and its arguments as an array of strings, e.g. [\"mousepad\", \"notes.txt\"]")
	}
	*a = list
	return nil
}

func (argv) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
}

type waitArgs struct {
	Window  string  `json:"window,omitempty" jsonschema_description:"Window id from list_windows (w1, w2, ...); empty: the open dialog if any, else the active window (with title alone: any window)."`
	Role    string  `json:"role,omitempty" jsonschema_description:"Wait for a control of this role (link, push button, entry, ...)."`
	Name    string  `json:"name,omitempty" jsonschema_description:"Wait for a control whose name or text contains this (any case)."`
	Title   string  `json:"title,omitempty" jsonschema_description:"Wait for a window whose title contains this (any case): a page that loaded, a dialog that opened."`
	Timeout float64 `json:"timeout,omitempty" jsonschema_description:"Seconds to wait at most (default 10, at most 120)."`
}

// NewServer builds the desktop MCP server (name "desktop") over d.
func NewServer(d *Desktop) *tools.Server {
	s := &tools.Server{Name: "desktop", Instructions: "Sees and drives the applications on this desktop. observe lists a window's controls, each with a numeric id, " +
		"and attaches a screenshot with the ids drawn on the controls; act on a control by its id. Ids stay the same while " +
		"the control exists; an id whose control is gone is refused: observe again. Every action returns what changed."}
	read := tools.Annotations{Risk: tools.RiskRead, Idempotent: true}
	write := tools.Annotations{Risk: tools.RiskWrite}
	destructive := tools.Annotations{Risk: tools.RiskDestructive}
	titled := func(a tools.Annotations, title string) tools.Annotations { a.Title = title; return a }
	waiting := func(a tools.Annotations) tools.Annotations { a.Waits = true; return a }

	effect := func(e *Effect, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		return json.Marshal(e)
	}
	s.Add(tools.New(ToolListWindows, "List the applications' open windows: id, title, application, process id, position and size, and which is active.",
		titled(read, "List windows"), func(ctx context.Context, _ struct{}) ([]Window, error) {
			ws, err := d.Windows(ctx)
			if ws == nil && err == nil {
				ws = []Window{} // [] for none, not null
			}
			return ws, err
		}))
	s.Add(tools.New(ToolObserve, "Read a window's controls (role, name, states, actions, text or value, position) as one line each, "+
		"with the id to act on in [brackets], and attach a screenshot with each listed control's box and id drawn on it. "+
		"A long list comes in pages (page); role, name and region narrow it. A table lists its size and the cells in view; act on any of its cells by the table's id with row and column (or cell, e.g. B7).",
		titled(read, "Observe a window"), func(ctx context.Context, a observeArgs) (tools.Content, error) {
			shot := a.Screenshot == nil || *a.Screenshot
			page := Page{Role: a.Role, Name: a.Name, Region: a.Region, Number: a.Page, MaxChars: a.MaxChars}
			obs, err := d.Observe(ctx, a.Window, ObserveOptions{Screenshot: shot, Marks: shot, Page: page})
			if err != nil {
				return nil, err
			}
			text, _, err := obs.Page(page)
			if err != nil {
				return nil, err
			}
			out := tools.Content{tools.Text(text)}
			if shot && len(obs.PNG) > 0 { // none where the compositor offers no capture: the text says so
				out[0] = tools.Text(text + shotText(obs.Frame) + boxesNote(obs.Frame) + "\n")
				out = append(out, tools.Image(obs.PNG, "image/png"))
			}
			return out, nil
		}))
	s.Add(tools.New("screenshot", "Capture a window (or the whole screen) as it looks now, no marks, optionally shrunk. "+
		"Says the image's size and scale: the pixel tools (click_at, move_to, drag, scroll_at) take x,y in this image's pixels.",
		titled(read, "Take a screenshot"), func(ctx context.Context, a screenshotArgs) (tools.Content, error) {
			sh, err := d.Screenshot(ctx, a.Window, a.Screen, Fit{Scale: a.Scale, MaxWidth: a.MaxWidth, MaxHeight: a.MaxHeight})
			if err != nil {
				return nil, err
			}
			text := shotText(sh.Frame)
			if sh.Stale != "" {
				text += "\nNote: " + sh.Stale
			}
			return tools.Content{tools.Text(text), tools.Image(sh.PNG, "image/png")}, nil
		}))
	s.Add(tools.New("click_at", "Click at a point of a screenshot (a window's, or the screen's with no window): for what has no control id. Returns what changed.",
		titled(write, "Click at a point"), func(ctx context.Context, a clickAtArgs) (json.RawMessage, error) {
			return effect(d.ClickAt(ctx, a.holding(a.holdArgs), a.Button, a.Count))
		}))
	s.Add(tools.New("move_to", "Move the pointer to a point of a screenshot (hover: tooltips, menus that open on hover). Returns what changed.",
		titled(write, "Move the pointer"), func(ctx context.Context, a pointArgs) (json.RawMessage, error) {
			return effect(d.MoveTo(ctx, a.at()))
		}))
	s.Add(tools.New("drag", "Press a mouse button at x,y, move to to_x,to_y and release there, both in the same screenshot: drag and drop, draw, select, move a slider. Returns what changed.",
		titled(write, "Drag"), func(ctx context.Context, a dragArgs) (json.RawMessage, error) {
			return effect(d.Drag(ctx, a.holding(a.holdArgs), image.Pt(a.ToX, a.ToY), a.Button))
		}))
	s.Add(tools.New("mouse_button", "Press or release a mouse button, at a point of a screenshot or where the pointer is: a drag made of its parts (press, move_to, release), a long press. Release what you press. Returns what changed.",
		titled(write, "Press or release a mouse button"), func(ctx context.Context, a mouseButtonArgs) (json.RawMessage, error) {
			var at *At
			switch {
			case a.X != nil && a.Y != nil:
				at = &At{Window: a.Window, X: *a.X, Y: *a.Y, Scale: a.Scale}
			case a.X != nil || a.Y != nil:
				return nil, errors.New("give both x and y, or neither (where the pointer is)")
			}
			if a.Action != "press" && a.Action != "release" {
				return nil, fmt.Errorf("action %q: press or release", a.Action)
			}
			return effect(d.MouseButton(ctx, at, a.Button, a.Action == "press"))
		}))
	s.Add(tools.New("pointer_position", "Where the mouse pointer is, as x,y of a window's screenshot or the screen's: the point click_at would take there.",
		titled(read, "Where the pointer is"), func(ctx context.Context, a pointerArgs) (json.RawMessage, error) {
			p, f, err := d.PointerPosition(ctx, a.Window, a.Scale)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"x": p.X, "y": p.Y, "of": f.String(), "scale": f.Scale})
		}))
	s.Add(tools.New("scroll_at", "Turn the mouse wheel at a point of a screenshot: dy notches down (negative up), dx right (negative left). Returns what changed.",
		titled(write, "Scroll at a point"), func(ctx context.Context, a scrollAtArgs) (json.RawMessage, error) {
			return effect(d.ScrollAt(ctx, a.holding(a.holdArgs), a.DX, a.DY))
		}))
	s.Add(tools.New("click", "Click a control: its own action (press, activate) for a single left click where it has one, else the mouse at its centre. Returns what changed.",
		titled(write, "Click a control"), func(ctx context.Context, a clickArgs) (json.RawMessage, error) {
			n := 1
			if a.Double {
				n = 2
			}
			return effect(d.Click(ctx, a.at(a.ID), a.Button, n))
		}))
	s.Add(tools.New("type_text", "Type text with the keyboard into a control (focused first) or where the focus is. Refused in a terminal: use type_in_terminal. Returns what changed.",
		titled(write, "Type text"), func(ctx context.Context, a typeArgs) (json.RawMessage, error) {
			return effect(d.Type(ctx, a.at(a.ID), a.Window, a.Text, false))
		}))
	s.Add(tools.New("type_in_terminal", "Type text into a terminal window, where it may run commands. Returns what changed.",
		titled(destructive, "Type into a terminal"), func(ctx context.Context, a typeArgs) (json.RawMessage, error) {
			return effect(d.Type(ctx, a.at(a.ID), a.Window, a.Text, true))
		}))
	s.Add(tools.New("press_keys", "Press key chords in order (ctrl+s, Return, alt+F4, ...), into a control (focused first) or where the focus is. Refused in a terminal. Returns what changed.",
		titled(write, "Press keys"), func(ctx context.Context, a keysArgs) (json.RawMessage, error) {
			if a.Hold != 0 {
				return effect(d.HoldKeys(ctx, a.at(a.ID), a.Window, a.Keys, a.Hold))
			}
			return effect(d.Keys(ctx, a.at(a.ID), a.Window, a.Keys, false))
		}))
	s.Add(tools.New("set_value", "Replace the text of an editable field, or set the number of a slider or spin button. Returns what changed.",
		titled(write, "Set a value"), func(ctx context.Context, a setValueArgs) (json.RawMessage, error) {
			return effect(d.SetValue(ctx, a.at(a.ID), a.Value))
		}))
	s.Add(tools.New("select", "Select an item (list item, tab, table cell, menu item). Returns what changed.",
		titled(write, "Select an item"), func(ctx context.Context, a idArgs) (json.RawMessage, error) {
			return effect(d.Select(ctx, a.at(a.ID)))
		}))
	s.Add(tools.New("scroll", "Turn the mouse wheel over a control or a window. Returns what changed.",
		titled(write, "Scroll"), func(ctx context.Context, a scrollArgs) (json.RawMessage, error) {
			return effect(d.Scroll(ctx, a.at(a.ID), a.Window, a.Direction, a.Amount))
		}))
	s.Add(tools.New("focus_window", "Raise a window and give it the keyboard focus.",
		titled(write, "Focus a window"), func(ctx context.Context, a windowArgs) (json.RawMessage, error) {
			return effect(d.FocusWindow(ctx, a.Window))
		}))
	s.Add(tools.New("resize_window", "Resize a window (its top-left corner stays). Returns what changed and where the window is now.",
		titled(write, "Resize a window"), func(ctx context.Context, a resizeArgs) (json.RawMessage, error) {
			return effect(d.ResizeWindow(ctx, a.Window, a.Width, a.Height))
		}))
	s.Add(tools.New("move_window", "Move a window's top-left corner to x,y of the screen. Returns what changed and where the window is now.",
		titled(write, "Move a window"), func(ctx context.Context, a moveArgs) (json.RawMessage, error) {
			return effect(d.MoveWindow(ctx, a.Window, a.X, a.Y))
		}))
	s.Add(tools.New("maximize_window", "Make a window fill the screen. Returns what changed and where the window is now.",
		titled(write, "Maximise a window"), func(ctx context.Context, a windowArgs) (json.RawMessage, error) {
			return effect(d.MaximizeWindow(ctx, a.Window))
		}))
	s.Add(tools.New("close_window", "Ask a window's application to close it, as its close button does; unsaved work may be lost, or the application may ask (see new_windows).",
		titled(destructive, "Close a window"), func(ctx context.Context, a windowArgs) (json.RawMessage, error) {
			return effect(d.CloseWindow(ctx, a.Window))
		}))
	s.Add(tools.New("wait_for", "Wait until a control appears (by role and/or name) or a window's title contains a text, instead of acting on a window "+
		"that is still loading or changing. Returns the matching controls with their ids; fails after the timeout with what is there.",
		waiting(titled(read, "Wait for a control or title")), func(ctx context.Context, a waitArgs) (string, error) {
			if a.Timeout < 0 {
				return "", errors.New("timeout: give seconds above 0, or leave it out for 10")
			}
			return d.WaitFor(ctx, Wait{Window: a.Window, Role: a.Role, Name: a.Name, Title: a.Title,
				Timeout: time.Duration(a.Timeout * float64(time.Second))})
		}))
	s.Add(tools.New("launch_app", "Start an application by command or desktop file and wait for its first window to be ready (a page or document loaded, its controls settled); returns the new windows, and in ready what it waited for. A named desktop app starts its own application when neither is given.",
		titled(destructive, "Launch an application"), func(ctx context.Context, a launchArgs) (json.RawMessage, error) {
			if a.Timeout < 0 || a.Timeout > 1800 {
				return nil, fmt.Errorf("timeout %g: give seconds from 1 to 1800, or none for the desktop's launch timeout", a.Timeout)
			}
			return effect(d.LaunchWithin(ctx, a.Command, a.DesktopFile, time.Duration(a.Timeout*float64(time.Second))))
		}))
	return s
}

// shotText says what a screenshot shows and how its pixels map to the
// screen's.
// boxesNote says how the list's boxes, in the screen's pixels, map onto
// a window's screenshot that does not start at the screen's corner:
// models in the seat clicked at listed boxes in a window at 10,10 and
// were 10 pixels off, or had to work it out from the drawn marks.
func boxesNote(f Frame) string {
	if f.Window == "" || f.Area.X == 0 && f.Area.Y == 0 {
		return ""
	}
	if f.Scale == 1 {
		return fmt.Sprintf(" The boxes listed above (@x,y) count the screen's pixels: in this image, subtract the window's corner, so @x,y is at x-%d,y-%d.", f.Area.X, f.Area.Y)
	}
	return fmt.Sprintf(" The boxes listed above (@x,y) count the screen's pixels: in this image @x,y is at (x-%d)*%g,(y-%d)*%g.", f.Area.X, f.Scale, f.Area.Y, f.Scale)
}

func shotText(f Frame) string {
	of, tools := "the screen", ""
	if f.Window != "" {
		of, tools = "window "+f.Window, " with window "+f.Window
	}
	return fmt.Sprintf("Screenshot of %s: %dx%d pixels at scale %g of the screen's %dx%d at %d,%d. "+
		"click_at, move_to, drag and scroll_at%s take x,y in this image's pixels.",
		of, f.Width, f.Height, f.Scale, f.Area.W, f.Area.H, f.Area.X, f.Area.Y, tools)
}
