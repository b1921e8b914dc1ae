package aip

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// scanner is a small strict JSON reader for the frame envelope. It exists
// for speed: encoding/json scans a frame twice (validation, then decoding)
// and matches keys by folding case, which made decoding the larger part of
// a command's round trip. Nested free-form values (parameters, metadata)
// still go through encoding/json, on their own bytes only.
type scanner struct {
	b []byte
	i int
	// keyStart and keyEnd delimit the last object key's token.
	keyStart, keyEnd int
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

func (s *scanner) errorf(format string, args ...any) error {
	return badFrame("not valid JSON at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek is the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.errorf("unexpected end, want %q", c)
		}
		return s.errorf("unexpected %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// object calls field for each key of an object; field must consume the
// value (with one of the value readers).
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.errorf("want a key")
		}
		s.keyStart = s.i
		key, err := s.rawString()
		if err != nil {
			return err
		}
		s.keyEnd = s.i
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want , or } after a value")
		}
	}
}

// array calls elem for each element of an array (or nothing for null).
func (s *scanner) array(name string, elem func() error) (null bool, err error) {
	if s.null() {
		return true, nil
	}
	if s.peek() != '[' {
		return false, badFrame("%s must be a list or null", name)
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return false, nil
	}
	for {
		if err := elem(); err != nil {
			return false, err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return false, nil
		default:
			return false, s.errorf("want , or ] in %s", name)
		}
	}
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string or null ("") for the named field.
func (s *scanner) str(name string) (string, error) {
	if s.null() {
		return "", nil
	}
	if s.peek() != '"' {
		return "", badFrame("%s must be a string or null", name)
	}
	start := s.i
	raw, err := s.rawString()
	if err != nil {
		return "", err
	}
	if raw != nil {
		return string(raw), nil
	}
	// Escapes or non-ASCII needing repair: let encoding/json decode it.
	var v string
	if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
		return "", badFrame("%s: %v", name, err)
	}
	return v, nil
}

// rawString consumes a string token. It returns its contents when they
// need no decoding (no escapes, valid UTF-8), else nil (the token is
// valid and consumed; decode it from its bytes).
func (s *scanner) rawString() ([]byte, error) {
	s.i++ // the opening quote
	start, plain := s.i, true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			if plain && !utf8.Valid(out) {
				return nil, nil
			}
			if !plain {
				return nil, nil
			}
			return out, nil
		case c == '\\':
			plain = false
			if s.i+1 >= len(s.b) {
				return nil, s.errorf("unterminated escape")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					return nil, s.errorf(`bad \u escape`)
				}
				s.i += 6
			default:
				return nil, s.errorf("bad escape \\%c", s.b[s.i+1])
			}
		case c < 0x20:
			return nil, s.errorf("control character in a string")
		default:
			s.i++
		}
	}
	return nil, s.errorf("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// value consumes any JSON value, checking its syntax, and returns its
// bytes.
func (s *scanner) value(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, s.errorf("nested too deeply")
	}
	c := s.peek()
	start := s.i
	switch {
	case c == '"':
		if _, err := s.rawString(); err != nil {
			return nil, err
		}
	case c == '{':
		if err := s.object(func([]byte) error { _, err := s.value(depth + 1); return err }); err != nil {
			return nil, err
		}
	case c == '[':
		if _, err := s.array("a list", func() error { _, err := s.value(depth + 1); return err }); err != nil {
			return nil, err
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return s.b[start:s.i], nil
			}
		}
		return nil, s.errorf("bad literal")
	case c == '-' || '0' <= c && c <= '9':
		if err := s.number(); err != nil {
			return nil, err
		}
	default:
		return nil, s.errorf("want a value")
	}
	return s.b[start:s.i], nil
}

// number consumes a number, checking JSON's grammar.
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return s.errorf("bad number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.errorf("bad number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.errorf("bad number")
		}
	}
	return nil
}

// into decodes the next value into v with encoding/json (nested,
// free-form values).
func (s *scanner) into(name string, v any) error {
	raw, err := s.value(1)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badFrame("%s: %v", name, err)
	}
	return nil
}

// end checks nothing but space follows the frame.
func (s *scanner) end() error {
	if s.peek() != 0 {
		return s.errorf("data after the frame")
	}
	return nil
}

// anyValue reads a value as encoding/json would into an `any`: objects as
// map[string]any, arrays as []any, numbers as float64.
func (s *scanner) anyValue(depth int) (any, error) {
	if depth > maxDepth {
		return nil, s.errorf("nested too deeply")
	}
	switch c := s.peek(); {
	case c == '"':
		return s.str("a string")
	case c == '{':
		m := map[string]any{}
		err := s.object(func(key []byte) error {
			k := string(key)
			if key == nil { // escaped key: decode it properly
				if err := json.Unmarshal(s.lastKey(), &k); err != nil {
					return badFrame("%v", err)
				}
			}
			v, err := s.anyValue(depth + 1)
			m[k] = v
			return err
		})
		return m, err
	case c == '[':
		a := []any{}
		_, err := s.array("a list", func() error {
			v, err := s.anyValue(depth + 1)
			a = append(a, v)
			return err
		})
		return a, err
	case c == '-' || '0' <= c && c <= '9':
		start := s.i
		if err := s.number(); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
		if err != nil {
			return nil, badFrame("number %s does not fit a float64", s.b[start:s.i])
		}
		return f, nil
	}
	raw, err := s.value(depth)
	if err != nil {
		return nil, err
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return nil, nil
}

// lastKey is the raw token of the key just read by object (quotes
// included), for keys that need decoding.
func (s *scanner) lastKey() []byte {
	// object leaves s.i at the value; the key token ends before the colon.
	end := s.keyEnd
	return s.b[s.keyStart:end]
}

// params reads a command's parameters: an object or null.
func (s *scanner) params() (map[string]any, error) {
	if s.null() {
		return nil, nil
	}
	if s.peek() != '{' {
		return nil, badFrame("parameters must be an object or null")
	}
	v, err := s.anyValue(1)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// lifecycle reads Saucer's lifecycle extension.
func (s *scanner) lifecycle() (*Lifecycle, error) {
	if s.null() {
		return nil, nil
	}
	if s.peek() != '{' {
		return nil, badFrame("lifecycle must be an object or null")
	}
	l := &Lifecycle{}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "created_at", "expires_at":
			name := string(key)
			v, err := s.str(name)
			if err != nil || v == "" {
				return err
			}
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return badFrame("lifecycle.%s: %v", name, err)
			}
			if name == "created_at" {
				l.CreatedAt = t
			} else {
				l.ExpiresAt = t
			}
			return nil
		case "queued_by":
			v, err := s.str("queued_by")
			l.QueuedBy = v
			return err
		}
		_, err := s.value(1)
		return err
	})
	return l, err
}
