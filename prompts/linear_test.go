package prompts

import (
	"runtime"
	"strings"
	"testing"
)

// adversarial are replies of about n bytes that made earlier parsers do
// work in proportion to the square of their length: unbalanced braces in
// prose (each a place to start scanning again), an object that never
// closes, nested opens, think tags, many trailing commas.
func adversarial(n int) map[string]string {
	rep := func(s string) string { return strings.Repeat(s, n/len(s)) } // whole units: the same shape at every n
	return map[string]string{
		"stray braces":    rep("a { b ") + `{"status": "FINISH"}`,
		"open keys":       rep(`{"a": `),
		"open objects":    rep("{") + `{"status": "FINISH"}`,
		"braces in keys":  rep(`{ab {cd `) + `{"status": "FINISH"}`,
		"long key":        "{ " + rep("k") + " {",
		"think tags":      rep("<think>x</think><THINKING>") + `{"status": "FINISH"}`,
		"closing tags":    rep("x</think>") + `{"status": "FINISH"}`,
		"trailing commas": `{"status": "FINISH", "plan": [` + rep(`[1,],`) + `]}`,
		"cut off":         `{"status": "CONTINUE", "actions": [` + rep(`{"function": "x", "arguments": {"a": [1,],},},`),
		"python dict":     `{'status': 'FINISH', 'result': '` + rep(`it\'s {x} "y" `) + `'}`,
	}
}

// TestParsingIsLinear holds the parser's work to a fixed multiple of the
// reply's length, counting it rather than timing it: the bytes the object
// scan looks at (each at most a few times), and the bytes allocated for a
// reply four times as long (four times as many, give or take, where a
// quadratic parser allocates sixteen).
func TestParsingIsLinear(t *testing.T) {
	const n = 64 << 10
	small, big := adversarial(n), adversarial(4*n)
	for name, text := range small {
		var sc scanner
		sc.findObject(text)
		if sc.steps > 3*len(text) {
			t.Errorf("%s: the scan looked at %d bytes of %d", name, sc.steps, len(text))
		}
		a, b := allocated(func() { ParseReply(text, nil) }), allocated(func() { ParseReply(big[name], nil) })
		if ratio := float64(b) / float64(max(a, 1)); ratio > 6 {
			t.Errorf("%s: ParseReply allocated %d bytes for %d and %d for %d (%.1f×): more than linear", name, a, len(text), b, len(big[name]), ratio)
		}
		a, b = allocated(func() { ParseArguments(text) }), allocated(func() { ParseArguments(big[name]) })
		if ratio := float64(b) / float64(max(a, 1)); ratio > 6 {
			t.Errorf("%s: ParseArguments allocated %d bytes for %d and %d for %d (%.1f×): more than linear", name, a, len(text), b, len(big[name]), ratio)
		}
	}
}

// allocated is the bytes f allocates. No test of this package runs in
// parallel, so the process's count is f's.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
