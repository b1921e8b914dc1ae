package evals_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/evals"
)

var update = flag.Bool("update", false, "rewrite suite.schema.json")

func TestSuiteSchema(t *testing.T) {
	got, err := evals.GenerateSuiteSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		os.WriteFile("suite.schema.json", append(got, '\n'), 0o644)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(evals.SuiteSchema())) {
		t.Fatal("suite.schema.json is stale: go test ./evals -run TestSuiteSchema -args -update")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(evals.SuiteSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AddResource(evals.SuiteSchemaID, doc)
	sch, err := c.Compile(evals.SuiteSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(data []byte) error {
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return err
		}
		j, _ := json.Marshal(v)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			return err
		}
		return sch.Validate(inst)
	}
	files, _ := filepath.Glob("suites/*.yaml")
	files = append(files, "suites/seat-knowledge/train.yaml", "suites/seat-knowledge/test.yaml", "testdata/checkers.yaml", "testdata/knowledge/suite.yaml")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if err := validate(b); err != nil {
			t.Errorf("%s does not match the schema: %v", f, err)
		}
		if _, err := evals.LoadSuite(f); err != nil {
			t.Errorf("%s does not load: %v", f, err)
		}
	}
	for name, bad := range map[string]string{
		"two checkers": "name: x\ncases: [{id: a, task: t, checks: [{answer: {contains: a}, judge: {rubric: r}}]}]\n",
		"bad duration": "name: x\ndefaults: {timeout: soon}\ncases: [{id: a, task: t}]\n",
		"bad match":    "name: x\ncases: [{id: a, task: t, checks: [{tool_calls: {match: some, calls: []}}]}]\n",
		"unknown key":  "name: x\ncases: [{id: a, task: t, colour: red}]\n",
	} {
		if validate([]byte(bad)) == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}
