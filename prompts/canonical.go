package prompts

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// CanonicalJSON rewrites a JSON value with its object keys sorted and no
// white space (numbers kept exactly as written). A tool's schema or a
// tool's result reaches a prompt through different paths live (as the
// server wrote it) and in a replay (as the recording decoded it, keys
// sorted): writing both canonically makes the request bytes the same, so
// that a recording replays in every mode. Anything that is not valid JSON
// is returned as it is.
//
// Every result shown to a model goes through here, so the usual value
// (strings of printable text, plain escapes) is rewritten in one pass
// over its bytes; anything else (\u escapes, duplicate keys, invalid
// text) takes encoding/json's way, which is the definition.
func CanonicalJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	c := canonicalizer{in: raw, out: make([]byte, 0, len(raw))}
	c.space()
	if c.value() && c.space() == len(raw) {
		return c.out
	}
	return canonicalByDecoding(raw)
}

// canonicalByDecoding is CanonicalJSON through encoding/json.
func canonicalByDecoding(raw json.RawMessage) json.RawMessage {
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

// canonicalizer writes in canonically to out; each method returns false
// for what it leaves to encoding/json.
type canonicalizer struct {
	in    []byte
	i     int
	out   []byte
	depth int
	// scratch is where object reorders its members from.
	scratch []byte
}

// maxDepth is how deeply nested a value the one pass takes; encoding/json
// refuses values nested deeper than 10,000.
const maxDepth = 1000

// space skips white space and returns where it stopped.
func (c *canonicalizer) space() int {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\r', '\n':
			c.i++
		default:
			return c.i
		}
	}
	return c.i
}

func (c *canonicalizer) value() bool {
	if c.i >= len(c.in) || c.depth >= maxDepth {
		return false
	}
	c.depth++
	defer func() { c.depth-- }()
	switch b := c.in[c.i]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		_, ok := c.str()
		return ok
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

func (c *canonicalizer) literal(s string) bool {
	if !bytes.HasPrefix(c.in[c.i:], []byte(s)) {
		return false
	}
	c.out = append(c.out, s...)
	c.i += len(s)
	return true
}

// number copies a number as written, after checking JSON's grammar.
func (c *canonicalizer) number() bool {
	start := c.i
	digits := func() int {
		n := 0
		for c.i < len(c.in) && c.in[c.i] >= '0' && c.in[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if c.i < len(c.in) && c.in[c.i] == '-' {
		c.i++
	}
	if c.i < len(c.in) && c.in[c.i] == '0' {
		c.i++
	} else if digits() == 0 {
		return false
	}
	if c.i < len(c.in) && c.in[c.i] == '.' {
		c.i++
		if digits() == 0 {
			return false
		}
	}
	if c.i < len(c.in) && (c.in[c.i] == 'e' || c.in[c.i] == 'E') {
		c.i++
		if c.i < len(c.in) && (c.in[c.i] == '+' || c.in[c.i] == '-') {
			c.i++
		}
		if digits() == 0 {
			return false
		}
	}
	c.out = append(c.out, c.in[start:c.i]...)
	return true
}

// str copies a string that encoding/json writes back the same: printable
// ASCII and valid UTF-8 (but U+2028 and U+2029, which it escapes), and
// the escapes it writes itself (\" \\ \b \f \n \r \t). It returns the
// string's text when it has no escapes (a key with escapes sorts by its
// decoded text, which is left to encoding/json).
func (c *canonicalizer) str() (text []byte, ok bool) {
	start := c.i
	c.i++
	plain := true
	for c.i < len(c.in) {
		b := c.in[c.i]
		switch {
		case b == '"':
			c.i++
			c.out = append(c.out, c.in[start:c.i]...)
			if plain {
				return c.in[start+1 : c.i-1], true
			}
			return nil, true
		case b == '\\':
			if c.i+1 >= len(c.in) {
				return nil, false
			}
			switch c.in[c.i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			default:
				return nil, false // \u and \/ are written otherwise
			}
			plain = false
			c.i += 2
		case b < 0x20:
			return nil, false
		case b < utf8.RuneSelf:
			c.i++
		default:
			r, n := utf8.DecodeRune(c.in[c.i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			c.i += n
		}
	}
	return nil, false
}

type member struct {
	key        []byte // the key's text
	start, end int    // the member, "key":value, in out
}

// object writes an object's members sorted by key. Keys with escapes are
// left to encoding/json (their order is that of their decoded text).
func (c *canonicalizer) object() bool {
	c.i++
	base := len(c.out)
	c.out = append(c.out, '{')
	var small [8]member // most objects have a few members: no allocation
	members := small[:0]
	c.space()
	if c.i < len(c.in) && c.in[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		return true
	}
	for {
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != '"' {
			return false
		}
		m := member{start: len(c.out)}
		key, ok := c.str()
		if !ok || key == nil {
			return false
		}
		m.key = key
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != ':' {
			return false
		}
		c.i++
		c.out = append(c.out, ':')
		c.space()
		if !c.value() {
			return false
		}
		m.end = len(c.out)
		members = append(members, m)
		c.space()
		if c.i >= len(c.in) {
			return false
		}
		if c.in[c.i] == '}' {
			c.i++
			break
		}
		if c.in[c.i] != ',' {
			return false
		}
		c.i++
		c.out = append(c.out, ',')
	}
	sorted := slices.IsSortedFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	if !sorted {
		slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	}
	for k := 1; k < len(members); k++ {
		if bytes.Equal(members[k-1].key, members[k].key) {
			return false // the last one wins: left to encoding/json
		}
	}
	if sorted {
		c.out = append(c.out, '}')
		return true
	}
	// The members as written, in scratch, shared by every object: an
	// object is reordered once all it holds has been written.
	c.scratch = append(c.scratch[:0], c.out[base+1:]...)
	written := c.scratch
	c.out = c.out[:base+1]
	for k, m := range members {
		if k > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, written[m.start-base-1:m.end-base-1]...)
	}
	c.out = append(c.out, '}')
	return true
}

func (c *canonicalizer) array() bool {
	c.i++
	c.out = append(c.out, '[')
	c.space()
	if c.i < len(c.in) && c.in[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true
	}
	for {
		c.space()
		if !c.value() {
			return false
		}
		c.space()
		if c.i >= len(c.in) {
			return false
		}
		if c.in[c.i] == ']' {
			c.i++
			c.out = append(c.out, ']')
			return true
		}
		if c.in[c.i] != ',' {
			return false
		}
		c.i++
		c.out = append(c.out, ',')
	}
}
