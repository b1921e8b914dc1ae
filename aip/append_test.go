package aip

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzAppendJSON: parameters and metadata written without reflection are
// byte for byte what json.Marshal writes, for any decoded JSON object and
// for values only Go code makes (ints, NaN, cycles), which fall back to it.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":"12","button":"left"}`, `{"b":1,"a":[1,2.5,-0,1e21,1e-7,123456789012345678901234,0.000001],"c":null}`,
		`{"html":"<a href=\"x\">&amp;</a>","ctl":"\u0000\u0001\b\f\n\r\t\u001f\u007f","sep":"\u2028\u2029","bad":"\ud800"}`,
		`{"ü":"日本 🚀","":{"z":{"y":[[],{},[null,true,false]]}},"Z":"a\\b/c"}`, `{"n":-1.5e-300,"m":5e-324,"x":1.7976931348623157e308}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m map[string]any
		if json.Unmarshal(in, &m) != nil {
			return
		}
		checkAppendJSON(t, m)
	})
}

func checkAppendJSON(t *testing.T, m map[string]any) {
	t.Helper()
	want, wantErr := json.Marshal(m)
	got, err := appendJSON([]byte("prefix"), m, m == nil)
	if wantErr != nil && err == nil || wantErr == nil && (err != nil || !bytes.Equal(got, append([]byte("prefix"), want...))) {
		t.Fatalf("appendJSON wrote %s (%v); json.Marshal %s (%v)", got, err, want, wantErr)
	}
}

func TestAppendJSONFallsBack(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	deep := map[string]any{}
	for range 200 {
		deep = map[string]any{"d": []any{deep}}
	}
	for _, m := range []map[string]any{nil, {"int": 3, "i64": int64(-4), "u8": uint8(5)}, {"nan": math.NaN()}, {"inf": []any{math.Inf(-1)}},
		{"strs": []string{"a", "<b>"}, "nilmap": map[string]any(nil), "nilslice": []any(nil)}, {"f32": float32(0.1)},
		{"raw": json.RawMessage(`{"x":1}`)}, deep, cycle} {
		checkAppendJSON(t, m)
	}
}

// TestParseUTC: the fast reading of lifecycle times gives time.Parse's
// value, or leaves the string to it.
func TestParseUTC(t *testing.T) {
	for _, s := range []string{"2025-01-01T00:00:00Z", "2025-06-30T23:59:59.123456789Z", "2024-02-29T12:00:00.5Z", "2023-02-29T12:00:00Z",
		"2025-04-31T00:00:00Z", "2025-13-01T00:00:00Z", "2025-00-10T00:00:00Z", "2025-01-01T24:00:00Z", "2025-01-01T00:60:00Z",
		"2025-01-01T00:00:60Z", "2025-01-01T00:00:00.Z", "2025-01-01T00:00:00.1234567891Z", "2025-01-01T00:00:00,5Z",
		"2025-01-01T00:00:00+02:00", "2025-01-01t00:00:00z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
		"2025-1-01T00:00:00Z", "+025-01-01T00:00:00Z", "2025-01-01T00:00:0xZ", "2025-01-01T00:00:00.12a4Z"} {
		want, wantErr := time.Parse(time.RFC3339Nano, s)
		got, ok := parseUTC([]byte(s))
		if !ok && wantErr == nil && want.Location() == time.UTC && strings.HasSuffix(s, "Z") && !strings.Contains(s, ",") && len(s) <= 30 {
			t.Errorf("%s: the form Saucer writes took the slow way", s)
		}
		if ok && (wantErr != nil || got != want) {
			t.Errorf("%s: parseUTC gave %v; time.Parse %v (%v)", s, got, want, wantErr)
		}
		frame := `{"type":"command","status":"continue","lifecycle":{"created_at":"` + s + `"}}`
		m, err := DecodeServer([]byte(frame))
		if (err != nil) != (wantErr != nil) || err == nil && m.Lifecycle.CreatedAt != want {
			t.Errorf("%s: decoded %v (%v); time.Parse %v (%v)", s, m, err, want, wantErr)
		}
	}
}

// TestTimestamp: the hand-made timestamps are what time.Format writes.
func TestTimestamp(t *testing.T) {
	east := time.FixedZone("east", 5*3600+1800)
	for _, tm := range []time.Time{time.Now(), {}, time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2025, 1, 1, 3, 4, 5, 600, east), time.Date(9999, 12, 31, 23, 59, 59, 1000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if got, want := Timestamp(tm), tm.UTC().Format("2006-01-02T15:04:05.000000+00:00"); got != want {
			t.Errorf("Timestamp(%v) = %s, want %s", tm, got, want)
		}
	}
}
