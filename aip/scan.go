package aip

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/saucerhq/saucer/internal/jsonw"
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
		if v, ok := known(raw); ok {
			return v, nil
		}
		return string(raw), nil
	}
	// Escapes or non-ASCII needing repair: let encoding/json decode it.
	var v string
	if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
		return "", badFrame("%s: %v", name, err)
	}
	return v, nil
}

// plainByte marks the bytes a string holds as they are: printable ASCII
// other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString consumes a string token. It returns its contents when they
// need no decoding (no escapes, valid UTF-8), else nil (the token is
// valid and consumed; decode it from its bytes).
func (s *scanner) rawString() ([]byte, error) {
	s.i++ // the opening quote
	start, plain := s.i, true
	// Ids, names, enum values and timestamps are printable ASCII: skip
	// such bytes with one table look-up each; anything else takes the
	// careful loop below.
	i, b := s.i, s.b // locals, which stay in registers
	for i < len(b) && plainByte[b[i]] {
		i++
	}
	s.i = i
	if i < len(b) && b[i] == '"' {
		s.i++
		return b[start:i], nil
	}
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
			n := jsonw.EscapeLen(s.b, s.i)
			switch {
			case n > 0:
				s.i += n
			case s.i+1 >= len(s.b):
				return nil, s.errorf("unterminated escape")
			case s.b[s.i+1] == 'u':
				return nil, s.errorf(`bad \u escape`)
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
	end := jsonw.NumberEnd(s.b, s.i)
	if end < 0 {
		return s.errorf("bad number")
	}
	s.i = end
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
		case "created_at":
			return s.time("created_at", &l.CreatedAt)
		case "expires_at":
			return s.time("expires_at", &l.ExpiresAt)
		case "queued_by":
			v, err := s.str("queued_by")
			l.QueuedBy = v
			return err
		case "detach_after_ms":
			v, err := s.anyValue(1)
			switch n := v.(type) {
			case nil:
			case float64:
				if n < 0 || n > math.MaxInt64/int64Ms {
					return badFrame("lifecycle.detach_after_ms %v is out of range", n)
				}
				l.DetachAfter = time.Duration(n * float64(time.Millisecond))
			default:
				return badFrame("lifecycle.detach_after_ms must be a number or null")
			}
			return err
		case "progress":
			v, err := s.anyValue(1)
			switch b := v.(type) {
			case nil:
			case bool:
				l.Progress = b
			default:
				return badFrame("lifecycle.progress must be true, false or null")
			}
			return err
		}
		_, err := s.value(1)
		return err
	})
	return l, err
}

// int64Ms is a millisecond in nanoseconds, for the range check of a
// duration in milliseconds.
const int64Ms = float64(time.Millisecond)

// time reads a lifecycle field, an RFC 3339 time or null (the zero
// time), into t.
func (s *scanner) time(name string, t *time.Time) error {
	if s.null() {
		return nil
	}
	if s.peek() != '"' {
		return badFrame("%s must be a string or null", name)
	}
	start := s.i
	raw, err := s.rawString()
	if err != nil {
		return err
	}
	if raw != nil {
		if v, ok := parseUTC(raw); ok {
			*t = v
			return nil
		}
	}
	s.i = start
	v, err := s.str(name)
	if err != nil || v == "" {
		return err
	}
	if *t, err = time.Parse(time.RFC3339Nano, v); err != nil {
		return badFrame("lifecycle.%s: %v", name, err)
	}
	return nil
}

// parseUTC reads the times Saucer writes, YYYY-MM-DDTHH:MM:SS[.F]Z with
// up to nine digits of fraction, without the string that time.Parse
// needs. Anything else (offsets, leap seconds, out-of-range fields) is
// left to time.Parse, which gives the same value or says what is wrong.
func parseUTC(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(b[0:4]), num(b[5:7]), num(b[8:10])
	hour, minute, sec := num(b[11:13]), num(b[14:16]), num(b[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(time.Month(month), year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		if nsec = num(frac[1:]); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// known returns the enum values frames repeat (types, statuses, client
// and tool types) as constants, so that decoding them allocates nothing.
func known(b []byte) (string, bool) {
	switch string(b) {
	case "register":
		return "register", true
	case "heartbeat":
		return "heartbeat", true
	case "task":
		return "task", true
	case "command":
		return "command", true
	case "command_results":
		return "command_results", true
	case "task_end":
		return "task_end", true
	case "error":
		return "error", true
	case "device_info_request":
		return "device_info_request", true
	case "device_info_response":
		return "device_info_response", true
	case "continue":
		return "continue", true
	case "completed":
		return "completed", true
	case "failed":
		return "failed", true
	case "ok":
		return "ok", true
	case "device":
		return "device", true
	case "constellation":
		return "constellation", true
	case "action":
		return "action", true
	case "data_collection":
		return "data_collection", true
	case "success":
		return "success", true
	case "failure":
		return "failure", true
	case "skipped":
		return "skipped", true
	case "none":
		return "none", true
	}
	return "", false
}
