// Package jsonw appends JSON strings and numbers exactly as encoding/json
// writes them, and checks JSON's grammar of numbers and string escapes.
// The AIP codec and the trajectory encoder write their JSON by hand,
// without reflection, and must stay byte for byte what json.Marshal
// gives; the AIP frame reader and AppendRaw check what they read: they
// share these pieces so that the rules live in one place.
package jsonw

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// HexDigits are the digits of \u escapes, in encoding/json's lower case.
const HexDigits = "0123456789abcdef"

// safe[html][c] says that the ASCII byte c stands for itself inside a
// JSON string, with HTML characters escaped (html) or not.
var safe = func() (t [2][utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[0][c] = c != '"' && c != '\\'
		t[1][c] = t[0][c] && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as json.Marshal writes a string: quotes,
// backslashes and control characters escaped, and <, > and &; invalid
// UTF-8 as \ufffd; U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte { return appendQuoted(b, s, 1) }

// AppendStringNoHTML is AppendString with <, > and & left as they are
// (an Encoder with SetEscapeHTML(false)).
func AppendStringNoHTML(b []byte, s string) []byte { return appendQuoted(b, s, 0) }

func appendQuoted(b []byte, s string, html int) []byte {
	plain := &safe[html]
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', HexDigits[c>>4], HexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', HexDigits[r&0xF])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f as json.Marshal writes a float64 (as ES6 would);
// ok is false for a NaN or an infinity, which JSON cannot hold.
func AppendFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-07 is written e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
