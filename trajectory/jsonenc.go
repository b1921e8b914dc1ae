package trajectory

import (
	"errors"
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

// supported is what a jsonw function appended, or errUnsupported where it
// could not.
func supported(b []byte, ok bool) ([]byte, error) {
	if !ok {
		return b, errUnsupported
	}
	return b, nil
}

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) ([]byte, error) { return supported(jsonw.AppendFloat(b, f)) }

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

// appendRaw appends the raw JSON value v as encoding/json writes a
// json.RawMessage (see jsonw.AppendRaw).
func appendRaw(b []byte, v []byte) ([]byte, error) { return supported(jsonw.AppendRaw(b, v)) }

// appendMap appends m as json.Marshal writes it (see jsonw.AppendValue).
func appendMap(b []byte, m map[string]any) ([]byte, error) { return supported(jsonw.AppendValue(b, m)) }

func appendFloatMap(b []byte, m map[string]float64) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	for i, k := range jsonw.SortedKeys(m) {
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
