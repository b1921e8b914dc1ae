package strategy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
)

func TestResultImagesAndText(t *testing.T) {
	r := command.Result{Status: command.Success, Result: json.RawMessage(
		`[{"type":"text","text":"3 controls"},{"type":"image","mime_type":"image/png","data":"iVBORw0KGgo="}]`)}
	imgs := ResultImages(r)
	if len(imgs) != 1 || imgs[0].MIMEType != "image/png" || string(imgs[0].Data) != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("images = %+v", imgs)
	}
	text := ResultText(r, 0)
	if strings.Contains(text, "iVBORw0KGgo=") || !strings.Contains(text, "attached to the request as an image") || !strings.Contains(text, "3 controls") {
		t.Fatalf("text = %s", text)
	}
	// A plain JSON list is left alone, and carries no image.
	plain := command.Result{Status: command.Success, Result: json.RawMessage(`[{"type":"note","data":"x"}]`)}
	if ResultImages(plain) != nil || ResultText(plain, 0) != `[{"data":"x","type":"note"}]` {
		t.Fatalf("plain list: %v %s", ResultImages(plain), ResultText(plain, 0))
	}
}

func TestDesktopObserveParams(t *testing.T) {
	if _, err := newDesktopObserve(map[string]any{"windw": "w1"}); err == nil || !strings.Contains(err.Error(), `unknown param "windw"`) {
		t.Fatalf("%v", err)
	}
	if _, err := newDesktopObserve(map[string]any{"window": 3}); err == nil || !strings.Contains(err.Error(), "must be a string") {
		t.Fatalf("%v", err)
	}
}

// observeStub answers observe with a page of the size asked for, as the
// desktop tools do, and records the arguments.
type observeStub struct{ args map[string]any }

func (s *observeStub) Execute(_ context.Context, cmds []command.Command) []command.Result {
	s.args = cmds[0].Parameters
	size := 50000 // a 500-control window, unpaged
	if n, ok := s.args["max_chars"].(int); ok {
		size = n
	}
	text := strings.Repeat("[1] push button \"x\" @0,0 10x10\n", size/31)
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return []command.Result{{Status: command.Success, Result: b, CallID: cmds[0].CallID}}
}

// TestDesktopObservePagesToTheLimit: the observation asks the tool for a
// page that fits the result limit with the guide, so a long control list
// is paged by the tool and never cut off by the limit.
func TestDesktopObservePagesToTheLimit(t *testing.T) {
	s, _ := newDesktopObserve(nil)
	stub := &observeStub{}
	pc := NewContext(Setup{Dispatcher: stub, Limits: Limits{MaxResultChars: 16000}, Agent: Agent{App: "desktop"}})
	if err := s.Execute(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	if got, want := stub.args["max_chars"], 16000-len(desktopGuide+pixelGuide(pc))-100; got != want {
		t.Fatalf("observe was asked for pages of %v characters, want %d", got, want)
	}
	// Without a computer tool, the pixel tools are named for what has no id.
	if obs := pc.Observations()[0].Content; !strings.Contains(obs, "click_at, drag and scroll_at act at x,y") {
		t.Errorf("the observation does not say how to act where there is no id:\n%.600s", obs)
	}
	// The observation is named for the model, without Saucer's page size.
	if name := pc.Observations()[0].Name; strings.Contains(name, "max_chars") || !strings.Contains(name, "desktop.observe") {
		t.Errorf("observation named %q", name)
	}
	obs := pc.Observations()[0].Content
	if strings.Contains(obs, "truncated") || len(obs) > 16000 {
		t.Fatalf("the observation was cut (%d characters): %s", len(obs), obs[len(obs)-80:])
	}
	// No limit: no page size either.
	stub.args = nil
	pc = NewContext(Setup{Dispatcher: stub, Agent: Agent{App: "desktop"}})
	if err := s.Execute(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	if _, ok := stub.args["max_chars"]; ok {
		t.Fatalf("max_chars sent without a limit: %v", stub.args)
	}
}

// TestDesktopGuideNamesOnlyOfferedTools: with the tools that act by id
// denied (mcp.servers.desktop.deny), the observation does not tell the
// model to pass ids to tools it lacks; with them all, it is the guide.
func TestDesktopGuideNamesOnlyOfferedTools(t *testing.T) {
	s, _ := newDesktopObserve(nil)
	observe := func(names ...string) string {
		pc := NewContext(Setup{Dispatcher: &observeStub{}, Agent: Agent{App: "desktop"}})
		var tools []command.ToolInfo
		for _, n := range names {
			tools = append(tools, command.ToolInfo{Name: n, Namespace: "desktop"})
		}
		pc.Learn(command.DeviceInfo{}, tools)
		if err := s.Execute(context.Background(), pc); err != nil {
			t.Fatal(err)
		}
		return pc.Observations()[0].Content
	}
	all := observe("observe", "click", "type_text", "set_value", "select", "scroll", "click_at", "drag", "scroll_at")
	if !strings.HasPrefix(all, desktopGuide) {
		t.Errorf("with every tool offered the guide changed:\n%.400s", all)
	}
	pixels := observe("observe", "type_text", "click_at", "drag", "scroll_at")
	for _, gone := range []string{"passing its id to the tools", "act on any of its cells"} {
		if strings.Contains(pixels, gone) {
			t.Errorf("with only pixel tools the observation still says %q:\n%.700s", gone, pixels)
		}
	}
	if !strings.Contains(pixels, "The tools that act on a control by its id (click, set_value, select, scroll) are not offered here: read the list for what is where, and act at points of the screenshot") {
		t.Errorf("with only pixel tools the observation does not say how to act:\n%.700s", pixels)
	}
}
