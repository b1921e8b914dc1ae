package trajectory_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/trajectory"
)

// escapings are the ways a device's JSON encoder may write secret inside
// a string: each letter in turn as a \u escape (lower and upper hex
// digits), every letter so, every '/' as \/ (PHP, some Java encoders), and
// a mix of both. Each is a JSON string's content that decodes to secret.
func escapings(secret string) map[string]string {
	u := func(c byte, upper bool) string {
		if upper {
			return fmt.Sprintf(`\u%04X`, c)
		}
		return fmt.Sprintf(`\u%04x`, c)
	}
	letter := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	out := map[string]string{}
	for i := 0; i < len(secret); i++ {
		if letter(secret[i]) {
			for _, upper := range []bool{false, true} {
				out[fmt.Sprintf("letter %d, upper %v", i, upper)] = secret[:i] + u(secret[i], upper) + secret[i+1:]
			}
		}
	}
	var all, slashes, mix strings.Builder
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		switch {
		case letter(c):
			all.WriteString(u(c, i%2 == 0))
			slashes.WriteByte(c)
			if i%3 == 0 {
				mix.WriteString(u(c, i%2 == 1))
			} else {
				mix.WriteByte(c)
			}
		case c == '/':
			all.WriteByte(c)
			slashes.WriteString(`\/`)
			mix.WriteString(`\/`)
		default:
			all.WriteByte(c)
			slashes.WriteByte(c)
			mix.WriteByte(c)
		}
	}
	out["every letter"] = all.String()
	if strings.Contains(secret, "/") {
		out["every slash"] = slashes.String()
	}
	out["a mix"] = mix.String()
	return out
}

// TestEscapedSecretsAreRedacted: a secret a device writes JSON-escaped in
// a command's result or in its parameters (raw values, copied as they
// came) is redacted by what the string decodes to, for configured secrets
// and pattern secrets alike; neither the recorded bytes nor the strings
// they decode to hold it. A raw value with escapes and no secret is kept
// byte for byte.
func TestEscapedSecretsAreRedacted(t *testing.T) {
	const configured = "https://hooks.example.net/T0/B1/zanzibar"
	const pattern = "sk-ABCDEFGHIJKLMNOPqrstuvwx" // DefaultPatterns' sk- shape
	red, err := trajectory.NewRedactor([]string{configured}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	w, err := trajectory.Create(dir, trajectory.Options{Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	type probe struct{ name, secret string }
	var probes []probe
	for _, secret := range []string{configured, pattern} {
		for form, esc := range escapings(secret) {
			var dec string
			if err := json.Unmarshal([]byte(`"`+esc+`"`), &dec); err != nil || dec != secret {
				t.Fatalf("%s: %q decodes to %q (%v)", form, esc, dec, err)
			}
			for _, where := range []string{"result", "parameters"} {
				raw := json.RawMessage(`{"stdout":"token: ` + esc + `\n","exit_code":0}`)
				cmd := command.Command{ToolName: "http_get", ToolType: command.Action, Parameters: map[string]any{"url": "x"}}
				res := command.Succeeded("c1", map[string]any{"ok": true})
				if where == "result" {
					res.Result = raw
				} else {
					cmd.Parameters["body"] = raw
				}
				e := trajectory.Event{Type: trajectory.TypeDispatch, Step: 1, Commands: []command.Command{cmd}, Results: []command.Result{res}}
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
				probes = append(probes, probe{fmt.Sprintf("%s in the %s, %s", secret, where, form), secret})
			}
		}
	}
	// Escapes without a secret stay as they came.
	clean := json.RawMessage(`{"s":"caf\u00e9 \/ \u0041BC sk-short \"q\"\n"}`)
	if err := w.Write(trajectory.Event{Type: trajectory.TypeDispatch, Step: 2,
		Results: []command.Result{{Status: command.Success, Result: clean, CallID: "c2"}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, trajectory.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(probes)+1 {
		t.Fatalf("%d lines, want %d", len(lines), len(probes)+1)
	}
	for i, p := range probes {
		line := lines[i]
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: the line is not JSON: %v\n%s", p.name, err, line)
		}
		decoded, _ := json.Marshal(v) // every string as it decodes
		if strings.Contains(line, p.secret) || strings.Contains(string(decoded), p.secret) || strings.Contains(string(decoded), strings.ReplaceAll(p.secret, "/", `\/`)) {
			t.Errorf("%s: recorded in clear: %s", p.name, line)
		}
		if !strings.Contains(line, trajectory.Redacted) {
			t.Errorf("%s: nothing redacted: %s", p.name, line)
		}
		if !strings.Contains(string(decoded), "token: ") || !strings.Contains(line, `"exit_code":0`) {
			t.Errorf("%s: more than the secret went: %s", p.name, line)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, string(clean)) {
		t.Errorf("a raw value without a secret was changed: %s, want %s in it", last, clean)
	}
}

// The Redactor's JSON redacts escaped secrets too.
func TestRedactorJSONDecodesEscapes(t *testing.T) {
	red, err := trajectory.NewRedactor([]string{"zanzibar-42"}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	out, err := red.JSON([]byte(`{"a":"\u007aanzibar-42","b":"sk-\u0041BCDEFGHIJKLMNOPQRST","c":"caf\u00e9"}`))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m["a"] != trajectory.Redacted || m["b"] != trajectory.Redacted || m["c"] != "café" {
		t.Errorf("got %s", out)
	}
}
