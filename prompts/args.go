package prompts

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeArgs decodes tool-call arguments the way json.Unmarshal into an
// interface{} does (objects to map[string]any, arrays to []any, numbers
// to float64), for the JSON a model writes in nearly every call: plain
// strings, numbers, literals, objects and arrays. Anything else (a \u
// escape, bytes that are not UTF-8, a number float64 cannot hold, deep
// nesting, text that is not JSON) gives ok false, and the caller asks
// encoding/json, which stays the definition. Arguments are decoded at
// every step of every agent; encoding/json scans them twice and looks
// every value up by reflection.
func decodeArgs(s string) (v any, ok bool) {
	d := argDecoder{s: s}
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.s)
}

type argDecoder struct {
	s string
	i int
}

// maxArgDepth bounds nesting; deeper arguments go to encoding/json.
const maxArgDepth = 100

func (d *argDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *argDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.s) || depth > maxArgDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		if s, ok := d.str(); ok {
			return s, true
		}
		return nil, false
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return true, true
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return false, true
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return nil, true
	}
	return nil, false
}

func (d *argDecoder) object(depth int) (any, bool) {
	m := map[string]any{}
	ok := d.items('}', func() bool {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return false
		}
		k, ok := d.str()
		if !ok {
			return false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return false
		}
		d.i++
		v, ok := d.value(depth + 1)
		m[k] = v // a repeated key: the last one, as encoding/json
		return ok
	})
	if !ok {
		return nil, false
	}
	return m, true
}

func (d *argDecoder) array(depth int) (any, bool) {
	a := []any{}
	ok := d.items(']', func() bool {
		v, ok := d.value(depth + 1)
		a = append(a, v)
		return ok
	})
	if !ok {
		return nil, false
	}
	return a, true
}

// items reads an object's members or an array's elements, item reading
// each, from the opening bracket to close; false where the text is not
// JSON.
func (d *argDecoder) items(close byte, item func() bool) bool {
	d.i++ // the opening bracket
	d.space()
	if d.i < len(d.s) && d.s[d.i] == close {
		d.i++
		return true
	}
	for {
		if !item() {
			return false
		}
		d.space()
		if d.i >= len(d.s) {
			return false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case close:
			d.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string whose escapes are the one-letter ones; a \u escape
// or bytes that are not UTF-8 are left to encoding/json (surrogates and
// replacement characters are its business).
func (d *argDecoder) str() (string, bool) {
	d.i++ // "
	start := d.i
	var b []byte // nil while the string needs no unescaping
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			var out string
			if b == nil {
				out = d.s[start:d.i]
			} else {
				out = string(b)
			}
			d.i++
			if !utf8.ValidString(out) {
				return "", false
			}
			return out, true
		case c < 0x20:
			return "", false
		case c == '\\':
			if d.i+1 >= len(d.s) {
				return "", false
			}
			if b == nil {
				b = append(make([]byte, 0, len(d.s)-start), d.s[start:d.i]...)
			}
			var r byte
			switch d.s[d.i+1] {
			case '"', '\\', '/':
				r = d.s[d.i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default:
				return "", false // \u, or not JSON
			}
			b = append(b, r)
			d.i += 2
		default:
			if b != nil {
				b = append(b, c)
			}
			d.i++
		}
	}
	return "", false
}

// number reads a number of JSON's grammar as a float64.
func (d *argDecoder) number() (any, bool) {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.i < len(d.s) && d.s[d.i] >= '1' && d.s[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	if err != nil {
		return nil, false // out of range: encoding/json says how
	}
	return f, true
}

// digits skips one or more digits.
func (d *argDecoder) digits() bool {
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}
