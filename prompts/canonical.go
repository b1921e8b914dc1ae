package prompts

import (
	"bytes"
	"encoding/json"
)

// CanonicalJSON rewrites a JSON value with its object keys sorted and no
// white space (numbers kept exactly as written). A tool's schema or a
// tool's result reaches a prompt through different paths live (as the
// server wrote it) and in a replay (as the recording decoded it, keys
// sorted): writing both canonically makes the request bytes the same, so
// that a recording replays in every mode. Anything that is not valid JSON
// is returned as it is.
func CanonicalJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
