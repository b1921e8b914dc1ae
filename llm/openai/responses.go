package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

// OpenAI's computer use lives in the Responses API, which go-openai does
// not cover: a request with Computer goes to POST {base}/responses by the
// small client below, through the same HTTP doer (timeouts, headers,
// Retry-After) and without streaming. It declares the computer tool as
// the model expects it: computer_use_preview with the display size and
// environment "linux" (and truncation "auto", which that tool requires)
// for the computer-use-preview models, the built-in "computer" tool for
// the others. A computer_call's action (or its batch of actions) becomes
// a normalized llm.ComputerCall; its pending safety checks go with it, to
// be put to a person, never acknowledged by default. The result goes back
// as a computer_call_output carrying the screenshot (and the checks the
// person acknowledged). The format followed is that of
// https://developers.openai.com/api/docs/guides/tools-computer-use and
// the Responses API reference (ComputerToolCall, ComputerCallOutputItemParam).

// responsesClient sends Responses API requests.
type responsesClient struct {
	doer   *httpmeta.Doer
	url    string
	apiKey string
	org    string
}

// SupportsComputer reports whether the model offers OpenAI's computer-use
// tool: OpenAI's own API (not Azure's deployments, nor the servers that
// speak only chat completions) with a model trained on it (ComputerModel).
func (m *Model) SupportsComputer() bool { return m.responses != nil && ComputerModel(m.model) }

// ComputerModel reports whether an OpenAI model takes the computer-use
// tool: computer-use-preview, and gpt-5.4 and the models after it.
func ComputerModel(model string) bool {
	if previewModel(model) {
		return true
	}
	rest, ok := strings.CutPrefix(model, "gpt-")
	if !ok {
		return false
	}
	major, minor, _ := strings.Cut(rest, ".")
	minor, _, _ = strings.Cut(minor, "-")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil {
		return false
	}
	if err2 != nil {
		mi = 0
	}
	return ma > 5 || ma == 5 && mi >= 4
}

// previewModel reports whether a model takes the preview tool
// (computer_use_preview, with its display size) rather than "computer".
func previewModel(model string) bool { return strings.HasPrefix(model, "computer-use-preview") }

type rTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Width       int             `json:"display_width,omitempty"`
	Height      int             `json:"display_height,omitempty"`
	Environment string          `json:"environment,omitempty"`
}

type rRequest struct {
	Model           string            `json:"model"`
	Input           []json.RawMessage `json:"input"`
	Tools           []rTool           `json:"tools"`
	ToolChoice      any               `json:"tool_choice,omitempty"`
	Truncation      string            `json:"truncation,omitempty"`
	MaxOutputTokens int               `json:"max_output_tokens,omitempty"`
	Temperature     *float64          `json:"temperature,omitempty"`
}

type rContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

type rItem struct {
	Type         string            `json:"type"`
	ID           string            `json:"id,omitempty"`
	Role         string            `json:"role,omitempty"`
	Content      json.RawMessage   `json:"content,omitempty"`
	CallID       string            `json:"call_id,omitempty"`
	Name         string            `json:"name,omitempty"`
	Arguments    string            `json:"arguments,omitempty"`
	Action       json.RawMessage   `json:"action,omitempty"`
	Actions      []json.RawMessage `json:"actions,omitempty"`
	SafetyChecks []llm.SafetyCheck `json:"pending_safety_checks,omitempty"`
	Status       string            `json:"status,omitempty"`
}

type rResponse struct {
	ID                string            `json:"id"`
	Model             string            `json:"model"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		TotalTokens        int `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v) // plain data: cannot fail
	return b
}

// responsesRequest builds the Responses API body of req.
func (m *Model) responsesRequest(req *llm.Request) (*rRequest, error) {
	if err := req.Computer.Check(); err != nil {
		return nil, m.badRequest(err.Error())
	}
	preview := previewModel(m.model)
	out := &rRequest{Model: m.model, MaxOutputTokens: req.MaxTokens, Temperature: req.Temperature}
	if preview {
		out.Tools = []rTool{{Type: "computer_use_preview", Width: req.Computer.Width, Height: req.Computer.Height, Environment: "linux"}}
		out.Truncation = "auto"
	} else {
		out.Tools = []rTool{{Type: "computer"}}
	}
	for _, t := range req.Tools {
		if t.Name == llm.ComputerTool {
			return nil, m.badRequest(fmt.Sprintf("tool %q: the name is the native computer tool's; rename the tool", t.Name))
		}
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, rTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		out.ToolChoice = req.ToolChoice
	default:
		out.ToolChoice = map[string]string{"type": "function", "name": req.ToolChoice}
	}
	var lastImage *llm.Image // the latest screenshot sent, for a result without one
	for i, msg := range req.Messages {
		if n := len(msg.Images); n > 0 && (msg.Role == llm.RoleUser || msg.Role == llm.RoleTool) {
			lastImage = &msg.Images[n-1]
		}
		switch msg.Role {
		case llm.RoleSystem:
			out.Input = append(out.Input, mustJSON(map[string]string{"role": "system", "content": msg.Content}))
		case llm.RoleUser:
			var parts []rContent
			if msg.Content != "" || len(msg.Images) == 0 {
				parts = append(parts, rContent{Type: "input_text", Text: msg.Content})
			}
			for j, img := range msg.Images {
				u, err := imageURL(img)
				if err != nil {
					return nil, m.badRequest(fmt.Sprintf("message %d, image %d: %v", i, j, err))
				}
				parts = append(parts, rContent{Type: "input_image", ImageURL: u, Detail: orAuto(img.Detail)})
			}
			out.Input = append(out.Input, mustJSON(map[string]any{"role": "user", "content": parts}))
		case llm.RoleAssistant:
			if msg.Content != "" {
				out.Input = append(out.Input, mustJSON(map[string]string{"role": "assistant", "content": msg.Content}))
			}
			for _, tc := range msg.ToolCalls {
				items, err := m.callItems(tc, preview)
				if err != nil {
					return nil, m.badRequest(fmt.Sprintf("message %d: %v", i, err))
				}
				out.Input = append(out.Input, items...)
			}
		case llm.RoleTool:
			if msg.ToolCallID == "" {
				return nil, m.badRequest(fmt.Sprintf("message %d: a tool message has no tool_call_id: build it with llm.ToolResult", i))
			}
			if msg.Name != llm.ComputerTool {
				out.Input = append(out.Input, mustJSON(map[string]string{"type": "function_call_output", "call_id": msg.ToolCallID, "output": msg.Content}))
				continue
			}
			if lastImage == nil {
				return nil, m.badRequest(fmt.Sprintf("message %d: the result of computer call %s carries no screenshot, and none was sent before: OpenAI's computer_call_output must have one", i, msg.ToolCallID))
			}
			// A call whose actions failed before its screenshot was taken
			// is answered with the latest screenshot sent (its text says
			// what failed).
			u, err := imageURL(*lastImage)
			if err != nil {
				return nil, m.badRequest(fmt.Sprintf("message %d: %v", i, err))
			}
			item := map[string]any{"type": "computer_call_output", "call_id": msg.ToolCallID,
				"output": map[string]string{"type": "computer_screenshot", "image_url": u}}
			if len(msg.Acknowledged) > 0 {
				item["acknowledged_safety_checks"] = msg.Acknowledged
			}
			out.Input = append(out.Input, mustJSON(item))
			if msg.Content != "" {
				// What the actions did (or why they failed) has no place
				// in computer_call_output: it follows as a user turn.
				out.Input = append(out.Input, mustJSON(map[string]any{"role": "user",
					"content": []rContent{{Type: "input_text", Text: "Result of computer call " + msg.ToolCallID + ": " + msg.Content}}}))
			}
		default:
			return nil, m.badRequest(fmt.Sprintf("message %d: unknown role %q: use system, user, assistant or tool", i, msg.Role))
		}
	}
	return out, nil
}

func orAuto(d string) string {
	if d == "" {
		return "auto"
	}
	return d
}

// callItems are an assistant's tool call as input items: a function call,
// or a computer call as OpenAI sent it (Raw: its reasoning items and the
// call), else built from its normalized actions.
func (m *Model) callItems(tc llm.ToolCall, preview bool) ([]json.RawMessage, error) {
	if tc.Name != llm.ComputerTool {
		args := tc.Arguments
		if !json.Valid([]byte(args)) {
			args = "{}"
		}
		return []json.RawMessage{mustJSON(map[string]string{"type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": args})}, nil
	}
	if len(tc.Raw) > 0 {
		var items []json.RawMessage
		if json.Unmarshal(tc.Raw, &items) == nil && len(items) > 0 {
			return items, nil
		}
	}
	call, err := llm.ParseComputerCall(tc.Arguments)
	if err != nil {
		return nil, err
	}
	var acts []json.RawMessage
	for _, a := range call.Actions {
		more, err := OpenAIActions(a)
		if err != nil {
			return nil, err
		}
		acts = append(acts, more...)
	}
	item := rItem{Type: "computer_call", ID: tc.ID, CallID: tc.ID, SafetyChecks: call.SafetyChecks, Status: "completed"}
	if item.SafetyChecks == nil {
		item.SafetyChecks = []llm.SafetyCheck{}
	}
	if preview {
		if len(acts) != 1 {
			return nil, fmt.Errorf("computer call %s has %d actions: computer_use_preview takes one per call", tc.ID, len(acts))
		}
		item.Action = acts[0]
	} else {
		item.Actions = acts
	}
	return []json.RawMessage{mustJSON(item)}, nil
}

// completeResponses sends a computer-use request and reads the reply.
func (m *Model) completeResponses(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	if m.responses == nil {
		return nil, m.badRequest(m.provider + " has no native computer-use tool here (OpenAI's Responses API only): offer the desktop's tools instead (agent.computer_use: off)")
	}
	body, err := m.responsesRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, meta := httpmeta.With(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.responses.url, bytes.NewReader(mustJSON(body)))
	if err != nil {
		return nil, m.badRequest(err.Error())
	}
	hreq.Header.Set("Content-Type", "application/json")
	if m.responses.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+m.responses.apiKey)
	}
	if m.responses.org != "" {
		hreq.Header.Set("OpenAI-Organization", m.responses.org)
	}
	status, data, err := m.responses.doer.Send(hreq)
	if err != nil {
		return nil, m.mapError(ctx, err, meta)
	}
	if status/100 != 2 {
		return nil, m.responsesError(status, data, meta)
	}
	var rr rResponse
	if err := json.Unmarshal(data, &rr); err != nil {
		return nil, &llm.Error{Kind: llm.KindServer, Provider: m.provider, Message: fmt.Sprintf("the reply is not a Responses API response: %v", err)}
	}
	if rr.Status == "failed" && rr.Error != nil {
		return nil, &llm.Error{Kind: kindForErrorType(rr.Error.Code), Provider: m.provider, Message: rr.Error.Message + " [" + rr.Error.Code + "]"}
	}
	out, err := m.responsesReply(&rr)
	if err != nil {
		return nil, err
	}
	if onChunk != nil {
		if out.Message.Content != "" {
			onChunk(llm.Chunk{Text: out.Message.Content})
		}
		for i, tc := range out.Message.ToolCalls {
			onChunk(llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: &i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}})
		}
	}
	if out.Message.Content == "" && len(out.Message.ToolCalls) == 0 && llm.Unfinished(out) == "" {
		return nil, m.emptyReply(fmt.Sprintf("no text and no tool calls (status %q)", rr.Status))
	}
	return out, nil
}

// responsesError is a failed status with OpenAI's error body.
func (m *Model) responsesError(status int, body []byte, meta *httpmeta.Meta) error {
	var e struct {
		Error struct {
			Type, Message string
			Code          any
		} `json:"error"`
	}
	msg := strings.TrimSpace(truncate(string(body), 500))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
		if c := fmt.Sprint(e.Error.Code); e.Error.Code != nil && c != "" {
			msg += " [" + c + "]"
		}
	}
	return httpmeta.StatusError(m.provider, status, msg, isContextLength(e.Error.Code, msg), meta, m.apiKey)
}

// responsesReply reads a Responses API reply: its text, function calls and
// computer calls (normalized; Raw keeps the call with the reasoning items
// before it, which OpenAI wants back with it).
func (m *Model) responsesReply(rr *rResponse) (*llm.Response, error) {
	out := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, Model: rr.Model}
	u := rr.Usage
	out.Usage = llm.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens, CachedTokens: u.InputTokensDetails.CachedTokens}
	var text strings.Builder
	var pending []json.RawMessage // reasoning items not yet tied to a call
	for _, raw := range rr.Output {
		var it rItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, &llm.Error{Kind: llm.KindServer, Provider: m.provider, Message: fmt.Sprintf("an output item is not an object: %v", err)}
		}
		switch it.Type {
		case "reasoning":
			pending = append(pending, raw)
		case "message":
			var parts []rContent
			json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				if p.Type == "output_text" {
					text.WriteString(p.Text)
				}
			}
		case "function_call":
			out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			pending = nil
		case "computer_call":
			acts := it.Actions
			if len(it.Action) > 0 {
				acts = append([]json.RawMessage{it.Action}, acts...)
			}
			call := llm.ComputerCall{SafetyChecks: it.SafetyChecks}
			for _, a := range acts {
				n, err := NormalizeOpenAIAction(a)
				if err != nil {
					n = llm.ComputerAction{Action: "invalid: " + err.Error()}
				}
				call.Actions = append(call.Actions, n)
			}
			if len(call.Actions) == 0 {
				call.Actions = []llm.ComputerAction{{Action: "invalid: the computer call has no action"}}
			}
			items := append(pending, raw)
			pending = nil
			out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ComputerToolCall(it.CallID, call, mustJSON(items)))
		}
	}
	out.Message.Content = text.String()
	switch {
	case rr.Status == "incomplete" && rr.IncompleteDetails != nil && rr.IncompleteDetails.Reason == "max_output_tokens":
		out.FinishReason = llm.FinishLength
	case rr.Status == "incomplete" && rr.IncompleteDetails != nil && rr.IncompleteDetails.Reason == "content_filter":
		out.FinishReason = llm.FinishContentFilter
	case rr.Status != "" && rr.Status != "completed":
		out.FinishReason = rr.Status
	case len(out.Message.ToolCalls) > 0:
		out.FinishReason = "tool_calls"
	default:
		out.FinishReason = "stop"
	}
	return out, nil
}

// oaAction is a computer action as OpenAI sends it.
type oaAction struct {
	Type    string   `json:"type"`
	X       *int     `json:"x,omitempty"`
	Y       *int     `json:"y,omitempty"`
	Button  string   `json:"button,omitempty"`
	Path    []oaXY   `json:"path,omitempty"`
	ScrollX *int     `json:"scroll_x,omitempty"`
	ScrollY *int     `json:"scroll_y,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	Text    string   `json:"text,omitempty"`
}

type oaXY struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// ScrollPixelsPerNotch is how many pixels of OpenAI's scroll_x/scroll_y
// make one wheel notch of Saucer's (a browser scrolls about 100 pixels a
// notch).
const ScrollPixelsPerNotch = 100

func notches(px int) int {
	if px == 0 {
		return 0
	}
	n := int(math.Round(float64(px) / ScrollPixelsPerNotch))
	if n == 0 {
		n = 1
		if px < 0 {
			n = -1
		}
	}
	return n
}

// NormalizeOpenAIAction maps an OpenAI computer action onto Saucer's
// normalized one: click (button left, right, wheel as middle; back and
// forward kept), double_click, drag (its path), move, scroll (pixels to
// notches, ScrollPixelsPerNotch), keypress (its keys as one chord), type,
// wait (about two seconds, as OpenAI's guide has it) and screenshot.
func NormalizeOpenAIAction(raw json.RawMessage) (llm.ComputerAction, error) {
	var in oaAction
	if err := json.Unmarshal(raw, &in); err != nil {
		return llm.ComputerAction{}, fmt.Errorf("the computer action is not an object with a type: %v", err)
	}
	at := func(a llm.ComputerAction) (llm.ComputerAction, error) {
		if in.X == nil || in.Y == nil {
			return a, fmt.Errorf("%s: no x and y", in.Type)
		}
		return a.At(*in.X, *in.Y), nil
	}
	var hold []string
	for _, k := range in.Keys {
		hold = append(hold, xKey(k))
	}
	switch in.Type {
	case "screenshot":
		return llm.ComputerAction{Action: llm.ActScreenshot}, nil
	case "click", "double_click", "triple_click":
		a := llm.ComputerAction{Action: llm.ActClick, Button: in.Button, Count: 1, Hold: hold}
		switch in.Type {
		case "double_click":
			a.Count = 2
		case "triple_click":
			a.Count = 3
		}
		switch a.Button {
		case "", "left":
			a.Button = "left"
		case "wheel":
			a.Button = "middle"
		}
		return at(a)
	case "move":
		return at(llm.ComputerAction{Action: llm.ActMove})
	case "drag":
		a := llm.ComputerAction{Action: llm.ActDrag, Button: "left", Hold: hold}
		for _, p := range in.Path {
			a.Path = append(a.Path, [2]int{p.X, p.Y})
		}
		return a, nil
	case "scroll":
		a := llm.ComputerAction{Action: llm.ActScroll, Hold: hold}
		if in.ScrollX != nil {
			a.ScrollX = notches(*in.ScrollX)
		}
		if in.ScrollY != nil {
			a.ScrollY = notches(*in.ScrollY)
		}
		return at(a)
	case "keypress":
		if len(hold) == 0 {
			return llm.ComputerAction{}, fmt.Errorf("keypress: no keys")
		}
		return llm.ComputerAction{Action: llm.ActKeys, Keys: []string{strings.Join(hold, "+")}}, nil
	case "type":
		return llm.ComputerAction{Action: llm.ActType, Text: in.Text}, nil
	case "wait":
		return llm.ComputerAction{Action: llm.ActWait, Seconds: 2}, nil
	case "":
		return llm.ComputerAction{}, fmt.Errorf("the computer action has no type")
	}
	return llm.ComputerAction{Action: in.Type}, nil
}

// OpenAIActions are the OpenAI actions of a normalized action (a keys
// action with several chords is a keypress each).
func OpenAIActions(a llm.ComputerAction) ([]json.RawMessage, error) {
	out := oaAction{}
	if x, y, ok := a.Point(); ok {
		out.X, out.Y = &x, &y
	}
	var keys []string
	for _, k := range a.Hold {
		keys = append(keys, oaKey(k))
	}
	switch a.Action {
	case llm.ActScreenshot:
		out.Type = "screenshot"
	case llm.ActClick:
		out.Type, out.Button, out.Keys = "click", a.Button, keys
		switch a.Count {
		case 2:
			out.Type, out.Button = "double_click", ""
		case 3:
			out.Type, out.Button = "triple_click", ""
		}
		if out.Button == "middle" {
			out.Button = "wheel"
		}
	case llm.ActMove:
		out.Type = "move"
	case llm.ActDrag:
		out.Type, out.Keys = "drag", keys
		for _, p := range a.Path {
			out.Path = append(out.Path, oaXY{p[0], p[1]})
		}
	case llm.ActScroll:
		sx, sy := a.ScrollX*ScrollPixelsPerNotch, a.ScrollY*ScrollPixelsPerNotch
		out.Type, out.ScrollX, out.ScrollY, out.Keys = "scroll", &sx, &sy, keys
	case llm.ActType:
		out.Type, out.Text = "type", a.Text
	case llm.ActWait:
		out.Type = "wait"
	case llm.ActKeys:
		var acts []json.RawMessage
		for _, chord := range a.Keys {
			var ks []string
			for _, k := range strings.Split(chord, "+") {
				ks = append(ks, oaKey(k))
			}
			acts = append(acts, mustJSON(oaAction{Type: "keypress", Keys: ks}))
		}
		return acts, nil
	default:
		return nil, fmt.Errorf("the action %q has no OpenAI form", a.Action)
	}
	return []json.RawMessage{mustJSON(out)}, nil
}

// OpenAI names keys as browsers do, in capitals (CTRL, ENTER, ARROWLEFT);
// Saucer's chords use X's names (ctrl, Return, Left).
var oaToX = map[string]string{
	"CTRL": "ctrl", "CONTROL": "ctrl", "SHIFT": "shift", "ALT": "alt", "OPTION": "alt",
	"META": "super", "CMD": "super", "COMMAND": "super", "SUPER": "super", "WIN": "super",
	"ENTER": "Return", "RETURN": "Return", "ESC": "Escape", "ESCAPE": "Escape", "BACKSPACE": "BackSpace",
	"TAB": "Tab", "SPACE": "space", "DELETE": "Delete", "DEL": "Delete", "INSERT": "Insert",
	"HOME": "Home", "END": "End", "PAGEUP": "Page_Up", "PAGEDOWN": "Page_Down",
	"ARROWUP": "Up", "UP": "Up", "ARROWDOWN": "Down", "DOWN": "Down",
	"ARROWLEFT": "Left", "LEFT": "Left", "ARROWRIGHT": "Right", "RIGHT": "Right", "CAPSLOCK": "Caps_Lock",
}

var xToOA = map[string]string{
	"ctrl": "CTRL", "shift": "SHIFT", "alt": "ALT", "super": "META", "Return": "ENTER", "Escape": "ESC",
	"BackSpace": "BACKSPACE", "Tab": "TAB", "space": "SPACE", "Delete": "DELETE", "Insert": "INSERT",
	"Home": "HOME", "End": "END", "Page_Up": "PAGEUP", "Page_Down": "PAGEDOWN",
	"Up": "ARROWUP", "Down": "ARROWDOWN", "Left": "ARROWLEFT", "Right": "ARROWRIGHT", "Caps_Lock": "CAPSLOCK",
}

// xKey is OpenAI's key name in Saucer's chords: a named key by X's name,
// a function key as F5, a letter in lower case (shift is its own key).
func xKey(k string) string {
	up := strings.ToUpper(strings.TrimSpace(k))
	if x, ok := oaToX[up]; ok {
		return x
	}
	if len(up) >= 2 && up[0] == 'F' && strings.Trim(up[1:], "0123456789") == "" {
		return up
	}
	if utf8.RuneCountInString(k) == 1 {
		return strings.ToLower(k)
	}
	return k
}

func oaKey(k string) string {
	if o, ok := xToOA[k]; ok {
		return o
	}
	if o, ok := xToOA[strings.ToLower(k)]; ok {
		return o
	}
	return strings.ToUpper(k)
}
