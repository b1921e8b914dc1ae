package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// argumentsAsObject reports whether a tool call's arguments are written as
// an object or an array rather than as JSON text. A scan, not a regular
// expression: it runs on every reply.
func argumentsAsObject(body []byte) bool {
	key := []byte(`"arguments"`)
	for {
		i := bytes.Index(body, key)
		if i < 0 {
			return false
		}
		body = bytes.TrimLeft(body[i+len(key):], " \t\r\n")
		if len(body) > 0 && body[0] == ':' {
			rest := bytes.TrimLeft(body[1:], " \t\r\n")
			if len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') {
				return true
			}
		}
	}
}

// fixDialects reads a chat-completions body the way servers that speak a
// dialect of OpenAI's format write it, and rewrites it in OpenAI's own:
//   - a tool call's arguments sent as a JSON object (some vLLM and Ollama
//     versions) become the JSON text OpenAI sends;
//   - an error sent with status 200 ({"error": {...}} and no choices)
//     becomes the failure it is, with its message, instead of an empty
//     reply.
//
// Missing and repeated tool-call ids are fixed after decoding
// (llm.FixCallIDs). A body that is not JSON is left to the SDK to report.
func fixDialects(body []byte) ([]byte, int, error) {
	// Most bodies need nothing: look before decoding.
	if !bytes.Contains(body, []byte(`"error"`)) && !argumentsAsObject(body) {
		return body, 0, nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return body, 0, nil
	}
	if e, ok := doc["error"]; ok && len(doc["choices"]) == 0 && string(e) != "null" {
		status := http.StatusBadGateway
		var inner struct {
			Code any    `json:"code"`
			Type string `json:"type"`
		}
		json.Unmarshal(e, &inner)
		switch inner.Type {
		case "invalid_request_error":
			status = http.StatusBadRequest
		case "rate_limit_error", "rate_limit_exceeded":
			status = http.StatusTooManyRequests
		case "authentication_error":
			status = http.StatusUnauthorized
		}
		if s, ok := inner.Code.(string); ok && s == "context_length_exceeded" {
			status = http.StatusBadRequest
		}
		return body, status, nil
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(doc["choices"], &choices) != nil {
		return body, 0, nil
	}
	changed := false
	for _, ch := range choices {
		var msg map[string]json.RawMessage
		if json.Unmarshal(ch["message"], &msg) != nil {
			continue
		}
		var calls []map[string]json.RawMessage
		if json.Unmarshal(msg["tool_calls"], &calls) != nil {
			continue
		}
		for _, c := range calls {
			var fn map[string]json.RawMessage
			if json.Unmarshal(c["function"], &fn) != nil {
				continue
			}
			args := fn["arguments"]
			if len(args) > 0 && (args[0] == '{' || args[0] == '[') {
				s, _ := json.Marshal(string(args))
				fn["arguments"] = s
				c["function"], _ = json.Marshal(fn)
				changed = true
			}
		}
		if changed {
			msg["tool_calls"], _ = json.Marshal(calls)
			ch["message"], _ = json.Marshal(msg)
		}
	}
	if !changed {
		return body, 0, nil
	}
	doc["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(doc)
	if err != nil {
		return body, 0, nil
	}
	return out, 0, nil
}
