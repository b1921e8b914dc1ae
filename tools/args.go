package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// argSpec is what the decoder needs from an input schema: the argument
// names it accepts and those it requires.
type argSpec struct {
	names    []string
	required []string
}

func parseArgSpec(schema json.RawMessage) (argSpec, error) {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return argSpec{}, err
	}
	if s.Type != "object" {
		return argSpec{}, fmt.Errorf("schema type is %q, want a struct (object)", s.Type)
	}
	spec := argSpec{required: s.Required}
	for n := range s.Properties {
		spec.names = append(spec.names, n)
	}
	slices.Sort(spec.names)
	return spec, nil
}

// decode checks raw against the spec and decodes it into dst. Its errors
// name the offending argument, for the model to correct its call.
func (a argSpec) decode(raw []byte, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return errors.New("arguments must be a JSON object")
	}
	for name := range fields {
		if !slices.Contains(a.names, name) {
			return fmt.Errorf("unknown argument %q; this tool takes %s", name, a.describeNames())
		}
	}
	for _, name := range a.required {
		if v, ok := fields[name]; !ok || string(v) == "null" {
			return fmt.Errorf("missing required argument %q", name)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("argument %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
		}
		return err
	}
	return nil
}

func (a argSpec) describeNames() string {
	if len(a.names) == 0 {
		return "no arguments"
	}
	return "only " + strings.Join(a.names, ", ")
}

// jsonKind names the JSON kind that decodes into a Go type, in the words a
// schema uses.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}
