package console_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/strategy"
)

// desktopStep is a desktop agent's step as its observers see it: the
// model was shown a 200x100 screenshot with its controls marked, and
// clicked at (50, 25).
type desktopStep struct{ observe func(agent.Event) }

func (d desktopStep) Run(ctx context.Context, request string) *agent.Outcome {
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for x := 20; x < 80; x++ {
		img.Set(x, 10, color.RGBA{255, 0, 0, 255}) // a control's box
		img.Set(x, 40, color.RGBA{255, 0, 0, 255})
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	agentName := "app:calculator#1"
	req := &llm.Request{Messages: []llm.Message{llm.System("You drive the calculator."),
		{Role: llm.RoleUser, Content: "The window:", Images: []llm.Image{{MIMEType: "image/png", Data: buf.Bytes()}}}}}
	d.observe(agent.Event{Kind: agent.EventModelCall, Agent: agentName, Request: req, Response: &llm.Response{Message: llm.Assistant("click"),
		Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 20, CachedTokens: 450}}})
	click := command.Command{CallID: "c1", ToolName: "click", Namespace: "calculator", Parameters: map[string]any{"x": 50, "y": 25}}
	d.observe(agent.Event{Kind: agent.EventStep, Agent: agentName, Step: 1, To: fsm.Continue,
		Decision: &strategy.Decision{Status: fsm.Continue, Thought: "The 7 key is at the top left."},
		Commands: []command.Command{click}, Results: []command.Result{command.Succeeded("c1", "clicked")}, Duration: 5 * time.Millisecond,
		Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 20, CachedTokens: 450}})
	return &agent.Outcome{Status: fsm.Finish, Answer: "clicked 7"}
}

// TestScreenshotWithItsMark: a desktop agent's step shows, live, the
// screenshot its model saw (served by the API) with the clicked point
// marked where it clicked, and the tokens with their cached share.
func TestScreenshotWithItsMark(t *testing.T) {
	srv, url := serveConsole(t, server.Options{Token: key, NewSession: func(spec server.SessionSpec) (server.Runner, error) {
		return desktopStep{spec.Observer}, nil
	}}, nil)
	connectDevice(t, "ws"+strings.TrimPrefix(url, "http")+"/ws", "desk", t.TempDir())
	info, err := srv.Dispatch("desk", "press 7", "calc", "test")
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, srv, info.ID)
	ctx := browser(t)
	loggedIn(t, ctx, url)
	run(t, ctx, "the step's screenshot", chromedp.Navigate(url+"/#/tasks/"+info.ID),
		waitFor(ctx, `(() => { const i = document.querySelector("figure.shot img"); return i && i.complete && i.naturalWidth === 200 })()`),
		waitFor(ctx, hasText("li.step .thought", "The 7 key is at the top left.")),
		waitFor(ctx, hasText("li.step .head", "900+20 tokens (50% cached)")),
		waitFor(ctx, hasText(".usage", "50% of the prompt cached")))
	style := get(t, ctx, "the mark", chromedp.Evaluate[string](`document.querySelector("figure.shot .mark").getAttribute("style")`))
	if !strings.Contains(style, "left: 25%") || !strings.Contains(style, "top: 25%") {
		t.Errorf("the mark is at %q, want left 25%%, top 25%%", style)
	}
}
