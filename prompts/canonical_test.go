package prompts

import (
	"bytes"
	"encoding/json"
	"testing"
)

var canonicalCases = []string{
	``, `{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+10`, `-12.50E-3`, `"x"`, `""`,
	`{"b":1,"a":2}`, ` { "b" : [ 1 , 2 ] , "a" : { "d" : null , "c" : "x" } } `,
	`{"a":1,"a":2}`, `{"":1,"a":{}}`, `{"a\nb":1,"a":2}`, `{"z":"\u00e9","y":"\/","x":"é","w":"\u2028"}`,
	`{"s":"tab\there \"quoted\" back\\slash \b\f\r\n"}`, `{"html":"<a href='x'>&amp;</a>"}`, "{\"bad\":\"\xff\"}",
	"{\"ctl\":\"a\x01b\"}", `"\ufffd"`, "\"\xef\xbf\xbd\"", `[1,2,]`, `{"a":1,}`, `{"a" 1}`, `01`, `[01]`, `1.`, `.5`, `-`, `1e`,
	`{}]`, `{} x`, `truex`, `[truex]`, `nul`, `{"a":[{"c":3,"b":2},{"e":[],"d":{}}]}`, `"\u0041"`, `{"k":"\u0001"}`, `"a\/b"`, `{"a":"\/"}`,
	`{"b":1,"a":2,"b":3}`, `[` + string(bytes.Repeat([]byte("["), 1200)) + string(bytes.Repeat([]byte("]"), 1201)),
	`{"stdout":"total 4\n-rw-r--r-- 1 root root 18 Nov 23 05:07 hello.txt\n","stderr":"","exit_code":0,"truncated":false}`,
}

// The one pass writes what encoding/json writes, or hands over to it.
func TestCanonicalJSONAsEncodingJSON(t *testing.T) {
	for _, in := range canonicalCases {
		if got, want := CanonicalJSON([]byte(in)), canonicalByDecoding([]byte(in)); !bytes.Equal(got, want) {
			t.Errorf("%.80q:\n got %.200q\nwant %.200q", in, got, want)
		}
	}
	// The usual result takes the one pass.
	c := canonicalizer{in: []byte(canonicalCases[len(canonicalCases)-1])}
	if !c.value() || string(c.out) != `{"exit_code":0,"stderr":"","stdout":"total 4\n-rw-r--r-- 1 root root 18 Nov 23 05:07 hello.txt\n","truncated":false}` {
		t.Errorf("a command's result: %s", c.out)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, in := range canonicalCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := CanonicalJSON(in), canonicalByDecoding(in); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", in, got, want)
		}
		if json.Valid(in) {
			if out := CanonicalJSON(in); !json.Valid(out) {
				t.Fatalf("%q gave invalid %q", in, out)
			}
		}
	})
}
