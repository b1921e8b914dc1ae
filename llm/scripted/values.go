package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v4"
)

// yamlValue is a node of a YAML document.
type yamlValue struct{ n *yaml.Node }

func parseYAML(data []byte) (value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, errors.New("the script is empty: add a replies list")
	}
	return yamlValue{doc.Content[0]}, nil
}

// resolve follows aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (v yamlValue) line() int { return v.n.Line }

func (v yamlValue) fields() ([]field, error) {
	n := resolve(v.n)
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want a mapping (key: value), found %s", describe(n))
	}
	out := make([]field, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.ShortTag() == "!!merge" {
			return nil, errors.New("merge keys (<<) are not supported: write the keys out")
		}
		if k.Kind != yaml.ScalarNode {
			return nil, &locatedError{k.Line, fmt.Errorf("a key must be a plain word, found %s", describe(k))}
		}
		out = append(out, field{key: k.Value, val: yamlValue{n.Content[i+1]}})
	}
	return out, nil
}

func (v yamlValue) items() ([]value, error) {
	n := resolve(v.n)
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list, found %s", describe(n))
	}
	out := make([]value, len(n.Content))
	for i, c := range n.Content {
		out[i] = yamlValue{c}
	}
	return out, nil
}

func (v yamlValue) decode(into any) error {
	n := resolve(v.n)
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a single value, found %s", describe(n))
	}
	return n.Decode(into)
}

func (v yamlValue) str() (string, bool) {
	n := resolve(v.n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	return "", false
}

func (v yamlValue) json() (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, v.n, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeJSON renders a YAML node as compact JSON, keeping mapping keys in the
// order written (a map[string]any would sort them).
func writeJSON(b *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 100 {
		return errors.New("the value is nested more than 100 levels deep")
	}
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.ShortTag() == "!!merge" {
				return &locatedError{k.Line, errors.New("merge keys (<<) are not supported: write the keys out")}
			}
			if k.Kind != yaml.ScalarNode {
				return &locatedError{k.Line, fmt.Errorf("a JSON key must be a string, found %s", describe(k))}
			}
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeString(b, k.Value); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return writeScalar(b, n)
	}
	return &locatedError{n.Line, fmt.Errorf("cannot render %s as JSON", describe(n))}
}

func writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
		return nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return err
		}
		b.WriteString(strconv.FormatBool(v))
		return nil
	case "!!int", "!!float":
		// Keep the number as written when JSON accepts it (big integers,
		// exponents); otherwise (0x1F, .5) let YAML read it and re-render.
		if isJSONNumber(n.Value) {
			b.WriteString(n.Value)
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		out, err := json.Marshal(v)
		if err != nil {
			return &locatedError{n.Line, fmt.Errorf("JSON cannot hold the number %s", n.Value)}
		}
		b.Write(out)
		return nil
	}
	// Strings, and anything else (timestamps, binary), as written.
	return writeString(b, n.Value)
}

func writeString(b *bytes.Buffer, s string) error {
	out, err := compactJSON(s)
	if err != nil {
		return err
	}
	b.WriteString(out)
	return nil
}

func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "nothing"
}

// jsonValue is a value of a JSON document.
type jsonValue struct{ raw json.RawMessage }

func parseJSON(data []byte) (value, error) {
	if !json.Valid(data) {
		// Decode again to get the position of the mistake.
		var v any
		err := json.Unmarshal(data, &v)
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, &locatedError{line: 1 + bytes.Count(data[:syntax.Offset], []byte("\n")), err: err}
		}
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	return jsonValue{bytes.TrimSpace(data)}, nil
}

func (v jsonValue) line() int { return 0 }

func (v jsonValue) fields() ([]field, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v.raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("want an object, found %s", v.short())
	}
	out := make([]field, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, field{key: k, val: jsonValue{m[k]}})
	}
	return out, nil
}

func (v jsonValue) items() ([]value, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(v.raw, &list); err != nil || list == nil {
		return nil, fmt.Errorf("want an array, found %s", v.short())
	}
	out := make([]value, len(list))
	for i, item := range list {
		out[i] = jsonValue{item}
	}
	return out, nil
}

func (v jsonValue) decode(into any) error {
	if err := json.Unmarshal(v.raw, into); err != nil {
		return fmt.Errorf("want a %T, found %s", deref(into), v.short())
	}
	return nil
}

func (v jsonValue) str() (string, bool) {
	var s string
	if len(v.raw) == 0 || v.raw[0] != '"' || json.Unmarshal(v.raw, &s) != nil {
		return "", false
	}
	return s, true
}

func (v jsonValue) json() (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, v.raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (v jsonValue) short() string {
	s := string(v.raw)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

func deref(p any) any {
	switch p := p.(type) {
	case *string:
		return *p
	case *int:
		return *p
	case *bool:
		return *p
	}
	return p
}
