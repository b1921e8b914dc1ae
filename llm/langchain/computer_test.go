package langchain_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/jsoncassette"
	"github.com/saucerhq/saucer/llm/langchain"
)

var finishTool = llm.Tool{Name: "finish_task", Description: "Say the subtask is done, with its result.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]}`)}

func computerCalls(t *testing.T, m llm.Message) []llm.ComputerAction {
	t.Helper()
	var out []llm.ComputerAction
	for _, tc := range m.ToolCalls {
		if tc.Name != llm.ComputerTool {
			t.Fatalf("call %s is %q, not the computer tool", tc.ID, tc.Name)
		}
		c, err := llm.ParseComputerCall(tc.Arguments)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Actions...)
	}
	return out
}

func TestAnthropicComputerUseCassette(t *testing.T) {
	dir := "testdata/computer-use"
	api := &jsoncassette.Server{T: t, Dir: dir, Turns: []string{"anthropic-1", "anthropic-2"}, Path: "/v1/messages",
		Headers: map[string]string{"Anthropic-Beta": "computer-use-2025-01-24", "X-Api-Key": testKey, "Anthropic-Version": "2023-06-01"}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	m, err := langchain.NewAnthropic(langchain.Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	if !llm.SupportsComputer(m) {
		t.Fatal("an Anthropic model says it has no computer tool")
	}
	png, err := os.ReadFile(filepath.Join(dir, "screenshot.png"))
	if err != nil {
		t.Fatal(err)
	}
	user := llm.User("Press the button labelled 7 in the calculator.")
	user.Images = []llm.Image{{Data: png, MIMEType: "image/png"}}
	req := &llm.Request{Computer: &llm.Computer{Width: 1024, Height: 768}, Tools: []llm.Tool{finishTool},
		Messages: []llm.Message{llm.System("You operate a Linux desktop through the computer tool."), user}}
	ctx := context.Background()
	resp, err := m.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || resp.Message.Content != "I can see the calculator. I'll click the 7 button." {
		t.Errorf("reply %q, finish %q", resp.Message.Content, resp.FinishReason)
	}
	if resp.Usage.PromptTokens != 3730 || resp.Usage.CachedTokens != 1500 || resp.Usage.CompletionTokens != 87 {
		t.Errorf("usage %+v, want 3730 prompt (1500 cached), 87 completion", resp.Usage)
	}
	acts := computerCalls(t, resp.Message)
	if x, y, ok := acts[0].Point(); len(acts) != 1 || acts[0].Action != llm.ActClick || acts[0].Button != "left" || acts[0].Count != 1 || !ok || x != 412 || y != 300 {
		t.Fatalf("actions %+v, want a left click at 412,300", acts)
	}
	if !strings.Contains(string(resp.Message.ToolCalls[0].Raw), `"left_click"`) {
		t.Errorf("raw %s does not keep Anthropic's action", resp.Message.ToolCalls[0].Raw)
	}

	// The result goes back with the screenshot; Stream takes the same path.
	result := llm.ToolResult(resp.Message.ToolCalls[0], "Clicked at 412,300 of the screen's screenshot (1024x768, scale 0.8).")
	result.Images = []llm.Image{{Data: png, MIMEType: "image/png"}}
	req.Messages = append(req.Messages, resp.Message, result)
	var chunks []llm.Chunk
	resp, err = m.Stream(ctx, req, func(c llm.Chunk) { chunks = append(chunks, c) })
	if err != nil {
		t.Fatal(err)
	}
	acts = computerCalls(t, resp.Message)
	want := []llm.ComputerAction{
		{Action: llm.ActKeys, Keys: []string{"ctrl+a", "Delete"}},
		llm.ComputerAction{Action: llm.ActScroll, ScrollY: -3}.At(500, 400),
		{Action: llm.ActDrag, Button: "left", Path: [][2]int{{100, 700}, {300, 700}}},
		llm.ComputerAction{Action: llm.ActClick, Button: "left", Count: 3, Hold: []string{"shift"}}.At(10, 20),
	}
	if !reflect.DeepEqual(acts, want) {
		t.Errorf("actions\n%+v\nwant\n%+v", acts, want)
	}
	if len(chunks) != 5 || chunks[0].Text == "" || chunks[4].ToolCall == nil || chunks[4].ToolCall.ID != "toolu_01E" {
		t.Errorf("stream chunks %+v: want the text, then the four calls", chunks)
	}
	if n := api.Served(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// A recorded normalized call (no Raw: a scripted model's, or another
// provider's) goes to Anthropic in its own vocabulary.
func TestAnthropicActionsBothWays(t *testing.T) {
	for _, in := range []string{
		`{"action":"screenshot"}`,
		`{"action":"left_click","coordinate":[1,2]}`,
		`{"action":"right_click","coordinate":[1,2]}`,
		`{"action":"middle_click","coordinate":[1,2]}`,
		`{"action":"double_click","coordinate":[1,2]}`,
		`{"action":"triple_click","coordinate":[1,2],"text":"ctrl"}`,
		`{"action":"mouse_move","coordinate":[5,6]}`,
		`{"action":"left_click_drag","start_coordinate":[1,2],"coordinate":[3,4]}`,
		`{"action":"scroll","coordinate":[5,6],"scroll_direction":"down","scroll_amount":2}`,
		`{"action":"scroll","coordinate":[5,6],"scroll_direction":"left","scroll_amount":1}`,
		`{"action":"key","text":"ctrl+s Return"}`,
		`{"action":"type","text":"12+30\n"}`,
		`{"action":"wait","duration":2}`,
		`{"action":"hold_key","text":"shift","duration":1.5}`,
		`{"action":"left_mouse_down"}`,
		`{"action":"left_mouse_up","coordinate":[7,8]}`,
		`{"action":"cursor_position"}`,
		`{"action":"zoom","region":[0,0,100,50]}`,
		`{"action":"teleport"}`,
	} {
		a, err := langchain.NormalizeAnthropicAction(json.RawMessage(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		back, err := langchain.AnthropicAction(a)
		if err != nil {
			t.Errorf("%s → %+v: %v", in, a, err)
			continue
		}
		var x, y any
		json.Unmarshal([]byte(in), &x)
		json.Unmarshal(back, &y)
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s → %+v → %s", in, a, back)
		}
	}
	for in, want := range map[string]string{
		`{"action":"scroll","coordinate":[1,2],"scroll_direction":"sideways"}`: "scroll_direction",
		`{"action":"left_click","coordinate":[1]}`:                             "want [x, y]",
		`{"coordinate":[1,2]}`:                                                 "names no action",
		`[1,2]`:                                                                "not an object",
	} {
		if _, err := langchain.NormalizeAnthropicAction(json.RawMessage(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestComputerToolVersionByModel(t *testing.T) {
	for model, want := range map[string]string{
		"claude-opus-4-5-20251101": "computer_20251124", "claude-sonnet-4-6": "computer_20251124",
		"claude-sonnet-4-5": "computer_20250124", "claude-haiku-4-5": "computer_20250124",
	} {
		typ, beta := langchain.ComputerToolVersion(model)
		if typ != want || !strings.HasPrefix(beta, "computer-use-20") || strings.TrimPrefix(typ, "computer_") != strings.ReplaceAll(strings.TrimPrefix(beta, "computer-use-"), "-", "") {
			t.Errorf("%s: %s with %s, want %s and its beta header", model, typ, beta, want)
		}
	}
}

// A failure of the native path is an llm.Error like any other: the status
// decides its kind, a long prompt is a context-length failure.
func TestAnthropicComputerUseErrors(t *testing.T) {
	status, body := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	m, err := langchain.NewAnthropic(langchain.Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Computer: &llm.Computer{Width: 1024, Height: 768}, Messages: []llm.Message{llm.User("hi")}}
	for _, c := range []struct {
		status int
		body   string
		kind   llm.ErrorKind
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, llm.KindContextLength},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, llm.KindRateLimit},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.KindServer},
	} {
		status, body = c.status, c.body
		_, err := m.Complete(context.Background(), req)
		var le *llm.Error
		if !errors.As(err, &le) || le.Kind != c.kind || le.Status != c.status {
			t.Errorf("%d: got %v, want kind %s", c.status, err, c.kind)
		}
		if c.kind == llm.KindRateLimit && le.RetryAfter.Seconds() != 7 {
			t.Errorf("Retry-After not honoured: %v", le.RetryAfter)
		}
	}
	bad := &llm.Request{Computer: &llm.Computer{Width: 1024}, Messages: []llm.Message{llm.User("hi")}}
	if _, err := m.Complete(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "1024x0") {
		t.Errorf("a display without height: %v", err)
	}
	plain := langchain.New(nil, "googleai")
	if llm.SupportsComputer(plain) {
		t.Error("a langchaingo model without the native path claims computer use")
	}
	if _, err := plain.Complete(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no native computer-use tool") {
		t.Errorf("computer use asked of a model without it: %v", err)
	}
}

func TestComputerModels(t *testing.T) {
	for model, want := range map[string]bool{
		"claude-sonnet-4-5": true, "claude-opus-4-1-20250805": true, "claude-haiku-4-5": true, "claude-3-7-sonnet-latest": true,
		"claude-3-5-haiku-latest": false, "claude-3-haiku-20240307": false,
	} {
		if got := langchain.ComputerModel(model); got != want {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
}
