package aip

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
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

// FuzzAppendResults: results written without reflection decode to what
// they were, whatever their strings and payload hold; a payload that is
// not JSON is refused with the call it came from.
func FuzzAppendResults(f *testing.F) {
	f.Add("success", "", `{"text":"clicked <b>"}`, "files", "call-1")
	f.Add("failure", "quote \" and \\ and \u2028 and \x01", `[1,2, 3 ]`, "", "")
	f.Add("success", "", ``, "ns", "id")
	f.Fuzz(func(t *testing.T, status, errText, payload, namespace, callID string) {
		r := command.Result{Status: command.ResultStatus(status), Error: errText, Result: json.RawMessage(payload), Namespace: namespace, CallID: callID}
		got, err := AppendResults([]byte("x"), []command.Result{r, r})
		if payload != "" && !json.Valid([]byte(payload)) {
			if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
				t.Fatalf("a payload that is not JSON: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var back []command.Result
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		want, _ := json.Marshal([]command.Result{r, r})
		var wantBack []command.Result
		json.Unmarshal(want, &wantBack)
		for i := range back {
			if !sameResult(back[i], wantBack[i]) {
				t.Fatalf("result %d decodes to %+v, want %+v", i, back[i], wantBack[i])
			}
		}
	})
}

// sameResult compares results, their payloads by what they decode to
// (json.Marshal escapes <, > and & in them; an absent one reads as null).
func sameResult(a, b command.Result) bool {
	payload := func(r command.Result) string {
		var v any
		if json.Unmarshal(r.Result, &v) != nil {
			return "null"
		}
		p, _ := json.Marshal(v)
		return string(p)
	}
	return a.Status == b.Status && a.Error == b.Error && a.Namespace == b.Namespace && a.CallID == b.CallID && payload(a) == payload(b)
}

func TestAppendResultsNilAndEmpty(t *testing.T) {
	for _, c := range []struct {
		in   []command.Result
		want string
	}{{nil, "null"}, {[]command.Result{}, "[]"}} {
		if got, err := AppendResults(nil, c.in); err != nil || string(got) != c.want {
			t.Errorf("AppendResults(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
