package jsonw

import (
	"encoding/json"
	"slices"
	"strconv"
)

// maxValueDepth bounds AppendValue's nesting. Deeper values (a cycle, say)
// are left to the caller's encoding/json, which finds cycles.
const maxValueDepth = 500

// AppendValue appends v as json.Marshal writes it. The types a decoded
// JSON value has, and the ints, []string and map[string]string that
// Saucer's tools put into parameters, are written without reflection; any
// other value through json.Marshal. ok is false where json.Marshal fails
// (a NaN, an unsupported type) and for a value nested more than 500 deep:
// the caller then marshals the whole value, which says what is wrong.
func AppendValue(b []byte, v any) (_ []byte, ok bool) { return appendValue(b, v, 0) }

func appendValue(b []byte, v any, depth int) (_ []byte, ok bool) {
	if depth > maxValueDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return AppendString(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case float64:
		return AppendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		// Parameters have a handful of keys: sort them on the stack.
		var small [8]string
		b = append(b, '{')
		for i, k := range sortedKeys(small[:0], x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendString(b, k), ':')
			if b, ok = appendValue(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendValue(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case []string:
		return AppendStrings(b, x), true
	case map[string]string:
		return AppendStringMap(b, x), true
	case json.RawMessage:
		return AppendRaw(b, x)
	default:
		j, err := json.Marshal(x)
		if err != nil {
			return b, false
		}
		return append(b, j...), true
	}
}

// AppendStrings appends s as json.Marshal writes a []string.
func AppendStrings(b []byte, s []string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, x)
	}
	return append(b, ']')
}

// AppendStringMap appends m as json.Marshal writes a map[string]string.
func AppendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, k := range SortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(append(AppendString(b, k), ':'), m[k])
	}
	return append(b, '}')
}

// SortedKeys are m's keys in the order json.Marshal writes them.
func SortedKeys[V any](m map[string]V) []string { return sortedKeys(make([]string, 0, len(m)), m) }

// sortedKeys appends m's keys to keys and sorts them.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
