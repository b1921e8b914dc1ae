package openai_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/openai"
	"github.com/saucerhq/saucer/llm/openai/internal/cassette"
)

const cassetteDir = "../../testdata/provider-cassettes"

const chatPath = "/v1/chat/completions"

// recordedRequest is the part of a recorded chat-completions request body
// that a Saucer request can express.
type recordedRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string         `json:"role"`
		Content    *string        `json:"content"`
		ToolCallID string         `json:"tool_call_id"`
		ToolCalls  []recordedCall `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Temperature *float64 `json:"temperature"`
	Stop        []string `json:"stop"`
}

// recordedCall is a tool call in a recorded request's assistant turn
// or in a recorded response.
type recordedCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// call is the Saucer tool call it records.
func (tc recordedCall) call() llm.ToolCall {
	return llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
}

// recordedResponse is a recorded chat-completions response body, read
// without go-openai so the test does not check the SDK against itself.
type recordedResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string        `json:"content"`
			ToolCalls []recordedCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// llmRequest rebuilds the Saucer request that corresponds to a recorded body.
func llmRequest(t *testing.T, body []byte) (model string, req *llm.Request) {
	t.Helper()
	var rec recordedRequest
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatalf("recorded request body: %v", err)
	}
	req = &llm.Request{Temperature: rec.Temperature, Stop: rec.Stop}
	for _, m := range rec.Messages {
		msg := llm.Message{Role: llm.Role(m.Role), ToolCallID: m.ToolCallID}
		if m.Content != nil {
			msg.Content = *m.Content
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, tc.call())
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, tool := range rec.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: tool.Function.Name, Description: tool.Function.Description, Parameters: tool.Function.Parameters})
	}
	return rec.Model, req
}

// expectedResponse is the llm.Response the recorded body must turn into.
func expectedResponse(t *testing.T, body []byte) *llm.Response {
	t.Helper()
	var rec recordedResponse
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatalf("recorded response body: %v", err)
	}
	if len(rec.Choices) != 1 {
		t.Fatalf("recorded response has %d choices, want 1", len(rec.Choices))
	}
	c := rec.Choices[0]
	want := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant},
		FinishReason: c.FinishReason,
		Model:        rec.Model,
		Usage: llm.Usage{
			PromptTokens:     rec.Usage.PromptTokens,
			CompletionTokens: rec.Usage.CompletionTokens,
			TotalTokens:      rec.Usage.TotalTokens,
			CachedTokens:     rec.Usage.PromptTokensDetails.CachedTokens,
		},
	}
	if c.Message.Content != nil {
		want.Message.Content = *c.Message.Content
	}
	for _, tc := range c.Message.ToolCalls {
		want.Message.ToolCalls = append(want.Message.ToolCalls, tc.call())
	}
	return want
}

// chatExchanges loads a cassette's chat-completions exchanges; the
// langchaingo recordings also hold calls to a search API, which the agent
// made itself and which the model client never sends.
func chatExchanges(t *testing.T, path string) []cassette.Exchange {
	t.Helper()
	all, err := cassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []cassette.Exchange
	for _, ex := range all {
		if ex.Path == chatPath {
			out = append(out, ex)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no chat-completions exchange", path)
	}
	return out
}

func cassettes(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(cassetteDir, "*.httprr"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 5 {
		t.Fatalf("found %d cassettes in %s, want the 5 recorded ones", len(paths), cassetteDir)
	}
	return paths
}

// TestCassettesComplete replays each recorded OpenAI session: the client
// must send what the recorded client sent and read each recorded reply into
// exactly the recorded tool calls, text and usage.
func TestCassettesComplete(t *testing.T) {
	for _, path := range cassettes(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			exchanges := chatExchanges(t, path)
			srv := cassette.Serve(t, exchanges)
			var model *openai.Model
			for i, ex := range exchanges {
				name, req := llmRequest(t, ex.RequestBody)
				if model == nil {
					var err error
					model, err = openai.New(openai.Config{APIKey: "test-api-key", BaseURL: srv.URL + "/v1", Model: name})
					if err != nil {
						t.Fatal(err)
					}
				}
				got, err := model.Complete(context.Background(), req)
				if err != nil {
					t.Fatalf("exchange %d: %v", i+1, err)
				}
				want := expectedResponse(t, ex.ResponseBody)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("exchange %d:\n got %+v\nwant %+v", i+1, got, want)
				}
				sent := srv.Received()[i]
				if diff := jsonDiff(normalizeRecorded(t, ex.RequestBody), normalizeSent(t, sent)); diff != "" {
					t.Errorf("exchange %d: sent body differs from the recording: %s\n sent %s\n recorded %s", i+1, diff, sent, ex.RequestBody)
				}
			}
			if n := len(srv.Received()); n != len(exchanges) {
				t.Errorf("server saw %d requests, recording has %d", n, len(exchanges))
			}
		})
	}
}

// TestCassetteToolCallsAreReal guards the test above against vacuity: the
// recordings must contain real tool calls and usage for it to check.
func TestCassetteToolCallsAreReal(t *testing.T) {
	calls, usage := 0, 0
	for _, path := range cassettes(t) {
		for _, ex := range chatExchanges(t, path) {
			want := expectedResponse(t, ex.ResponseBody)
			calls += len(want.Message.ToolCalls)
			if want.Usage.TotalTokens > 0 {
				usage++
			}
		}
	}
	if calls < 2 || usage < 5 {
		t.Fatalf("cassettes hold %d tool calls and %d responses with usage; the replay tests would prove little", calls, usage)
	}
}

// normalizeSent removes what go-openai always writes but the recorded
// client left out: "stream": false.
func normalizeSent(t *testing.T, body []byte) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("sent body is not JSON: %v", err)
	}
	if s, ok := v["stream"]; ok && s == false {
		delete(v, "stream")
	}
	return roundNumbers(v)
}

// normalizeRecorded removes the empty content the recorded client wrote on
// assistant turns that carry tool calls; go-openai omits it, and the API
// reads both the same way.
func normalizeRecorded(t *testing.T, body []byte) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("recorded body is not JSON: %v", err)
	}
	msgs, _ := v["messages"].([]any)
	for _, m := range msgs {
		msg := m.(map[string]any)
		if _, calls := msg["tool_calls"]; calls && msg["content"] == "" {
			delete(msg, "content")
		}
	}
	return roundNumbers(v)
}

// roundNumbers rounds every number to 1e-9 so that a temperature of zero,
// which go-openai can only send as the smallest float32, compares equal.
func roundNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = roundNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = roundNumbers(e)
		}
	case float64:
		return math.Round(x*1e9) / 1e9
	}
	return v
}

// jsonDiff describes the first difference between two decoded JSON values.
func jsonDiff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	wm, ok1 := want.(map[string]any)
	gm, ok2 := got.(map[string]any)
	if ok1 && ok2 {
		for k := range wm {
			if !reflect.DeepEqual(wm[k], gm[k]) {
				return "field " + k + ": " + jsonDiff(wm[k], gm[k])
			}
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				return "extra field " + k
			}
		}
	}
	wa, ok1 := want.([]any)
	ga, ok2 := got.([]any)
	if ok1 && ok2 && len(wa) == len(ga) {
		for i := range wa {
			if d := jsonDiff(wa[i], ga[i]); d != "" {
				return "element " + itoa(i) + ": " + d
			}
		}
	}
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	return "want " + string(w) + ", got " + string(g)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
