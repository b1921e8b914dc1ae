package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret the writer finds.
const Redacted = "[REDACTED]"

// MinSecretLength is the shortest literal secret a Redactor accepts:
// redacting a two-letter "secret" would shred the whole recording.
const MinSecretLength = 6

// DefaultPatterns match the shapes of common API keys and bearer tokens,
// URL passwords and secret assignments (AWS_SECRET_ACCESS_KEY=...). None of
// them can match a quote or a backslash, so redacting them inside a JSON
// line keeps it valid. A pattern with a group named "secret" has only that
// group replaced, so that the name beside it stays readable.
func DefaultPatterns() []string {
	return []string{
		`sk-[A-Za-z0-9_\-]{16,}`,    // OpenAI, Anthropic (sk-ant-...)
		`(?:AKIA|ASIA)[0-9A-Z]{16}`, // AWS access key ids (long-term, temporary)
		`[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@"'\\]+:(?P<secret>[^\s/@"'\\]+)@`,                             // URL passwords (postgres://u:PASSWORD@h)
		`(?i)(?:secret|password|passwd|token|api_?key|access_key)[A-Za-z_]*=(?P<secret>[^\s"'\\&;]{6,})`, // NAME_SECRET=value
		`gh[pousr]_[A-Za-z0-9]{30,}`,          // GitHub tokens
		`xox[abposr]-[A-Za-z0-9\-]{10,}`,      // Slack tokens
		`AIza[0-9A-Za-z_\-]{35}`,              // Google API keys
		`(?i)bearer [A-Za-z0-9._~+/=\-]{16,}`, // Authorization headers
	}
}

// Redactor removes secrets from everything a Writer writes: the literal
// values it was given (API keys from the config and the environment) and
// anything matching its patterns. A nil *Redactor redacts nothing.
type Redactor struct {
	secrets  []string
	patterns []*regexp.Regexp
	replacer *strings.Replacer
}

// NewRedactor builds a redactor from literal secrets and regular
// expressions. Empty secrets are ignored; shorter ones than
// MinSecretLength are an error, since they would match everywhere.
func NewRedactor(secrets []string, patterns []string) (*Redactor, error) {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			continue
		}
		if len(s) < MinSecretLength {
			return nil, fmt.Errorf("redact: a secret of %d characters is too short to redact safely (at least %d)", len(s), MinSecretLength)
		}
		seen[s] = true
		r.secrets = append(r.secrets, s)
		// Inside a JSON string a secret may be written escaped.
		if b, err := json.Marshal(s); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != s && !seen[esc] {
				seen[esc] = true
				r.secrets = append(r.secrets, esc)
			}
		}
	}
	// Longest first, so that a secret containing another is removed whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	var pairs []string
	for _, s := range r.secrets {
		pairs = append(pairs, s, Redacted)
	}
	if len(pairs) > 0 {
		r.replacer = strings.NewReplacer(pairs...)
	}
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: pattern %q: %w", p, err)
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	if r.replacer != nil {
		s = r.replacer.Replace(s)
	}
	for _, re := range r.patterns {
		s = replace(re, s)
	}
	return s
}

// replace redacts re's matches in s: the "secret" group where re has one,
// else the whole match.
func replace(re *regexp.Regexp, s string) string {
	g := re.SubexpIndex("secret")
	if g < 0 {
		return re.ReplaceAllLiteralString(s, Redacted)
	}
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		if m[2*g] < 0 {
			continue
		}
		b.WriteString(s[last:m[2*g]])
		b.WriteString(Redacted)
		last = m[2*g+1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Bytes redacts b, returning b itself when nothing matched.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	out := b
	for _, s := range r.secrets {
		if bytes.Contains(out, []byte(s)) {
			out = []byte(r.replacer.Replace(string(out)))
			break
		}
	}
	for _, re := range r.patterns {
		if re.Match(out) {
			out = []byte(replace(re, string(out)))
		}
	}
	return out
}

// JSON redacts one JSON document (an event line). Working on the bytes is fast; when that
// leaves invalid JSON (a secret that began right after a backslash of an
// escape, say) it redacts each decoded string instead.
func (r *Redactor) JSON(b []byte) ([]byte, error) {
	out := r.Bytes(b)
	if len(out) == len(b) && bytes.Equal(out, b) || json.Valid(out) {
		return out, nil
	}
	v, err := decodeGeneric(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r.walk(v))
}

func (r *Redactor) walk(v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case map[string]any:
		for k, x := range v {
			v[k] = r.walk(x)
		}
	case []any:
		for i, x := range v {
			v[i] = r.walk(x)
		}
	}
	return v
}

func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
