package prompts

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// argCases are arguments as models write them and the corner cases of
// JSON that decodeArgs must either decode as encoding/json does or leave
// to it.
var argCases = []string{
	`{"path":"notes/hello.txt","content":"Hello from Saucer\n","create_dirs":true}`,
	`{"command":"ls -l notes"}`,
	` {"app": "files", "subtask": "Write 'x' to a.txt", "n": 3, "f": -1.5e3, "z": -0, "none": null, "list": [1, "two", [false], {}], "o": {"a": {"b": []}}} `,
	`{"q":"quote \" slash \\ solidus \/ tab \t cr \r ff \f bs \b"}`,
	`{"a":1,"a":2}`,
	`{"big":12345678901234567890,"small":1E-300,"e":1e+2}`,
	`{"utf8":"héllo → 世界"}`,
	`"{\"inner\":1}"`,
	`[]`, `{}`, `null`, `true`, `false`, `0`, `"x"`,
	// Left to encoding/json, or not JSON at all:
	`{"u":"\u00e9\ud83d\ude00"}`, "{\"bad\":\"\xff\"}", `{"huge":1e400}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":-}`, `[1,]`, `{"a":1,}`, `{a:1}`, `{'a':1}`,
	`{"a":tru}`, `{"a":1}x`, `{"a":"raw` + "\t" + `tab"}`, `{"a":"\x"}`, `{"a":"cut`, `{"a":1`, `[1 2]`, `{"a" 1}`, ``, `  `,
	strings.Repeat("[", 150) + strings.Repeat("]", 150),
}

// TestDecodeArgsAsEncodingJSON: whatever decodeArgs decodes, encoding/json
// decodes to the same; what it refuses goes to encoding/json; and the
// arguments models write (the first cases) take the fast way.
func TestDecodeArgsAsEncodingJSON(t *testing.T) {
	for i, s := range argCases {
		got, ok := decodeArgs(s)
		var want any
		err := json.Unmarshal([]byte(s), &want)
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("%q: decoded %#v, encoding/json %#v (%v)", s, got, want, err)
		}
		if i < 15 && !ok {
			t.Errorf("%q: left to encoding/json, want decoded", s)
		}
	}
}

func FuzzDecodeArgs(f *testing.F) {
	for _, s := range argCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := decodeArgs(s)
		if !ok {
			return
		}
		var want any
		if err := json.Unmarshal([]byte(s), &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: decoded %#v, encoding/json %#v (%v)", s, got, want, err)
		}
	})
}
