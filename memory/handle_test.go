package memory

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// keptWithHandle keeps values until one gets a handle that ok accepts.
func keptWithHandle(t *testing.T, a *Artifacts, ok func(string) bool) (value, handle string) {
	t.Helper()
	for i := 0; i < 100_000; i++ {
		v := fmt.Sprintf("value %d\n", i)
		if h := a.Keep(v); ok(h) {
			return v, h
		}
	}
	t.Fatal("no value found")
	return "", ""
}

func allDigits(h string) bool { return strings.Trim(h, "0123456789") == "" }

// A handle made of digits (one in about 280) is read whichever way a
// model sends it: as the string, as a JSON number (which loses its
// leading zeros), in capitals or after the word "artifact". The
// arguments are decoded as the agent decodes them.
func TestReadTakesHandlesAsModelsWriteThem(t *testing.T) {
	a := &Artifacts{Threshold: 1000}
	digits, dh := keptWithHandle(t, a, allDigits)
	zero, zh := keptWithHandle(t, a, func(h string) bool { return allDigits(h) && h[0] == '0' })
	hexv, hh := keptWithHandle(t, a, func(h string) bool { return strings.ContainsAny(h, "abcdef") })
	n, _ := strconv.ParseInt(zh, 10, 64)
	cases := []struct {
		args string
		want string
	}{
		{`{"handle": "` + dh + `"}`, digits},
		{`{"handle": ` + dh + `}`, digits},
		// JSON has no number with a leading zero: a model drops it.
		{`{"handle": ` + strconv.FormatInt(n, 10) + `}`, zero},
		{`{"handle": ` + strconv.FormatFloat(float64(n), 'e', -1, 64) + `}`, zero},
		{`{"handle": "artifact ` + strings.ToUpper(hh) + `"}`, hexv},
		{`{"handle": "artifact:` + hh + `"}`, hexv},
		{`{"handle": " ` + hh + ` ", "offset": 2, "length": 3}`, hexv[2:5]},
	}
	for _, c := range cases {
		var args ReadArgs
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		got, err := a.Read(args)
		if err != nil || !strings.HasSuffix(got, "\n"+c.want) {
			t.Errorf("%s: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	var args ReadArgs
	if err := json.Unmarshal([]byte(`{"handle": true}`), &args); err == nil || !strings.Contains(err.Error(), "hex digits") {
		t.Errorf("a boolean handle: %v", err)
	}
	if _, err := a.Read(ReadArgs{Handle: "42"}); err == nil || !strings.Contains(err.Error(), `no artifact "42"`) {
		t.Errorf("an unknown handle: %v", err)
	}
}
