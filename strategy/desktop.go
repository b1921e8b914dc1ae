package strategy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/prompts"
)

// DesktopObserve is the data-collection strategy of a desktop app agent.
const DesktopObserve = "desktop_observe"

// desktopObserve observes a window each step through a desktop server's
// observe tool: the controls become an observation (with how to use their
// ids), the annotated screenshot an image of the request.
//
//   - name: desktop_observe
//     params: {namespace: desktop, window: ""}   # both optional
type desktopObserve struct {
	namespace, window string
}

func newDesktopObserve(params map[string]any) (Strategy, error) {
	s := desktopObserve{}
	for k, v := range params {
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("desktop_observe: params.%s must be a string", k)
		}
		switch k {
		case "namespace":
			s.namespace = str
		case "window":
			s.window = str
		default:
			return nil, fmt.Errorf("desktop_observe: unknown param %q (namespace, window)", k)
		}
	}
	return s, nil
}

func (desktopObserve) Name() string { return DesktopObserve }
func (desktopObserve) Phase() Phase { return DataCollection }

// desktopGuide tells the model how to read the observation.
const desktopGuide = "The window's controls, one per line: [id] role \"name\" text=... value=... {states} actions=... @x,y width x height. " +
	"The attached screenshot shows the same window with each control's box drawn and its id written at the box's top-left corner. " +
	"Act on a control by passing its id to the tools (click, type_text, set_value, select, scroll). " +
	"A table lists its size and the rows and columns in view; act on any of its cells by the table's id with row and column (or cell, as in B7). " +
	"A long list comes in pages: call observe with page, or narrow it with role, name or region. " +
	"An id stays valid while its control exists; after a window closes or changes, use the ids of the latest observation.\n\n"

// idTools are the desktop tools that act on a control by its id.
var idTools = []string{"click", "type_text", "set_value", "select", "scroll"}

// guideFor is desktopGuide for the tools the model is offered: a config
// that denies the tools acting by id (mcp.servers.desktop.deny) leaves the
// ids and boxes to read, and says so, rather than name tools the model
// does not have.
func guideFor(pc *Context, ns string) string {
	var offered []string
	for _, name := range idTools {
		if offers(pc, ns, name) {
			offered = append(offered, name)
		}
	}
	if len(offered) == len(idTools) || pc.tools == nil {
		return desktopGuide
	}
	g := strings.Replace(desktopGuide, "(click, type_text, set_value, select, scroll)", "("+strings.Join(offered, ", ")+")", 1)
	if !offers(pc, ns, "click") && !offers(pc, ns, "set_value") {
		var denied []string
		for _, name := range idTools {
			if !slices.Contains(offered, name) {
				denied = append(denied, name)
			}
		}
		g = strings.Replace(g, "Act on a control by passing its id to the tools ("+strings.Join(offered, ", ")+"). ",
			"The tools that act on a control by its id ("+strings.Join(denied, ", ")+") are not offered here: read the list for what is where, and act at points of the screenshot. ", 1)
		g = strings.Replace(g, "; act on any of its cells by the table's id with row and column (or cell, as in B7)", "", 1)
	}
	return g
}

// offers reports whether the model is offered tool name of namespace ns.
func offers(pc *Context, ns, name string) bool {
	return slices.ContainsFunc(pc.tools, func(t command.ToolInfo) bool { return t.Name == name && t.Namespace == ns })
}

// pixelGuide says how to act where there is no id: with the desktop's
// pixel tools, or with the model's own computer tool when it is offered
// one (the pixel tools are then not offered).
func pixelGuide(pc *Context) string {
	if offersComputer(pc) {
		return "Where what you need has no id (a canvas, an image, a chart), act with your computer tool on the screen's screenshot.\n\n"
	}
	return "Where what you need has no id (a canvas, an image, a chart), click_at, drag and scroll_at act at x,y in the screenshot's pixels, as its scale line says.\n\n"
}

// minObserveChars is the smallest page the desktop tools give.
const minObserveChars = 1000

func (s desktopObserve) Execute(ctx context.Context, pc *Context) error {
	ns := s.namespace
	if ns == "" {
		ns = pc.agent.App
	}
	args := map[string]any{}
	if s.window != "" {
		args["window"] = s.window
	}
	// A page of the control list that fits the result's limit with the
	// guide: a long list is paged by the tool, never cut here.
	guide := guideFor(pc, ns) + pixelGuide(pc)
	if room := pc.limits.MaxResultChars - len(guide) - 100; pc.limits.MaxResultChars > 0 && room >= minObserveChars {
		args["max_chars"] = room
	}
	c := command.Command{ToolName: "observe", Namespace: ns, Parameters: args, ToolType: command.DataCollection}
	rs := pc.dispatcher.Execute(ctx, []command.Command{c})
	if len(rs) != 1 {
		return fmt.Errorf("desktop_observe: the dispatcher returned %d results for 1 command", len(rs))
	}
	// With a model trained on a computer-use tool, the first step also
	// sees the whole screen, whose size it acts in (computer.go).
	defer observeScreen(ctx, pc, ns)
	r := rs[0]
	// Named by what it shows, not by the call's arguments (max_chars is
	// Saucer's, not the model's).
	obs := prompts.Observation{Name: "The window, as " + ns + ".observe shows it"}
	if !r.OK() {
		// No window yet is normal at the start: the model may launch one.
		obs.Content = "No observation: " + r.Error
		pc.Observe(obs)
		return nil
	}
	var entries []struct{ Type, Text string }
	var text strings.Builder
	if json.Unmarshal(r.Result, &entries) == nil {
		for _, e := range entries {
			if e.Type == "text" {
				text.WriteString(e.Text)
			}
		}
	} else {
		text.WriteString(ResultText(r, pc.limits.MaxResultChars))
	}
	obs.Content = guide + truncate(text.String(), pc.limits.MaxResultChars)
	pc.Observe(obs)
	pc.Attach(ResultImages(r)...)
	return nil
}
