package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func marshal(t *testing.T, v any, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FuzzAppendString: both escapers write what encoding/json writes, with
// and without HTML escaping.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `<a href="x">&amp;</a>`, "\x00\x01\b\f\n\r\t\x1f\x7f", "\u2028\u2029", "\xed\xa0\x80 bad", "日本 🚀", `a\b/c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendString(nil, s), marshal(t, s, true); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal %s", s, got, want)
		}
		if got, want := AppendStringNoHTML(nil, s), marshal(t, s, false); !bytes.Equal(got, want) {
			t.Errorf("AppendStringNoHTML(%q) = %s, an Encoder without HTML escaping %s", s, got, want)
		}
	})
}

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5e-300, 5e-324, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, math.MaxFloat64, 1.0 / 3} {
		got, ok := AppendFloat(nil, f)
		if want := marshal(t, f, true); !ok || !bytes.Equal(got, want) {
			t.Errorf("AppendFloat(%v) = %s, %v; json.Marshal %s", f, got, ok, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, ok := AppendFloat(nil, f); ok {
			t.Errorf("AppendFloat(%v) is ok; JSON cannot hold it", f)
		}
	}
}

func TestAppendValue(t *testing.T) {
	type point struct{ X, Y int }
	for _, v := range []any{
		nil, "s<>&", true, 1.5e-7, 42, int64(-7), int32(3), uint64(1 << 63), []string(nil), []string{"a"},
		map[string]string{"b": "2", "a": "1"}, map[string]any(nil), []any(nil),
		map[string]any{"k": []any{1.0, "x", map[string]any{"z": nil, "a": false}}, "raw": json.RawMessage(` {"a" : 1} `), "p": point{1, 2}},
	} {
		got, ok := AppendValue(nil, v)
		if want := marshal(t, v, true); !ok || !bytes.Equal(got, want) {
			t.Errorf("AppendValue(%#v) = %s, %v; json.Marshal %s", v, got, ok, want)
		}
	}
	cycle := map[string]any{}
	cycle["self"] = cycle
	for _, v := range []any{math.NaN(), map[string]any{"f": math.Inf(1)}, map[string]any{"c": make(chan int)}, cycle} {
		if _, ok := AppendValue(nil, v); ok {
			t.Errorf("AppendValue(%T) is ok; json.Marshal refuses it", v)
		}
	}
}

// FuzzGrammar holds NumberEnd and EscapeLen to encoding/json: a text is a
// JSON number exactly when NumberEnd reads all of it, and a backslash
// followed by plain characters is valid in a string exactly when
// EscapeLen reads an escape at its start.
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{"0", "-0", "12", "012", "1.", "1.5", "-.5", "1e5", "1E+5", "1e", "2.5e-07", "-", "", "x", `\n`, `\u00e9`, `\u00g9`, `\x`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if len(b) > 0 && (b[0] == '-' || isDigit(b[0])) && len(bytes.TrimSpace(b)) == len(b) {
			if got, want := NumberEnd(b, 0) == len(b), json.Valid(b); got != want {
				t.Errorf("NumberEnd(%q) = %d: reads all %v, json.Valid %v", s, NumberEnd(b, 0), got, want)
			}
		}
		if len(b) > 0 && b[0] == '\\' && !bytes.ContainsAny(b[1:], "\\\"") && !bytes.ContainsFunc(b, func(r rune) bool { return r < 0x20 }) {
			quoted := append(append([]byte{'"'}, b...), '"')
			if got, want := EscapeLen(b, 0) > 0, json.Valid(quoted); got != want {
				t.Errorf("EscapeLen(%q) = %d, json.Valid(%s) = %v", s, EscapeLen(b, 0), quoted, want)
			}
		}
	})
}
