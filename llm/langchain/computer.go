package langchain

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

// Anthropic's computer-use tool (Request.Computer) goes by a path of its
// own, straight to the Messages API: langchaingo's tool has no type field
// (it cannot declare the "computer" tool type) and its tool_result content
// is a string (it cannot carry the screenshot). The path sends the
// documented request through the same HTTP doer (timeouts, configured
// headers, Retry-After) with the beta header the tool needs, without
// streaming, and reads the reply's tool_use blocks, mapping the computer
// tool's actions onto Saucer's normalized ones (llm.ComputerCall) and
// back. The format followed is that of
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool.

// anthropicVersion is the Messages API version header Saucer sends.
const anthropicVersion = "2023-06-01"

// defaultComputerMaxTokens bounds a computer-use reply when the request
// sets no limit (the Messages API requires one).
const defaultComputerMaxTokens = 4096

// native is what the computer-use path needs of an Anthropic model.
type native struct {
	doer    *httpmeta.Doer
	url     string // .../v1/messages
	apiKey  string
	model   string
	version string // anthropic-version
}

// ComputerToolVersion is the computer tool's type and the beta header it
// needs for a model: computer_20251124 for Claude Opus 4.5 and later and
// Sonnet 4.6, computer_20250124 for the models before them.
func ComputerToolVersion(model string) (toolType, beta string) {
	for _, p := range []string{"claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6"} {
		if strings.HasPrefix(model, p) {
			return "computer_20251124", "computer-use-2025-11-24"
		}
	}
	return "computer_20250124", "computer-use-2025-01-24"
}

// SupportsComputer reports whether the model offers Anthropic's native
// computer-use tool: the Claude models its guide names (Claude 4 and 4.x
// Sonnet, Opus and Haiku 4.5, and Sonnet 3.7).
func (m *Model) SupportsComputer() bool { return m.native != nil && ComputerModel(m.native.model) }

// ComputerModel reports whether an Anthropic model was trained on the
// computer tool.
func ComputerModel(model string) bool {
	for _, p := range []string{"claude-sonnet-4", "claude-opus-4", "claude-haiku-4-5", "claude-3-7-sonnet", "claude-4-"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// block is a content block of the Messages API, as sent and received.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *imageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []block         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type apiMessage struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type apiTool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Width       int             `json:"display_width_px,omitempty"`
	Height      int             `json:"display_height_px,omitempty"`
}

type apiRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        string          `json:"system,omitempty"`
	Messages      []apiMessage    `json:"messages"`
	Tools         []apiTool       `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
}

type apiResponse struct {
	ID         string  `json:"id"`
	Model      string  `json:"model"`
	Content    []block `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// computerRequest builds the Messages API body of req.
func (m *Model) computerRequest(req *llm.Request) (*apiRequest, error) {
	if err := req.Computer.Check(); err != nil {
		return nil, m.badRequest(err.Error())
	}
	typ, _ := ComputerToolVersion(m.native.model)
	out := &apiRequest{Model: m.native.model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, StopSequences: req.Stop,
		Tools: []apiTool{{Type: typ, Name: llm.ComputerTool, Width: req.Computer.Width, Height: req.Computer.Height}}}
	if out.MaxTokens <= 0 {
		out.MaxTokens = defaultComputerMaxTokens
	}
	for _, t := range req.Tools {
		if t.Name == llm.ComputerTool {
			return nil, m.badRequest(fmt.Sprintf("tool %q: the name is the native computer tool's; rename the tool", t.Name))
		}
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, apiTool{Name: t.Name, Description: t.Description, InputSchema: params})
	}
	switch req.ToolChoice {
	case "", "auto":
	case "required":
		out.ToolChoice = json.RawMessage(`{"type":"any"}`)
	case "none":
		out.ToolChoice = json.RawMessage(`{"type":"none"}`)
	default:
		out.ToolChoice, _ = json.Marshal(map[string]string{"type": "tool", "name": req.ToolChoice})
	}
	var system []string
	add := func(role string, b ...block) {
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, b...)
			return
		}
		out.Messages = append(out.Messages, apiMessage{Role: role, Content: b})
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleSystem:
			system = append(system, msg.Content)
		case llm.RoleUser:
			var bs []block
			if msg.Content != "" {
				bs = append(bs, block{Type: "text", Text: msg.Content})
			}
			imgs, err := imageBlocks(msg.Images)
			if err != nil {
				return nil, m.badRequest(fmt.Sprintf("message %d: %v", i, err))
			}
			if bs = append(bs, imgs...); len(bs) == 0 {
				bs = append(bs, block{Type: "text", Text: "(empty)"})
			}
			add("user", bs...)
		case llm.RoleAssistant:
			var bs []block
			if msg.Content != "" {
				bs = append(bs, block{Type: "text", Text: msg.Content})
			}
			for _, tc := range msg.ToolCalls {
				b, err := toolUseBlock(tc)
				if err != nil {
					return nil, m.badRequest(fmt.Sprintf("message %d: %v", i, err))
				}
				bs = append(bs, b)
			}
			if len(bs) == 0 {
				continue // nothing said: the Messages API refuses empty text
			}
			add("assistant", bs...)
		case llm.RoleTool:
			if msg.ToolCallID == "" {
				return nil, m.badRequest(fmt.Sprintf("message %d: a tool message has no tool_call_id: build it with llm.ToolResult", i))
			}
			var content []block
			if msg.Content != "" {
				content = append(content, block{Type: "text", Text: msg.Content})
			}
			imgs, err := imageBlocks(msg.Images)
			if err != nil {
				return nil, m.badRequest(fmt.Sprintf("message %d: %v", i, err))
			}
			content = append(content, imgs...)
			add("user", block{Type: "tool_result", ToolUseID: msg.ToolCallID, Content: content})
		default:
			return nil, m.badRequest(fmt.Sprintf("message %d: unknown role %q: use system, user, assistant or tool", i, msg.Role))
		}
	}
	out.System = strings.Join(system, "\n\n")
	return out, nil
}

// imageBlocks are image content blocks: bytes and data: URLs as base64,
// http(s) URLs as URL sources.
func imageBlocks(imgs []llm.Image) ([]block, error) {
	var out []block
	for j, img := range imgs {
		switch {
		case img.URL == "" && len(img.Data) == 0:
			return nil, fmt.Errorf("image %d: neither URL nor Data is set", j)
		case img.URL == "":
			mime := img.MIMEType
			if mime == "" {
				mime = sniffImage(img.Data)
			}
			out = append(out, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: mime, Data: base64.StdEncoding.EncodeToString(img.Data)}})
		case strings.HasPrefix(img.URL, "data:"):
			mime, data, err := decodeDataURL(img.URL)
			if err != nil {
				return nil, fmt.Errorf("image %d: %v", j, err)
			}
			out = append(out, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: mime, Data: base64.StdEncoding.EncodeToString(data)}})
		default:
			out = append(out, block{Type: "image", Source: &imageSource{Type: "url", URL: img.URL}})
		}
	}
	return out, nil
}

// toolUseBlock is an assistant's tool call as the Messages API takes it
// back: a computer call as Anthropic sent it (Raw), or from its
// normalized action.
func toolUseBlock(tc llm.ToolCall) (block, error) {
	if tc.Name != llm.ComputerTool {
		args := json.RawMessage(tc.Arguments)
		if !isJSONObject(tc.Arguments) {
			args = json.RawMessage(`{}`) // the model got an error result for it already
		}
		return block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: args}, nil
	}
	if len(tc.Raw) > 0 {
		var b block
		if json.Unmarshal(tc.Raw, &b) == nil && b.Type == "tool_use" {
			return b, nil
		}
	}
	call, err := llm.ParseComputerCall(tc.Arguments)
	if err != nil {
		return block{}, err
	}
	if len(call.Actions) != 1 {
		return block{}, fmt.Errorf("computer call %s has %d actions: Anthropic's computer tool takes one per call", tc.ID, len(call.Actions))
	}
	input, err := AnthropicAction(call.Actions[0])
	if err != nil {
		return block{}, err
	}
	return block{Type: "tool_use", ID: tc.ID, Name: llm.ComputerTool, Input: input}, nil
}

// completeComputer sends a computer-use request and reads the reply.
func (m *Model) completeComputer(ctx context.Context, req *llm.Request, stream func(context.Context, []byte) error) (*llm.Response, error) {
	body, err := m.computerRequest(req)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, m.badRequest(err.Error())
	}
	ctx, meta := httpmeta.With(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.native.url, bytes.NewReader(raw))
	if err != nil {
		return nil, m.badRequest(err.Error())
	}
	_, beta := ComputerToolVersion(m.native.model)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("X-Api-Key", m.native.apiKey)
	hreq.Header.Set("Anthropic-Version", m.native.version)
	hreq.Header.Set("Anthropic-Beta", beta)
	status, data, err := m.native.doer.Send(hreq)
	if err != nil {
		return nil, m.mapError(ctx, err, meta)
	}
	if status/100 != 2 {
		return nil, m.statusError(status, data, meta)
	}
	var ar apiResponse
	if err := json.Unmarshal(data, &ar); err != nil {
		return nil, &llm.Error{Kind: llm.KindServer, Provider: m.provider, Message: fmt.Sprintf("the reply is not a Messages API response: %v", err)}
	}
	out, err := m.computerResponse(&ar)
	if err != nil {
		return nil, err
	}
	if stream != nil && out.Message.Content != "" {
		if err := stream(ctx, []byte(out.Message.Content)); err != nil {
			return nil, err
		}
	}
	if out.Message.Content == "" && len(out.Message.ToolCalls) == 0 && llm.Unfinished(out) == "" {
		return nil, &llm.Error{Kind: llm.KindEmptyReply, Provider: m.provider,
			Message: fmt.Sprintf("no text and no tool calls (stop reason %q)", ar.StopReason)}
	}
	return out, nil
}

// statusError is a failed status with Anthropic's error body.
func (m *Model) statusError(status int, body []byte, meta *httpmeta.Meta) error {
	var e struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message + " [" + e.Error.Type + "]"
	}
	kind := llm.KindForStatus(status)
	contextLength := (kind == llm.KindBadRequest || kind == llm.KindUnknown) && httpmeta.MentionsContextLength(msg)
	return httpmeta.StatusError(m.provider, status, msg, contextLength, meta, m.apiKey)
}

// computerResponse reads a Messages API reply: text, tool calls, and the
// computer tool's calls normalized (each keeping its block as Raw).
func (m *Model) computerResponse(ar *apiResponse) (*llm.Response, error) {
	out := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, Model: ar.Model, FinishReason: finishReason(ar.StopReason)}
	if out.Model == "" {
		out.Model = m.modelName
	}
	u := ar.Usage
	out.Usage = llm.Usage{PromptTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadInputTokens}
	out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	var text strings.Builder
	for _, b := range ar.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if b.Name != llm.ComputerTool {
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
				continue
			}
			a, err := NormalizeAnthropicAction(b.Input)
			if err != nil {
				// The model's mistake, not the provider's: the call's
				// arguments say so, and the action fails with it.
				a = llm.ComputerAction{Action: "invalid: " + err.Error()}
			}
			raw, _ := json.Marshal(b)
			out.Message.ToolCalls = append(out.Message.ToolCalls, llm.ComputerToolCall(b.ID, llm.ComputerCall{Actions: []llm.ComputerAction{a}}, raw))
		}
	}
	out.Message.Content = text.String()
	return out, nil
}

// anthropicInput is the computer tool's input, all versions' fields.
type anthropicInput struct {
	Action          string  `json:"action"`
	Coordinate      []int   `json:"coordinate,omitempty"`
	StartCoordinate []int   `json:"start_coordinate,omitempty"`
	Text            string  `json:"text,omitempty"`
	ScrollDirection string  `json:"scroll_direction,omitempty"`
	ScrollAmount    int     `json:"scroll_amount,omitempty"`
	Duration        float64 `json:"duration,omitempty"`
	Region          []int   `json:"region,omitempty"`
}

// NormalizeAnthropicAction maps the computer tool's input onto Saucer's
// normalized action. An action Saucer has no name for keeps Anthropic's.
func NormalizeAnthropicAction(input json.RawMessage) (llm.ComputerAction, error) {
	var in anthropicInput
	if err := json.Unmarshal(input, &in); err != nil {
		return llm.ComputerAction{}, fmt.Errorf("the computer tool's input is not an object with an action: %v", err)
	}
	point := func(a llm.ComputerAction, c []int) (llm.ComputerAction, error) {
		if c == nil {
			return a, nil
		}
		if len(c) != 2 {
			return a, fmt.Errorf("%s: coordinate %v: want [x, y]", in.Action, c)
		}
		return a.At(c[0], c[1]), nil
	}
	hold := func() []string {
		if in.Text == "" {
			return nil
		}
		return []string{in.Text}
	}
	switch in.Action {
	case "screenshot":
		return llm.ComputerAction{Action: llm.ActScreenshot}, nil
	case "left_click", "right_click", "middle_click", "double_click", "triple_click":
		a := llm.ComputerAction{Action: llm.ActClick, Button: "left", Count: 1, Hold: hold()}
		switch in.Action {
		case "right_click":
			a.Button = "right"
		case "middle_click":
			a.Button = "middle"
		case "double_click":
			a.Count = 2
		case "triple_click":
			a.Count = 3
		}
		return point(a, in.Coordinate)
	case "mouse_move":
		return point(llm.ComputerAction{Action: llm.ActMove}, in.Coordinate)
	case "left_click_drag":
		a := llm.ComputerAction{Action: llm.ActDrag, Button: "left"}
		if len(in.StartCoordinate) == 2 {
			a.Path = append(a.Path, [2]int{in.StartCoordinate[0], in.StartCoordinate[1]})
		}
		if len(in.Coordinate) == 2 {
			a.Path = append(a.Path, [2]int{in.Coordinate[0], in.Coordinate[1]})
		}
		return a, nil
	case "scroll":
		a := llm.ComputerAction{Action: llm.ActScroll, Hold: hold()}
		n := max(in.ScrollAmount, 1)
		switch in.ScrollDirection {
		case "down":
			a.ScrollY = n
		case "up":
			a.ScrollY = -n
		case "right":
			a.ScrollX = n
		case "left":
			a.ScrollX = -n
		default:
			return a, fmt.Errorf("scroll: scroll_direction %q: want up, down, left or right", in.ScrollDirection)
		}
		return point(a, in.Coordinate)
	case "key":
		// xdotool's syntax: chords joined by +, several separated by spaces.
		return llm.ComputerAction{Action: llm.ActKeys, Keys: strings.Fields(in.Text)}, nil
	case "type":
		return llm.ComputerAction{Action: llm.ActType, Text: in.Text}, nil
	case "wait":
		return llm.ComputerAction{Action: llm.ActWait, Seconds: in.Duration}, nil
	case "hold_key":
		return llm.ComputerAction{Action: llm.ActHoldKey, Keys: strings.Fields(in.Text), Seconds: in.Duration}, nil
	case "left_mouse_down", "left_mouse_up":
		act := llm.ActMouseDown
		if in.Action == "left_mouse_up" {
			act = llm.ActMouseUp
		}
		return point(llm.ComputerAction{Action: act, Button: "left"}, in.Coordinate)
	case "cursor_position":
		return llm.ComputerAction{Action: llm.ActCursor}, nil
	case "zoom":
		return llm.ComputerAction{Action: llm.ActZoom, Region: in.Region}, nil
	case "":
		return llm.ComputerAction{}, fmt.Errorf("the computer tool's input names no action")
	}
	return llm.ComputerAction{Action: in.Action}, nil
}

// AnthropicAction is the computer tool's input for a normalized action:
// NormalizeAnthropicAction the other way.
func AnthropicAction(a llm.ComputerAction) (json.RawMessage, error) {
	in := anthropicInput{}
	if x, y, ok := a.Point(); ok {
		in.Coordinate = []int{x, y}
	}
	hold := strings.Join(a.Hold, "+")
	switch a.Action {
	case llm.ActScreenshot:
		in.Action = "screenshot"
	case llm.ActClick:
		in.Text = hold
		switch {
		case a.Count == 2:
			in.Action = "double_click"
		case a.Count == 3:
			in.Action = "triple_click"
		case a.Button == "right":
			in.Action = "right_click"
		case a.Button == "middle":
			in.Action = "middle_click"
		default:
			in.Action = "left_click"
		}
	case llm.ActMove:
		in.Action = "mouse_move"
	case llm.ActDrag:
		if len(a.Path) < 2 {
			return nil, fmt.Errorf("drag with %d points: Anthropic's left_click_drag needs a start and an end", len(a.Path))
		}
		s, e := a.Path[0], a.Path[len(a.Path)-1]
		in.Action, in.StartCoordinate, in.Coordinate = "left_click_drag", []int{s[0], s[1]}, []int{e[0], e[1]}
	case llm.ActScroll:
		in.Action, in.Text = "scroll", hold
		switch {
		case a.ScrollY > 0:
			in.ScrollDirection, in.ScrollAmount = "down", a.ScrollY
		case a.ScrollY < 0:
			in.ScrollDirection, in.ScrollAmount = "up", -a.ScrollY
		case a.ScrollX > 0:
			in.ScrollDirection, in.ScrollAmount = "right", a.ScrollX
		case a.ScrollX < 0:
			in.ScrollDirection, in.ScrollAmount = "left", -a.ScrollX
		default:
			return nil, fmt.Errorf("scroll by 0 notches: give scroll_x or scroll_y")
		}
	case llm.ActType:
		in.Action, in.Text = "type", a.Text
	case llm.ActKeys:
		in.Action, in.Text = "key", strings.Join(a.Keys, " ")
	case llm.ActWait:
		in.Action, in.Duration = "wait", a.Seconds
	case llm.ActHoldKey:
		in.Action, in.Text, in.Duration = "hold_key", strings.Join(a.Keys, " "), a.Seconds
	case llm.ActMouseDown:
		in.Action = "left_mouse_down"
	case llm.ActMouseUp:
		in.Action = "left_mouse_up"
	case llm.ActCursor:
		in.Action = "cursor_position"
	case llm.ActZoom:
		in.Action, in.Region = "zoom", a.Region
	default:
		in.Action = a.Action
	}
	return json.Marshal(in)
}
