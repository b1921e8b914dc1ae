package jsonw

// maxDepth is how deeply encoding/json lets arrays and objects nest. It
// counts the nesting around a raw value too where a MarshalJSON's output
// is checked again (a trajectory's commands and results), so AppendRaw
// leaves values nested nearly that deep to encoding/json (maxRaw).
const (
	maxDepth = 10000
	maxRaw   = maxDepth - 100
)

// AppendRaw appends the raw JSON value v compacted, with HTML characters
// and U+2028/U+2029 in its strings escaped, as encoding/json writes a
// json.RawMessage; v must be exactly one JSON value (whitespace around it
// allowed). A nil v is null. ok is false for anything else, and for a
// value nested more than maxRaw deep: the caller's encoding/json then says
// what is wrong.
func AppendRaw(b []byte, v []byte) (_ []byte, ok bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	r := rawCompactor{src: v, out: b}
	r.space()
	if !r.value(0) {
		return b, false
	}
	r.space()
	if r.i != len(v) {
		return b, false
	}
	return r.out, true
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

// number reads a number (see NumberEnd).
func (r *rawCompactor) number() bool {
	end := NumberEnd(r.src, r.i)
	if end < 0 {
		return false
	}
	r.out = append(r.out, r.src[r.i:end]...)
	r.i = end
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
			n := EscapeLen(s, i)
			if n == 0 {
				return false
			}
			i += n
		case c == '<' || c == '>' || c == '&':
			r.out = append(r.out, s[start:i]...)
			r.out = append(r.out, '\\', 'u', '0', '0', HexDigits[c>>4], HexDigits[c&0xF])
			i++
			start = i
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			r.out = append(r.out, s[start:i]...)
			r.out = append(r.out, '\\', 'u', '2', '0', '2', HexDigits[s[i+2]&0xF])
			i += 3
			start = i
		default:
			i++
		}
	}
	return false
}
