package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/saucerhq/saucer/llm/openai"
)

const cuDir = "testdata/computer-use"

func serveResponses(t *testing.T, model string, turns ...string) (*openai.Model, *jsoncassette.Server) {
	t.Helper()
	api := &jsoncassette.Server{T: t, Dir: cuDir, Turns: turns, Path: "/v1/responses", Headers: map[string]string{"Authorization": "Bearer sk-test"}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return m, api
}

var cuFinish = llm.Tool{Name: "finish_task", Description: "Say the subtask is done, with its result.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]}`)}

func cuStart(t *testing.T) (*llm.Request, []byte) {
	png, err := os.ReadFile(filepath.Join(cuDir, "screenshot.png"))
	if err != nil {
		t.Fatal(err)
	}
	user := llm.User("Press the button labelled 7 in the calculator.")
	user.Images = []llm.Image{{Data: png, MIMEType: "image/png"}}
	return &llm.Request{Computer: &llm.Computer{Width: 1024, Height: 768}, Tools: []llm.Tool{cuFinish},
		Messages: []llm.Message{llm.System("You operate a Linux desktop through the computer tool."), user}}, png
}

func onlyCall(t *testing.T, m llm.Message) (llm.ToolCall, llm.ComputerCall) {
	t.Helper()
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != llm.ComputerTool {
		t.Fatalf("tool calls %+v, want one computer call", m.ToolCalls)
	}
	c, err := llm.ParseComputerCall(m.ToolCalls[0].Arguments)
	if err != nil {
		t.Fatal(err)
	}
	return m.ToolCalls[0], c
}

// Three turns of computer-use-preview: a click, then a keypress that
// carries a pending safety check (acknowledged in the next request, as a
// person's approval would), then the answer.
func TestResponsesComputerUseCassette(t *testing.T) {
	m, api := serveResponses(t, "computer-use-preview", "openai-1", "openai-2", "openai-3")
	if !llm.SupportsComputer(m) {
		t.Fatal("OpenAI's model says it has no computer tool")
	}
	req, png := cuStart(t)
	ctx := context.Background()
	resp, err := m.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	call, c := onlyCall(t, resp.Message)
	if x, y, ok := c.Actions[0].Point(); call.ID != "call_zw3HbcKgYxNlTqS4rbm1lD6u" || c.Actions[0].Action != llm.ActClick || c.Actions[0].Button != "left" || !ok || x != 412 || y != 300 || len(c.SafetyChecks) != 0 {
		t.Fatalf("call %s: %+v", call.ID, c)
	}
	if resp.FinishReason != "tool_calls" || resp.Usage.PromptTokens != 1820 || resp.Usage.CompletionTokens != 54 {
		t.Errorf("finish %q, usage %+v", resp.FinishReason, resp.Usage)
	}
	if !strings.Contains(string(call.Raw), `"rs_67cc0c4a1a8c8190a0e8c8d4f1a6c3f2"`) {
		t.Errorf("raw %s does not keep the reasoning item that came before the call", call.Raw)
	}

	result := llm.ToolResult(call, "Clicked at 412,300.")
	result.Images = []llm.Image{{Data: png, MIMEType: "image/png"}}
	req.Messages = append(req.Messages, resp.Message, result)
	var chunks []llm.Chunk
	resp, err = m.Stream(ctx, req, func(c llm.Chunk) { chunks = append(chunks, c) })
	if err != nil {
		t.Fatal(err)
	}
	call, c = onlyCall(t, resp.Message)
	if !reflect.DeepEqual(c.Actions, []llm.ComputerAction{{Action: llm.ActKeys, Keys: []string{"ctrl+a"}}}) {
		t.Errorf("actions %+v, want ctrl+a", c.Actions)
	}
	if len(c.SafetyChecks) != 1 || c.SafetyChecks[0].Code != "malicious_instructions" {
		t.Fatalf("safety checks %+v, want the pending one", c.SafetyChecks)
	}
	if resp.Usage.CachedTokens != 1792 || len(chunks) != 2 || chunks[0].Text != resp.Message.Content {
		t.Errorf("usage %+v, chunks %+v", resp.Usage, chunks)
	}

	result = llm.ToolResult(call, "")
	result.Images = []llm.Image{{Data: png, MIMEType: "image/png"}}
	result.Acknowledged = c.SafetyChecks // a person approved
	req.Messages = append(req.Messages, resp.Message, result)
	resp, err = m.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Done: the calculator shows 7." || resp.FinishReason != "stop" || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("last reply %+v", resp)
	}
	if n := api.Served(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// The GA computer tool sends a batch of actions in one call.
func TestResponsesComputerBatch(t *testing.T) {
	m, _ := serveResponses(t, "gpt-5.4", "openai-ga")
	req, _ := cuStart(t)
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, c := onlyCall(t, resp.Message)
	at := func(a llm.ComputerAction, x, y int) llm.ComputerAction { return a.At(x, y) }
	want := []llm.ComputerAction{
		at(llm.ComputerAction{Action: llm.ActClick, Button: "right", Count: 1}, 10, 20),
		at(llm.ComputerAction{Action: llm.ActClick, Button: "left", Count: 2}, 30, 40),
		at(llm.ComputerAction{Action: llm.ActClick, Button: "middle", Count: 1, Hold: []string{"shift"}}, 1, 2),
		{Action: llm.ActType, Text: "12+30"},
		{Action: llm.ActKeys, Keys: []string{"Return"}},
		at(llm.ComputerAction{Action: llm.ActScroll, ScrollY: -3}, 500, 400),
		{Action: llm.ActDrag, Button: "left", Path: [][2]int{{100, 700}, {200, 700}, {300, 700}}},
		at(llm.ComputerAction{Action: llm.ActMove}, 5, 6),
		{Action: llm.ActWait, Seconds: 2},
		{Action: llm.ActScreenshot},
	}
	if !reflect.DeepEqual(c.Actions, want) {
		t.Errorf("actions\n%+v\nwant\n%+v", c.Actions, want)
	}
}

func TestOpenAIActionsBothWays(t *testing.T) {
	for _, in := range []string{
		`{"type":"screenshot"}`,
		`{"type":"click","button":"left","x":1,"y":2}`,
		`{"type":"click","button":"wheel","x":1,"y":2,"keys":["CTRL"]}`,
		`{"type":"double_click","x":1,"y":2}`,
		`{"type":"move","x":1,"y":2}`,
		`{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]}`,
		`{"type":"scroll","x":1,"y":2,"scroll_x":-100,"scroll_y":200}`,
		`{"type":"keypress","keys":["CTRL","SHIFT","T"]}`,
		`{"type":"keypress","keys":["ARROWLEFT"]}`,
		`{"type":"type","text":"hello"}`,
		`{"type":"wait"}`,
	} {
		a, err := openai.NormalizeOpenAIAction(json.RawMessage(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		back, err := openai.OpenAIActions(a)
		if err != nil || len(back) != 1 {
			t.Errorf("%s → %+v → %s, %v", in, a, back, err)
			continue
		}
		var x, y any
		json.Unmarshal([]byte(in), &x)
		json.Unmarshal(back[0], &y)
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s → %+v → %s", in, a, back[0])
		}
	}
	if a, _ := openai.NormalizeOpenAIAction(json.RawMessage(`{"type":"scroll","x":0,"y":0,"scroll_y":30}`)); a.ScrollY != 1 {
		t.Errorf("30 pixels down scroll %d notches, want 1", a.ScrollY)
	}
	if a, _ := openai.NormalizeOpenAIAction(json.RawMessage(`{"type":"keypress","keys":["CTRL","ALT","DELETE"]}`)); !reflect.DeepEqual(a.Keys, []string{"ctrl+alt+Delete"}) {
		t.Errorf("keys %v", a.Keys)
	}
	for in, want := range map[string]string{
		`{"type":"click","button":"left"}`: "no x and y",
		`{"type":"keypress","keys":[]}`:    "no keys",
		`{"x":1}`:                          "no type",
	} {
		if _, err := openai.NormalizeOpenAIAction(json.RawMessage(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestResponsesComputerUseRefusals(t *testing.T) {
	req, _ := cuStart(t)
	az, err := openai.New(openai.Config{Azure: true, BaseURL: "https://x.openai.azure.com", APIKey: "k", Model: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if llm.SupportsComputer(az) {
		t.Error("an Azure deployment claims OpenAI's computer tool")
	}
	if _, err := az.Complete(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no native computer-use tool") {
		t.Errorf("computer use on Azure: %v", err)
	}
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}]}`)
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL, Model: "computer-use-preview"})
	if err != nil {
		t.Fatal(err)
	}
	// A result without a screenshot (its click failed) is answered with
	// the latest screenshot sent, and its text follows.
	call := llm.ComputerToolCall("call_1", llm.ComputerCall{Actions: []llm.ComputerAction{{Action: llm.ActScreenshot}}}, nil)
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, llm.ToolResult(call, "click_at failed"))
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	input := body["input"].([]any)
	out := input[len(input)-2].(map[string]any)
	url, _ := out["output"].(map[string]any)["image_url"].(string)
	if out["type"] != "computer_call_output" || !strings.HasPrefix(url, "data:image/png;base64,iVBOR") {
		t.Errorf("output %v", out)
	}
	if note := input[len(input)-1].(map[string]any); !strings.Contains(fmt.Sprint(note["content"]), "click_at failed") {
		t.Errorf("the result's text is not sent: %v", note)
	}
	// With no screenshot at all, it cannot be answered.
	req.Messages[1].Images = nil
	var le *llm.Error
	if _, err := m.Complete(context.Background(), req); !errors.As(err, &le) || le.Kind != llm.KindBadRequest || !strings.Contains(err.Error(), "carries no screenshot") {
		t.Errorf("a computer result without any screenshot: %v", err)
	}
	// A call made of normalized actions (a scripted model's) is sent in
	// OpenAI's words.
	if item := input[len(input)-3].(map[string]any); item["type"] != "computer_call" || fmt.Sprint(item["action"]) != "map[type:screenshot]" {
		t.Errorf("call item %v", item)
	}
}

func TestResponsesErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for computer-use-preview","type":"tokens","code":"rate_limit_exceeded"}}`)
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "computer-use-preview"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := cuStart(t)
	var le *llm.Error
	if _, err := m.Complete(context.Background(), req); !errors.As(err, &le) || le.Kind != llm.KindRateLimit || le.RetryAfter.Seconds() != 3 || !strings.Contains(le.Message, "rate_limit_exceeded") {
		t.Errorf("got %v", err)
	}
}

func TestComputerModels(t *testing.T) {
	for model, want := range map[string]bool{
		"computer-use-preview": true, "computer-use-preview-2025-03-11": true, "gpt-5.4": true, "gpt-5.5-mini": true, "gpt-6": true,
		"gpt-5.2": false, "gpt-5": false, "gpt-4o": false, "o3": false,
	} {
		if got := openai.ComputerModel(model); got != want {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
	m, err := openai.New(openai.Config{APIKey: "k", Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if llm.SupportsComputer(m) {
		t.Error("gpt-4o claims the computer tool")
	}
}
