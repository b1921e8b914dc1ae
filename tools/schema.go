// Package tools is how Saucer defines tools. A Tool is metadata plus a
// typed Go handler whose JSON Schemas come from its Go types (New); a
// Server is a set of tools offered as one MCP server, one namespace of the
// device. Saucer's own servers live in the sub-packages (tools/shell,
// tools/files, tools/desktop).
//
// Nothing here names the MCP library underneath: the device client serves
// a Server to itself in-process, and `saucer mcp NAME` serves one over
// stdio or HTTP, so that the library can be swapped without touching a
// tool.
package tools

import (
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
)

// Schema returns the JSON Schema of T's JSON form, in the shape OpenAI's
// function calling accepts: one self-contained object with no "$schema",
// "$id", "$ref" or "$defs" (nested types are written inline), each property
// described by its `jsonschema_description:"..."` tag, and
// "additionalProperties": false on every object, so that a misspelt argument
// is caught rather than silently dropped.
//
// Required rule: a field is required unless its json tag says omitempty or
// omitzero. Write `json:"limit,omitempty"` for an optional argument and
// `json:"path"` for a required one; the decoder in New enforces the same
// list. Enums come from `jsonschema:"enum=a,enum=b"`.
//
// T is normally a struct; Schema panics if reflection produces something
// that cannot be encoded, which only a programming error can cause.
func Schema[T any]() json.RawMessage {
	r := &jsonschema.Reflector{
		DoNotReference: true,
		ExpandedStruct: true,
		Anonymous:      true, // no "$id": it would name our Go package to the model
	}
	s := r.Reflect(new(T))
	s.Version = ""
	s.Definitions = nil
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tools.Schema[%T]: %v", *new(T), err))
	}
	return b
}
