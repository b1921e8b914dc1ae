package desktop

// AT-SPI's role numbers (AtspiRole, the value GetRole and the cache
// report) as the names GetRoleName gives, so that a bulk fetch needs no
// call per node for them.
var roleNames = [...]string{
	"invalid", "accelerator label", "alert", "animation", "arrow", "calendar", "canvas", "check box",
	"check menu item", "color chooser", "column header", "combo box", "date editor", "desktop icon",
	"desktop frame", "dial", "dialog", "directory pane", "drawing area", "file chooser", "filler",
	"focus traversable", "font chooser", "frame", "glass pane", "html container", "icon", "image",
	"internal frame", "label", "layered pane", "list", "list item", "menu", "menu bar", "menu item",
	"option pane", "page tab", "page tab list", "panel", "password text", "popup menu", "progress bar",
	"push button", "radio button", "radio menu item", "root pane", "row header", "scroll bar",
	"scroll pane", "separator", "slider", "spin button", "split pane", "status bar", "table",
	"table cell", "table column header", "table row header", "tearoff menu item", "terminal", "text",
	"toggle button", "tool bar", "tool tip", "tree", "tree table", "unknown", "viewport", "window",
	"extended", "header", "footer", "paragraph", "ruler", "application", "autocomplete", "editbar",
	"embedded", "entry", "chart", "caption", "document frame", "heading", "page", "section",
	"redundant object", "form", "link", "input method window", "table row", "tree item",
	"document spreadsheet", "document presentation", "document text", "document web",
	"document email", "comment", "list box", "grouping", "image map", "notification", "info bar",
	"level bar", "title bar", "block quote", "audio", "video", "definition", "article", "landmark",
	"log", "marquee", "math", "rating", "timer", "static", "math fraction", "math root", "subscript",
	"superscript", "description list", "description term", "description value", "footnote",
	"content deletion", "content insertion", "mark", "suggestion", "push button menu",
}

func roleName(r uint32) string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "unknown"
}

// AT-SPI's state bits (AtspiStateType): GetState returns them as two
// 32-bit words.
var stateNames = [...]string{
	"invalid", "active", "armed", "busy", "checked", "collapsed", "defunct", "editable", "enabled",
	"expandable", "expanded", "focusable", "focused", "has tooltip", "horizontal", "iconified", "modal",
	"multi line", "multiselectable", "opaque", "pressed", "resizable", "selectable", "selected",
	"sensitive", "showing", "single line", "stale", "transient", "vertical", "visible",
	"manages descendants", "indeterminate", "required", "truncated", "animated", "invalid entry",
	"supports autocompletion", "selectable text", "is default", "visited", "checkable", "has popup",
	"read only",
}

// The states Saucer reads itself.
const (
	stActive             = 1
	stBusy               = 3
	stChecked            = 4
	stDefunct            = 6
	stEditable           = 7
	stEnabled            = 8
	stExpanded           = 10
	stFocusable          = 11
	stFocused            = 12
	stModal              = 16
	stPressed            = 20
	stSelected           = 23
	stSensitive          = 24
	stShowing            = 25
	stVisible            = 30
	stManagesDescendants = 31
	stReadOnly           = 43
)

// states is a control's state set.
type states uint64

func statesOf(words []uint32) states {
	var s states
	for i, w := range words {
		if i > 1 {
			break
		}
		s |= states(w) << (32 * i)
	}
	return s
}

func (s states) has(bit int) bool { return s&(1<<bit) != 0 }

// shown lists the states worth telling the model: what a control is or
// has, not the defaults every visible control shares.
func (s states) shown() []string {
	var out []string
	for bit, name := range stateNames {
		switch bit {
		case stChecked, stEditable, stExpanded, stFocused, stModal, stPressed, stSelected, stReadOnly, stActive:
		default:
			continue
		}
		if s.has(bit) {
			out = append(out, name)
		}
	}
	// GTK 4 and Chromium set SENSITIVE only, ATK toolkits both.
	if !s.has(stSensitive) && !s.has(stEnabled) {
		out = append(out, "disabled")
	}
	return out
}

// interactive roles are controls a person acts on; a control of another
// role is kept when it has an action, editable text, a value or a name
// worth reading.
var interactive = map[string]bool{
	"push button": true, "toggle button": true, "check box": true, "radio button": true, "menu item": true,
	"check menu item": true, "radio menu item": true, "menu": true, "combo box": true, "entry": true,
	"text": true, "password text": true, "spin button": true, "slider": true, "page tab": true,
	"list item": true, "table cell": true, "tree item": true, "link": true, "terminal": true,
	"scroll bar": true, "push button menu": true, "document text": true, "paragraph": true,
	"table column header": true, "table row header": true, "column header": true, "row header": true,
}

// container roles group other objects: one is a control only when it has
// editable text or a value (GTK's and Chromium's containers all claim the
// Action and Text interfaces).
var container = map[string]bool{
	"panel": true, "filler": true, "scroll pane": true, "viewport": true, "split pane": true, "layered pane": true,
	"root pane": true, "glass pane": true, "internal frame": true, "option pane": true, "section": true,
	"grouping": true, "form": true, "tool bar": true, "menu bar": true, "page tab list": true, "table row": true,
	"document frame": true, "document web": true, "document spreadsheet": true, "document presentation": true,
	"document email": true, "redundant object": true, "embedded": true, "landmark": true, "article": true,
	"block quote": true, "description list": true, "application": true, "window": true, "frame": true,
	"dialog": true, "file chooser": true, "color chooser": true, "font chooser": true, "unknown": true,
	"invalid": true, "extended": true,
}

// impliedActions are roles whose action goes without saying (a button
// clicks): an observation does not read nor list their actions.
var impliedActions = map[string]bool{
	"push button": true, "toggle button": true, "check box": true, "radio button": true, "menu item": true,
	"check menu item": true, "radio menu item": true, "menu": true, "link": true, "page tab": true,
	"push button menu": true,
}

// valued roles show a number: their Value is read.
var valued = map[string]bool{
	"slider": true, "spin button": true, "scroll bar": true, "progress bar": true, "level bar": true, "dial": true,
}

// readable roles carry text the model may need to read.
var readable = map[string]bool{
	"label": true, "static": true, "heading": true, "status bar": true, "alert": true, "notification": true,
	"caption": true,
}
