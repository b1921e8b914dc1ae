package evals

import (
	_ "embed"
	"encoding/json"

	"github.com/invopop/jsonschema"
)

//go:embed suite.schema.json
var suiteSchema []byte

// SuiteSchemaID is the $id of the suite schema.
const SuiteSchemaID = "https://saucer.dev/schemas/eval-suite-v1.json"

// SuiteSchema returns the JSON Schema of a suite file (evals/suite.schema.json).
func SuiteSchema() []byte { return append([]byte(nil), suiteSchema...) }

// GenerateSuiteSchema builds the schema from the Go types; the checked-in
// file is its output (go test ./evals -run TestSuiteSchema -args -update).
func GenerateSuiteSchema() ([]byte, error) {
	r := &jsonschema.Reflector{FieldNameTag: "yaml", RequiredFromJSONSchemaTags: false}
	s := r.Reflect(&Suite{})
	s.ID = SuiteSchemaID
	s.Title = "Saucer eval suite"
	s.Description = "An eval suite: cases with a task, a device (a recorded session or a live local device), limits, trials and checkers. See evals/README.md."
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	// Exactly one checker per check.
	if defs, ok := doc["$defs"].(map[string]any); ok {
		if check, ok := defs["Check"].(map[string]any); ok {
			var one []any
			for _, k := range []string{"state", "tool_calls", "answer", "judge", "node"} {
				one = append(one, map[string]any{"required": []string{k}})
			}
			check["oneOf"] = one
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}
