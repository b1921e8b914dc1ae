package trajectory

import (
	_ "embed"
	"encoding/json"
	"reflect"
	"sort"

	"github.com/invopop/jsonschema"

	"github.com/saucerhq/saucer/command"
)

//go:embed event.schema.json
var schemaJSON []byte

// SchemaID is the $id of the event-line schema.
const SchemaID = "https://saucer.dev/schemas/trajectory-event-v1.json"

// Schema returns the JSON Schema (draft 2020-12) of one line of
// trajectory.jsonl, as checked in at trajectory/event.schema.json.
func Schema() []byte { return append([]byte(nil), schemaJSON...) }

// GenerateSchema builds the schema from the Go types; the checked-in file is
// its output (a test keeps them equal; go test ./trajectory -update
// rewrites the file).
func GenerateSchema() ([]byte, error) {
	r := &jsonschema.Reflector{Mapper: mapCommandTypes}
	s := r.Reflect(&Event{})
	s.ID = SchemaID
	s.Title = "Saucer trajectory event (" + Format + ")"
	s.Description = "One line of trajectory.jsonl. Values under content, data, arguments, parameters and result may be replaced by an artifact reference."
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	defs, _ := doc["$defs"].(map[string]any)
	defs["ArtifactRef"] = map[string]any{
		"type":     "object",
		"required": []string{ArtifactKey, "path", "encoding", "media_type", "size"},
		"properties": map[string]any{
			ArtifactKey:  map[string]any{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
			"path":       map[string]any{"type": "string", "pattern": "^artifacts/[0-9a-f]{64}(\\.[A-Za-z0-9]+)?$"},
			"encoding":   map[string]any{"enum": []string{EncodingText, EncodingBase64, EncodingJSON}},
			"media_type": map[string]any{"type": "string"},
			"size":       map[string]any{"type": "integer", "minimum": 0},
		},
		"additionalProperties": false,
	}
	allowRefs(doc)
	// Per-type requirements, from the table the reader checks.
	types := make([]string, 0, len(required))
	for t := range required {
		types = append(types, string(t))
	}
	sort.Strings(types)
	var all []any
	for _, t := range types {
		all = append(all, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": t}}},
			"then": map[string]any{"required": required[Type(t)]},
		})
	}
	if ev, ok := defs["Event"].(map[string]any); ok {
		ev["allOf"] = all
	}
	return json.MarshalIndent(doc, "", "  ")
}

// allowRefs lets every property named in externalKeys be an ArtifactRef.
func allowRefs(v any) {
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for name, p := range props {
				if externalKeys[name] {
					props[name] = map[string]any{"anyOf": []any{p, map[string]any{"$ref": "#/$defs/ArtifactRef"}}}
				}
			}
		}
		for k, val := range x {
			if k != "ArtifactRef" {
				allowRefs(val)
			}
		}
	case []any:
		for _, val := range x {
			allowRefs(val)
		}
	}
}

// mapCommandTypes describes command.Command and command.Result as they are
// written: AIP writes null for unset fields.
func mapCommandTypes(t reflect.Type) *jsonschema.Schema {
	str := &jsonschema.Schema{Type: "string"}
	null := &jsonschema.Schema{Type: "null"}
	strOrNull := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{str, null}}
	props := jsonschema.NewProperties()
	switch t {
	case reflect.TypeOf(command.Command{}):
		props.Set("tool_name", str)
		props.Set("parameters", &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "object"}, null}})
		props.Set("tool_type", str)
		props.Set("call_id", strOrNull)
		props.Set("namespace", str)
		return &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"tool_name"}, Description: "An AIP command."}
	case reflect.TypeOf(command.Result{}):
		props.Set("status", &jsonschema.Schema{Enum: []any{"success", "failure", "skipped", "none"}})
		props.Set("error", strOrNull)
		props.Set("result", &jsonschema.Schema{Description: "The tool's payload, any JSON."})
		props.Set("namespace", strOrNull)
		props.Set("call_id", strOrNull)
		return &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"status"}, Description: "An AIP result."}
	}
	return nil
}
