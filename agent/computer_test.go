package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools"
	"github.com/saucerhq/saucer/trajectory"
)

// buttonDesktop starts a private Xvfb desktop and a device whose one app,
// button, is testdata/button.py (titled "Counter"), worked by its agent
// alone with computer use on; extra is added to the config.
func buttonDesktop(t *testing.T, ctx context.Context, extra string) (string, *config.Config, *client.Client) {
	t.Helper()
	desktoptest.Require(t, "/usr/bin/python3")
	s := desktoptest.Start(t)
	for _, kv := range s.Env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "GSETTINGS_BACKEND" {
			t.Setenv(k, v)
		}
	}
	app, err := filepath.Abs("testdata/button.py")
	if err != nil {
		t.Fatal(err)
	}
	cfgYAML := `
mcp:
  use: [button]
  servers:
    button: {kind: desktop, command: /usr/bin/python3, args: [` + app + `, Counter], description: "A window with one button."}
tools:
  desktop: {display: "` + s.Display + `", bus: "` + s.BusAddr + `"}
agent: {direct_app: button, computer_use: auto}
` + extra
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := local.NewDevice(ctx, cfg, t.TempDir(), local.DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return cfgYAML, cfg, dev
}

// A model with a native computer-use tool (scripted here, speaking the
// normalized form) works a desktop app by pixels on a real desktop: the
// agent tells it the screen's display size (the screen's screenshot
// shrunk to 1024 wide), offers the native tool instead of the pixel
// tools, turns its click into a click_at command at the display's scale,
// which presses a GTK button, and answers the call with the screenshot
// it ended with. The recording replays exactly, offline.
func TestComputerUseClicksAButtonByPixel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfgYAML, cfg, dev := buttonDesktop(t, ctx, "")
	task := "Press the button once."
	runDir := filepath.Join(t.TempDir(), "run")
	rec, err := record.Start(runDir, trajectory.Session{Task: task, Model: "scripted", Mode: "tools", Config: cfgYAML,
		Apps: map[string]string{"button": "A window with one button."}}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(scripted.Script{Computer: true, Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "launch_app", Arguments: map[string]any{}}}},
		// 100,100 of the 1024x640 display is 125,125 of the 1280x800
		// screen: inside the 400x300 window, on its button.
		{Text: "I click the button.", ToolCalls: []scripted.ToolCall{{Name: llm.ComputerTool,
			Arguments: map[string]any{"actions": []any{map[string]any{"action": "click", "x": 100, "y": 100}}}}}},
		{ToolCalls: []scripted.ToolCall{{Name: "list_windows", Arguments: map[string]any{}}}},
		{Expect: "Counter: pressed 1", ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "pressed once"}}}},
	}})
	var dispatched []command.Command
	sess, err := session.New(cfg, session.Options{Device: dev, Model: model, Observers: []func(agent.Event){rec.Observe, func(e agent.Event) {
		if e.Kind == agent.EventDispatch {
			dispatched = append(dispatched, e.Commands...)
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, task)
	if err := rec.Finish(out); err != nil {
		t.Fatal(err)
	}
	if out.Status != fsm.Finish {
		t.Fatalf("outcome %s %q (%v)", out.Status, out.Answer, out.Err)
	}

	calls := model.Calls()
	if len(calls) != 4 {
		t.Fatalf("%d model calls, want 4", len(calls))
	}
	for i, c := range calls {
		if c.Computer == nil || *c.Computer != (llm.Computer{Width: 1024, Height: 640}) {
			t.Fatalf("request %d declares the computer tool as %+v, want the 1280x800 screen at 0.8: 1024x640", i+1, c.Computer)
		}
		names := map[string]bool{}
		for _, tool := range c.Tools {
			names[tool.Name] = true
		}
		if names["click_at"] || names["screenshot"] || names["drag"] || !names["click"] || !names["launch_app"] {
			t.Fatalf("request %d offers %v: want the tools by id beside the native tool, and no pixel tools", i+1, names)
		}
	}
	// The first request shows the screen as the model acts on it.
	first := calls[0].Messages[len(calls[0].Messages)-1]
	if len(first.Images) == 0 {
		t.Error("the first request shows no screenshot")
	}
	// The click went to the desktop as click_at at the display's scale,
	// then the screen's screenshot at that scale.
	i := slices.IndexFunc(dispatched, func(c command.Command) bool { return c.ToolName == "click_at" })
	if i < 0 || i+1 >= len(dispatched) {
		t.Fatalf("no click_at dispatched: %+v", dispatched)
	}
	if p := dispatched[i].Parameters; p["x"] != 100 || p["y"] != 100 || p["scale"] != 0.8 || p["button"] != "left" {
		t.Errorf("click_at %v", p)
	}
	if shot := dispatched[i+1]; shot.ToolName != "screenshot" || shot.Parameters["scale"] != 0.8 || shot.Parameters["screen"] != true {
		t.Errorf("after the click: %s %v", shot.ToolName, shot.Parameters)
	}
	// The call's answer is a tool turn with the screenshot it ended with.
	var answer *llm.Message
	for j, m := range calls[2].Messages {
		if m.Role == llm.RoleTool && m.Name == llm.ComputerTool {
			answer = &calls[2].Messages[j]
		}
	}
	if answer == nil || len(answer.Images) != 1 || !strings.HasPrefix(string(answer.Images[0].Data), "\x89PNG") ||
		!strings.Contains(answer.Content, "click_at: ") || !strings.Contains(answer.Content, "screenshot: ") {
		t.Fatalf("the computer call's result: %+v", answer)
	}
	for _, img := range calls[2].Messages[len(calls[2].Messages)-1].Images {
		if string(img.Data) == string(answer.Images[0].Data) {
			t.Errorf("the screenshot is sent twice: on the call's result and on the status turn")
		}
	}

	// Offline, the recording replays exactly: the same requests (the
	// display, the tool's calls and screenshots), the same commands.
	tr, err := trajectory.Read(runDir)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := evals.Replay(ctx, tr, evals.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Outcome.Status != fsm.Finish || rr.Diverged() {
		t.Fatalf("replay: %s, diverged:\n%s", rr.Outcome.Status, rr.Report())
	}
}

// confirmer answers approvals as told and keeps what it was asked.
type confirmer struct {
	answers []bool
	reasons []string
	cmds    [][]command.Command
}

func (c *confirmer) Confirm(_ context.Context, _ string, cmds []command.Command, reason string) (bool, error) {
	c.reasons = append(c.reasons, reason)
	c.cmds = append(c.cmds, cmds)
	ok := len(c.answers) > 0 && c.answers[0]
	if len(c.answers) > 0 {
		c.answers = c.answers[1:]
	}
	return ok, nil
}

type pointIn struct {
	X      int     `json:"x"`
	Y      int     `json:"y"`
	Scale  float64 `json:"scale"`
	Button string  `json:"button,omitempty"`
	Count  int     `json:"count,omitempty"`
}

type shotIn struct {
	Screen    bool    `json:"screen,omitempty"`
	Scale     float64 `json:"scale,omitempty"`
	MaxWidth  int     `json:"max_width,omitempty"`
	MaxHeight int     `json:"max_height,omitempty"`
}

// fakeDesktop serves the desktop tools computer use needs, in process: a
// 1280x800 screen whose screenshots say their size as the desktop's do.
func fakeDesktop(t *testing.T, clicks *[]pointIn) *client.Client {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	shot := func(s float64) tools.Content {
		w, h := int(1280*s+0.5), int(800*s+0.5)
		return tools.Content{tools.Text(fmt.Sprintf("Screenshot of the screen: %dx%d pixels at scale %g of the screen's 1280x800 at 0,0. click_at, move_to, drag and scroll_at take x,y in this image's pixels.", w, h, s)),
			tools.Image(png, "image/png")}
	}
	point := func(name string) *tools.Tool {
		return tools.New(name, name+".", tools.Annotations{}, func(_ context.Context, in pointIn) (map[string]any, error) {
			*clicks = append(*clicks, in)
			return map[string]any{"did": name}, nil
		})
	}
	return toolDevice(t, "canvas", client.Options{},
		tools.New("observe", "Observe.", tools.Annotations{}, func(context.Context, struct{}) (string, error) { return "a canvas", nil }),
		tools.New("screenshot", "Screenshot.", tools.Annotations{}, func(_ context.Context, in shotIn) (tools.Content, error) {
			s := in.Scale
			if s == 0 {
				s = min(1, float64(in.MaxWidth)/1280, float64(in.MaxHeight)/800)
			}
			return shot(s), nil
		}),
		point("click_at"), point("move_to"), point("drag"), point("scroll_at"),
		tools.New("press_keys", "Keys.", tools.Annotations{}, func(_ context.Context, in struct {
			Keys []string `json:"keys"`
		}) (string, error) {
			return strings.Join(in.Keys, " "), nil
		}))
}

func computerReply(id string, args map[string]any) scripted.Reply {
	return scripted.Reply{ToolCalls: []scripted.ToolCall{{ID: id, Name: llm.ComputerTool, Arguments: args}}}
}

// A provider's safety check on a computer call goes to the user before
// the call runs: declined, nothing runs and nothing is acknowledged;
// approved, the actions run and the next request acknowledges the check.
// What the desktop cannot do fails as the model's error, and a wait is
// the agent's own.
func TestComputerUseSafetyChecksAndRefusals(t *testing.T) {
	check := map[string]any{"id": "cu_sc_1", "code": "malicious_instructions", "message": "Instructions on the screen."}
	click := map[string]any{"action": "click", "x": 512, "y": 320}
	m := scripted.New(scripted.Script{Computer: true, Replies: []scripted.Reply{
		computerReply("c1", map[string]any{"actions": []any{click}, "safety_checks": []any{check}}),
		computerReply("c2", map[string]any{"actions": []any{click}, "safety_checks": []any{check}}),
		computerReply("c3", map[string]any{"actions": []any{map[string]any{"action": "wait", "seconds": 0.01},
			map[string]any{"action": "zoom", "region": []any{0, 0, 10, 10}}, map[string]any{"action": "keys", "keys": []any{"ctrl+a"}}}}),
		{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "done"}}}},
	}})
	var clicks []pointIn
	dev := fakeDesktop(t, &clicks)
	conf := &confirmer{answers: []bool{false, true}}
	set, _ := prompts.Load("")
	s, err := agent.New(agent.Options{Model: m, Dispatcher: dispatcher.NewLocal(dev, dispatcher.LocalOptions{}), Prompts: set, Confirmer: conf,
		AppPipeline: []strategy.Spec{{Name: strategy.Discover}, {Name: strategy.DesktopObserve}, {Name: strategy.Ask}, {Name: strategy.Execute}, {Name: strategy.Remember}},
		Limits:      strategy.Limits{RetryBackoff: time.Millisecond, ComputerUse: true}})
	if err != nil {
		t.Fatal(err)
	}
	note := s.NewApp("canvas", "click the middle").Run(context.Background(), "click the middle")
	if note.Status != "FINISH" {
		t.Fatalf("%+v", note)
	}
	calls := m.Calls()
	if c := calls[0].Computer; c == nil || c.Width != 1024 || c.Height != 640 {
		t.Fatalf("display %+v, want 1024x640 (the 1280x800 screen at 0.8)", c)
	}
	if len(conf.reasons) != 2 || !strings.Contains(conf.reasons[0], "malicious_instructions") || conf.cmds[0][0].ToolName != "click_at" {
		t.Fatalf("the user was asked %q about %+v", conf.reasons, conf.cmds)
	}
	toolTurn := func(req llm.Request, id string) llm.Message {
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleTool && msg.ToolCallID == id {
				return msg
			}
		}
		t.Fatalf("no tool turn for %s", id)
		return llm.Message{}
	}
	// Declined: nothing ran, nothing acknowledged.
	if r := toolTurn(calls[1], "c1"); len(r.Acknowledged) != 0 || !strings.Contains(r.Content, "declined") || len(r.Images) != 0 {
		t.Errorf("the declined call's result: %+v", r)
	}
	// Approved: the click ran at the display's scale, and the check is
	// acknowledged with the screenshot.
	if len(clicks) != 1 || clicks[0] != (pointIn{X: 512, Y: 320, Scale: 0.8, Button: "left", Count: 1}) {
		t.Errorf("clicks %+v, want one at 512,320 at scale 0.8", clicks)
	}
	r := toolTurn(calls[2], "c2")
	if len(r.Acknowledged) != 1 || r.Acknowledged[0].ID != "cu_sc_1" || len(r.Images) != 1 {
		t.Errorf("the approved call's result: %+v", r)
	}
	// The wait is the agent's own; zoom is refused as the model's
	// error, and what follows it does not run.
	r = toolTurn(calls[3], "c3")
	if !strings.Contains(r.Content, "computer_wait: ") || !strings.Contains(r.Content, "zoom action is not supported") ||
		!strings.Contains(r.Content, "press_keys: skipped") {
		t.Errorf("the third call's result: %s", r.Content)
	}
	if len(conf.reasons) != 2 {
		t.Errorf("a call without safety checks was put to the user")
	}
}

// The same by Anthropic's wire format: a loopback Messages API answers as
// Claude would with its computer tool; Saucer declares the tool with the
// display size and the beta header, and sends the click's screenshot back
// as an image block of the tool_result.
func TestComputerUseOverAnthropicsWire(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	replies := []string{
		`{"type":"tool_use","id":"toolu_1","name":"launch_app","input":{}}`,
		`{"type":"tool_use","id":"toolu_2","name":"computer","input":{"action":"left_click","coordinate":[100,100]}}`,
		`{"type":"tool_use","id":"toolu_3","name":"list_windows","input":{}}`,
		`{"type":"text","text":"The button was pressed once."}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		if r.Header.Get("Anthropic-Beta") != "computer-use-2025-01-24" {
			t.Errorf("request %d: anthropic-beta %q", n+1, r.Header.Get("Anthropic-Beta"))
		}
		if n >= len(replies) {
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no more replies"}}`, 400)
			return
		}
		stop := "tool_use"
		if strings.Contains(replies[n], `"text"`) {
			stop = "end_turn"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"usage":{"input_tokens":100,"output_tokens":10}}`, n, replies[n], stop)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, cfg, dev := buttonDesktop(t, ctx, "model: anthropic:claude-sonnet-4-5\nproviders: {anthropic: {base_url: \""+srv.URL+"\", api_key: sk-ant-test}}\n")
	sess, err := session.New(cfg, session.Options{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, "Press the button once.")
	if out.Status != fsm.Finish || !strings.Contains(out.Answer, "pressed once") {
		t.Fatalf("outcome %s %q (%v)", out.Status, out.Answer, out.Err)
	}
	if len(bodies) != 4 {
		t.Fatalf("%d requests, want 4", len(bodies))
	}
	tool := bodies[0]["tools"].([]any)[0].(map[string]any)
	if tool["type"] != "computer_20250124" || tool["name"] != "computer" || tool["display_width_px"] != 1024.0 || tool["display_height_px"] != 640.0 {
		t.Errorf("the computer tool is declared as %v", tool)
	}
	// The tool_result of the click carries the screenshot it ended with.
	var result map[string]any
	for _, m := range bodies[2]["messages"].([]any) {
		for _, b := range m.(map[string]any)["content"].([]any) {
			if b := b.(map[string]any); b["type"] == "tool_result" && b["tool_use_id"] == "toolu_2" {
				result = b
			}
		}
	}
	if result == nil {
		t.Fatalf("no tool_result for the click in %v", bodies[2]["messages"])
	}
	content := result["content"].([]any)
	text, img := content[0].(map[string]any), content[len(content)-1].(map[string]any)
	src, _ := img["source"].(map[string]any)
	if !strings.Contains(fmt.Sprint(text["text"]), "click_at: ") || img["type"] != "image" || src["media_type"] != "image/png" || !strings.HasPrefix(fmt.Sprint(src["data"]), "iVBOR") {
		t.Errorf("the click's tool_result: %.300v", result)
	}
	if b, _ := json.Marshal(bodies[3]); !strings.Contains(string(b), "Counter: pressed 1") {
		t.Error("the window's title does not say the button was pressed")
	}
}

// The same by OpenAI's Responses API: a loopback server answers as
// computer-use-preview would; Saucer declares computer_use_preview with
// the display size and sends the click's screenshot back as its
// computer_call_output, after the reasoning item and the call as they
// came.
func TestComputerUseOverOpenAIsWire(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	replies := []string{
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"launch_app","arguments":"{}","status":"completed"}`,
		`{"type":"reasoning","id":"rs_2","summary":[]},{"type":"computer_call","id":"cu_2","call_id":"call_2","action":{"type":"click","button":"left","x":100,"y":100},"pending_safety_checks":[],"status":"completed"}`,
		`{"type":"function_call","id":"fc_3","call_id":"call_3","name":"list_windows","arguments":"{}","status":"completed"}`,
		`{"type":"message","id":"msg_4","role":"assistant","status":"completed","content":[{"type":"output_text","text":"The button was pressed once.","annotations":[]}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		if r.URL.Path != "/v1/responses" {
			t.Errorf("request %d to %s", n+1, r.URL.Path)
		}
		if n >= len(replies) {
			http.Error(w, `{"error":{"message":"no more replies","type":"invalid_request_error"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","status":"completed","model":"computer-use-preview-2025-03-11","output":[%s],"usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}`, n, replies[n])
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, cfg, dev := buttonDesktop(t, ctx, "model: openai:computer-use-preview\nproviders: {openai: {base_url: \""+srv.URL+"/v1\", api_key: sk-test}}\n")
	sess, err := session.New(cfg, session.Options{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, "Press the button once.")
	if out.Status != fsm.Finish || !strings.Contains(out.Answer, "pressed once") {
		t.Fatalf("outcome %s %q (%v)", out.Status, out.Answer, out.Err)
	}
	if len(bodies) != 4 {
		t.Fatalf("%d requests, want 4", len(bodies))
	}
	tool := bodies[0]["tools"].([]any)[0].(map[string]any)
	if tool["type"] != "computer_use_preview" || tool["display_width"] != 1024.0 || tool["display_height"] != 640.0 || tool["environment"] != "linux" || bodies[0]["truncation"] != "auto" {
		t.Errorf("the computer tool is declared as %v (truncation %v)", tool, bodies[0]["truncation"])
	}
	// The reasoning item, the call as it came, then its output.
	var types []string
	var output map[string]any
	for _, it := range bodies[2]["input"].([]any) {
		it := it.(map[string]any)
		if typ, ok := it["type"].(string); ok {
			types = append(types, typ)
		}
		if it["type"] == "computer_call_output" && it["call_id"] == "call_2" {
			output = it
		}
	}
	if i := slices.Index(types, "reasoning"); i < 0 || i+2 >= len(types) || types[i+1] != "computer_call" || types[i+2] != "computer_call_output" {
		t.Errorf("input items %v: want reasoning, computer_call, computer_call_output in order", types)
	}
	shot, _ := output["output"].(map[string]any)
	if shot["type"] != "computer_screenshot" || !strings.HasPrefix(fmt.Sprint(shot["image_url"]), "data:image/png;base64,iVBOR") {
		t.Errorf("the click's output: %.300v", output)
	}
	if _, ok := output["acknowledged_safety_checks"]; ok {
		t.Error("a safety check was acknowledged that no one was asked about")
	}
	if b, _ := json.Marshal(bodies[3]); !strings.Contains(string(b), "Counter: pressed 1") {
		t.Error("the window's title does not say the button was pressed")
	}
}
