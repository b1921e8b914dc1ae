package shell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// Seconds is a length of time in seconds, as a call gives it. It decodes
// from a JSON number (120, 1.5) or from a string: a number of seconds
// ("120") or a number with a unit ("120s", "2m", "1m30s", "500ms",
// "2 minutes"). Models write all of these, the unit forms most often when
// a description shows durations with units.
type Seconds float64

// secondsHelp says what Seconds accepts, for errors.
const secondsHelp = `give seconds as a number (120) or as a string with a unit ("120s", "2m", "1m30s")`

// unitWords are the spelled-out units a string may use, as Go's duration
// syntax names them.
var unitWords = []struct{ word, unit string }{
	{"milliseconds", "ms"}, {"millisecond", "ms"}, {"msec", "ms"},
	{"seconds", "s"}, {"second", "s"}, {"secs", "s"}, {"sec", "s"},
	{"minutes", "m"}, {"minute", "m"}, {"mins", "m"}, {"min", "m"},
	{"hours", "h"}, {"hour", "h"}, {"hrs", "h"}, {"hr", "h"},
}

// UnmarshalJSON accepts a number or a string, as Seconds says.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = 0
		return nil
	}
	var n float64
	if err := json.Unmarshal(b, &n); err == nil {
		*s = Seconds(n)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("a length of time must be a number or a string, not %s: %s", b, secondsHelp)
	}
	v, err := parseSeconds(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

func parseSeconds(str string) (Seconds, error) {
	t := strings.ToLower(strings.TrimSpace(str))
	if t == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(t, 64); err == nil {
		return Seconds(n), nil
	}
	// "2 minutes" and "2min" are "2m"; "1m30s" stays as it is.
	for _, w := range unitWords {
		if strings.HasSuffix(t, w.word) {
			t = strings.TrimSuffix(t, w.word) + w.unit
			break
		}
	}
	t = strings.ReplaceAll(t, " ", "")
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a length of time: %s", str, secondsHelp)
	}
	return Seconds(d.Seconds()), nil
}

// JSONSchema offers both forms: a number of seconds, or a string with a
// unit.
func (Seconds) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "number", Minimum: json.Number("0")},
		{Type: "string"},
	}}
}

// secs writes d in seconds, the unit a call gives.
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }

// inMinutes is ", which is N minutes" for a duration of whole minutes
// (two or more), else empty.
func inMinutes(d time.Duration) string {
	if d >= 2*time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf(", which is %d minutes", d/time.Minute)
	}
	return ""
}
