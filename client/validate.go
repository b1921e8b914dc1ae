package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders the validator's messages in English.
var printer = message.NewPrinter(language.English)

// compileSchema compiles a tool's input schema. Schemas without $schema
// are read as JSON Schema 2020-12, MCP's default dialect. Nothing is
// fetched: a $ref to another document fails to compile.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource("mem:///input.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem:///input.json")
}

// noLoader refuses every remote reference: validation must not touch the
// network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote schema %s is not loaded", url)
}

// encodeArgs is a command's parameters as the JSON object a tool gets
// (no parameters: {}).
func encodeArgs(params map[string]any) (json.RawMessage, error) {
	if params == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("the arguments cannot be encoded as JSON: %v", err)
	}
	return b, nil
}

// validateArgs checks a call's arguments (a JSON object) against a tool's
// schema. Its error names each wrong argument and says what is wrong with
// it.
func validateArgs(sch *jsonschema.Schema, args json.RawMessage) error {
	// Decode the validator's way (numbers as json.Number), so that integer
	// checks see the exact value.
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return err
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return err
	}
	var problems []string
	for _, leaf := range leaves(ve) {
		if p := describeProblem(leaf); !slices.Contains(problems, p) {
			problems = append(problems, p)
		}
	}
	if len(problems) > 4 {
		problems = append(problems[:4], fmt.Sprintf("and %d more problems", len(problems)-4))
	}
	return errors.New(strings.Join(problems, "; "))
}

// leaves are the innermost causes: the specific problems.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// describeProblem names the argument (a dotted path from the top) and says
// what is wrong in the words a model understands.
func describeProblem(e *jsonschema.ValidationError) string {
	where := strings.Join(e.InstanceLocation, ".")
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var names []string
		for _, m := range k.Missing {
			names = append(names, join(where, m))
		}
		if len(names) == 1 {
			return fmt.Sprintf("missing required argument %q", names[0])
		}
		return "missing required arguments " + quoteList(names)
	case *kind.AdditionalProperties:
		var names []string
		for _, p := range k.Properties {
			names = append(names, join(where, p))
		}
		return "unknown argument " + quoteList(names)
	}
	msg := e.ErrorKind.LocalizedString(printer)
	if where == "" {
		return "arguments: " + msg
	}
	return fmt.Sprintf("argument %q: %s", where, msg)
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}
