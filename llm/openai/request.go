package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/saucerhq/saucer/llm"
)

// emptyObjectSchema stands in for a tool without parameters: OpenAI wants an
// object schema, and go-openai would otherwise send "parameters": null.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest maps an llm.Request onto go-openai's request type.
func (m *Model) chatRequest(req *llm.Request) (goopenai.ChatCompletionRequest, error) {
	if req == nil {
		return goopenai.ChatCompletionRequest{}, m.badRequest("nil request")
	}
	creq := goopenai.ChatCompletionRequest{
		Model:    m.model,
		Stop:     req.Stop,
		Messages: make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)),
	}
	if len(req.Tools) > 0 {
		creq.Tools = make([]goopenai.Tool, 0, len(req.Tools))
	}
	for i, msg := range req.Messages {
		cm, err := chatMessage(msg)
		if err != nil {
			return creq, m.badRequest(fmt.Sprintf("message %d: %v", i, err))
		}
		creq.Messages = append(creq.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptyObjectSchema
		}
		creq.Tools = append(creq.Tools, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		creq.ToolChoice = req.ToolChoice
	default:
		creq.ToolChoice = goopenai.ToolChoice{
			Type:     goopenai.ToolTypeFunction,
			Function: goopenai.ToolFunction{Name: req.ToolChoice},
		}
	}
	if req.JSON {
		creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}

	reasoning := isReasoningModel(m.model)
	if req.Temperature != nil && !reasoning {
		// Reasoning models accept only their fixed temperature, so none is
		// sent to them. go-openai drops a zero temperature (omitempty), and
		// the API's default is 1, not 0: the smallest float32 above zero is
		// the SDK's documented way to ask for zero.
		t := float32(*req.Temperature)
		if t == 0 {
			t = math.SmallestNonzeroFloat32
		}
		creq.Temperature = t
	}
	if req.MaxTokens > 0 {
		// go-openai refuses max_tokens for reasoning models before sending;
		// other OpenAI-compatible servers (older vLLM, Ollama) know only
		// max_tokens, so keep it for everything else.
		if reasoning {
			creq.MaxCompletionTokens = req.MaxTokens
		} else {
			creq.MaxTokens = req.MaxTokens
		}
	}
	return creq, nil
}

// isReasoningModel mirrors go-openai's ReasoningValidator: model names it
// treats as reasoning models, for which it rejects max_tokens and any
// temperature other than 1.
func isReasoningModel(model string) bool {
	for _, prefix := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, prefix) {
			return true
		}
	}
	return false
}

func chatMessage(msg llm.Message) (goopenai.ChatCompletionMessage, error) {
	if len(msg.Images) > 0 && msg.Role != llm.RoleUser {
		return goopenai.ChatCompletionMessage{}, fmt.Errorf("a %s message carries images: only user messages may", msg.Role)
	}
	switch msg.Role {
	case llm.RoleSystem:
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: msg.Content}, nil
	case llm.RoleUser:
		cm := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser}
		if len(msg.Images) == 0 {
			cm.Content = msg.Content
			return cm, nil
		}
		if msg.Content != "" {
			cm.MultiContent = append(cm.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: msg.Content})
		}
		for j, img := range msg.Images {
			url, err := imageURL(img)
			if err != nil {
				return cm, fmt.Errorf("image %d: %w", j, err)
			}
			cm.MultiContent = append(cm.MultiContent, goopenai.ChatMessagePart{
				Type:     goopenai.ChatMessagePartTypeImageURL,
				ImageURL: &goopenai.ChatMessageImageURL{URL: url, Detail: goopenai.ImageURLDetail(img.Detail)},
			})
		}
		return cm, nil
	case llm.RoleAssistant:
		cm := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: msg.Content}
		for _, tc := range msg.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, goopenai.ToolCall{
				ID:       tc.ID,
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		return cm, nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return goopenai.ChatCompletionMessage{}, fmt.Errorf("a tool message has no tool_call_id: build it with llm.ToolResult")
		}
		// No name: OpenAI's tool message has only content and tool_call_id.
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, Content: msg.Content, ToolCallID: msg.ToolCallID}, nil
	}
	return goopenai.ChatCompletionMessage{}, fmt.Errorf("unknown role %q: use system, user, assistant or tool", msg.Role)
}

// imageURL gives the URL the API reads an image from: the image's own URL,
// or its bytes as a base64 data: URL.
func imageURL(img llm.Image) (string, error) {
	if img.URL != "" {
		return img.URL, nil
	}
	if len(img.Data) == 0 {
		return "", fmt.Errorf("neither URL nor Data is set")
	}
	mime := img.MIMEType
	if mime == "" {
		mime = http.DetectContentType(img.Data)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(img.Data), nil
}

func (m *Model) badRequest(msg string) error {
	return &llm.Error{Kind: llm.KindBadRequest, Provider: m.provider, Message: msg}
}
