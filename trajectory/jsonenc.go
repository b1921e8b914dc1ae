package trajectory

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/saucerhq/saucer/internal/jsonw"
)

// The functions here append JSON exactly as encoding/json's Marshal writes
// the same values (HTML characters, U+2028 and U+2029 escaped, invalid
// UTF-8 as \ufffd, floats in ES6 form, map keys sorted, raw values
// validated and compacted), without reflection. TestEncoderMatchesMarshal
// and FuzzEncoderMatchesMarshal hold them to it.

// errUnsupported stands for a value encoding/json refuses (NaN, a time
// outside years 0-9999, a raw value that is not JSON) or that the encoder
// leaves to it (values nested hundreds deep): the writer then encodes the
// event with encoding/json, which says what is wrong or writes it.
var errUnsupported = errors.New("trajectory: a value JSON cannot hold")

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) ([]byte, error) {
	b, ok := jsonw.AppendFloat(b, f)
	if !ok {
		return b, errUnsupported
	}
	return b, nil
}

// appendTime appends t as its MarshalJSON writes it.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if t.Location() == time.UTC {
		y, mo, d := t.Date()
		if y >= 0 && y <= 9999 {
			h, mi, s := t.Clock()
			b = append(b, '"')
			b = append4(b, y)
			b = append(b, '-')
			b = append2(b, int(mo))
			b = append(b, '-')
			b = append2(b, d)
			b = append(b, 'T')
			b = append2(b, h)
			b = append(b, ':')
			b = append2(b, mi)
			b = append(b, ':')
			b = append2(b, s)
			if ns := t.Nanosecond(); ns != 0 {
				// Nine digits, trailing zeros dropped.
				var frac [10]byte
				frac[0] = '.'
				for i := 9; i >= 1; i-- {
					frac[i] = byte('0' + ns%10)
					ns /= 10
				}
				n := 10
				for frac[n-1] == '0' {
					n--
				}
				b = append(b, frac[:n]...)
			}
			return append(b, 'Z', '"'), nil
		}
	}
	m, err := t.MarshalJSON()
	if err != nil {
		return b, errUnsupported
	}
	return append(b, m...), nil
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

func append4(b []byte, n int) []byte {
	return append(b, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

// maxDepth is how deeply encoding/json lets arrays and objects nest. It
// counts the event's own nesting too where a MarshalJSON's output is
// checked again (commands, results), so the encoder leaves values nested
// nearly that deep to it.
const (
	maxDepth = 10000
	maxRaw   = maxDepth - 100
)

// appendRaw appends the raw JSON value v compacted, with HTML characters
// and U+2028/U+2029 in its strings escaped, as encoding/json writes a
// json.RawMessage; v must be exactly one JSON value (whitespace around it
// allowed). A nil v is null.
func appendRaw(b []byte, v []byte) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	r := rawCompactor{src: v, out: b}
	r.space()
	if !r.value(0) {
		return b, errUnsupported
	}
	r.space()
	if r.i != len(v) {
		return b, errUnsupported
	}
	return r.out, nil
}

// rawCompactor reads src from i, appending what it read to out.
type rawCompactor struct {
	src []byte
	i   int
	out []byte
}

func (r *rawCompactor) space() {
	for r.i < len(r.src) {
		switch r.src[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// value reads one value at the given nesting depth.
func (r *rawCompactor) value(depth int) bool {
	if r.i >= len(r.src) {
		return false
	}
	switch c := r.src[r.i]; c {
	case '{', '[':
		if depth+1 > maxRaw {
			return false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		r.out = append(r.out, c)
		r.i++
		r.space()
		if r.i < len(r.src) && r.src[r.i] == closing {
			r.out = append(r.out, closing)
			r.i++
			return true
		}
		for {
			if c == '{' {
				if r.i >= len(r.src) || r.src[r.i] != '"' || !r.string() {
					return false
				}
				r.space()
				if r.i >= len(r.src) || r.src[r.i] != ':' {
					return false
				}
				r.out = append(r.out, ':')
				r.i++
				r.space()
			}
			if !r.value(depth + 1) {
				return false
			}
			r.space()
			if r.i >= len(r.src) {
				return false
			}
			switch r.src[r.i] {
			case ',':
				r.out = append(r.out, ',')
				r.i++
				r.space()
			case closing:
				r.out = append(r.out, closing)
				r.i++
				return true
			default:
				return false
			}
		}
	case '"':
		return r.string()
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.literal("null")
	default:
		return r.number()
	}
}

func (r *rawCompactor) literal(word string) bool {
	if len(r.src)-r.i < len(word) || string(r.src[r.i:r.i+len(word)]) != word {
		return false
	}
	r.out = append(r.out, word...)
	r.i += len(word)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *rawCompactor) number() bool {
	s, i := r.src, r.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for ; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for ; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	r.out = append(r.out, s[r.i:i]...)
	r.i = i
	return true
}

// string reads a string at src[i] == '"', escaping what encoding/json's
// compaction escapes and keeping everything else as it is (invalid UTF-8
// included).
func (r *rawCompactor) string() bool {
	s := r.src
	start := r.i
	for i := r.i + 1; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			r.out = append(r.out, s[start:i+1]...)
			r.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return false
				}
				i += 6
			default:
				return false
			}
		case c == '<' || c == '>' || c == '&':
			r.out = append(r.out, s[start:i]...)
			r.out = append(r.out, '\\', 'u', '0', '0', jsonw.HexDigits[c>>4], jsonw.HexDigits[c&0xF])
			i++
			start = i
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			r.out = append(r.out, s[start:i]...)
			r.out = append(r.out, '\\', 'u', '2', '0', '2', jsonw.HexDigits[s[i+2]&0xF])
			i += 3
			start = i
		default:
			i++
		}
	}
	return false
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// appendAny appends a value of a map[string]any or []any as encoding/json
// writes it: the types JSON decoding and Saucer's tools make are written
// here, any other through encoding/json.
func appendAny(b []byte, v any) ([]byte, error) { return appendAnyAt(b, v, 0) }

// deepAny is the nesting from which appendAnyAt leaves the event to
// encoding/json, which finds cycles.
const deepAny = 500

func appendAnyAt(b []byte, v any, depth int) ([]byte, error) {
	if depth > deepAny {
		return b, errUnsupported
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return jsonw.AppendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case map[string]any:
		return appendMapAt(b, x, depth)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendAnyAt(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []string:
		return appendStrings(b, x), nil
	case map[string]string:
		return appendStringMap(b, x), nil
	case json.RawMessage:
		return appendRaw(b, x)
	default:
		return appendMarshal(b, x)
	}
}

// appendMarshal appends what json.Marshal writes for v.
func appendMarshal(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return b, errUnsupported
	}
	return append(b, m...), nil
}

// sortedKeys are m's keys in the order encoding/json writes them.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMap(b []byte, m map[string]any) ([]byte, error) { return appendMapAt(b, m, 0) }

func appendMapAt(b []byte, m map[string]any, depth int) ([]byte, error) {
	if depth > deepAny {
		return b, errUnsupported
	}
	if m == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, k), ':')
		var err error
		if b, err = appendAnyAt(b, m[k], depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(append(jsonw.AppendString(b, k), ':'), m[k])
	}
	return append(b, '}')
}

func appendFloatMap(b []byte, m map[string]float64) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendFloat(append(jsonw.AppendString(b, k), ':'), m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendStrings(b []byte, s []string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(b, x)
	}
	return append(b, ']')
}
