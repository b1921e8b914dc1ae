package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/saucerhq/saucer/internal/jsonw"
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
//
// It reads a text once: one pass looks for the places where a secret or a
// match can be (a literal secret's first bytes, a pattern's literal: "sk-",
// "://", "=", ...), and each pattern runs only around those places. The
// result is the same as replacing the literal secrets and then each
// pattern's matches in turn over the whole text, which is what it falls
// back to on the rare text where two of them overlap.
type Redactor struct {
	secrets  []string
	replacer *strings.Replacer
	rules    []rule
	// hooks[c] are the literals that may begin at a byte c.
	hooks [256][]hook
	first byteSet // the bytes that have hooks
	// pairs holds, one bit each, the pairs of bytes a literal may begin
	// with (all pairs that start with a one-byte literal's byte): most
	// places where first alone would look are passed over by one test.
	pairs *[1 << 16 / 64]uint64
	// rescan: a pattern's literal could be made by a replacement, so the
	// places where it can match are looked for again after one.
	rescan bool
	// passable: no match can hold a quote, so each lies wholly inside or
	// wholly outside a part of a JSON line that runs from a quote to a
	// quote, and such a part redacts the same alone as in its line (see
	// canPass); clean remembers the parts found clean.
	passable bool
	clean    seenSet[struct{}]
	// decodeAll: a pattern may match a character JSON writes escaped
	// even in its shortest form (a quote, a backslash, a newline, a
	// carriage return, a tab), so every escaped string of a raw value is
	// decoded, not only those with other escapes (see decodeEscaped).
	decodeAll bool
}

// rule is one pattern and where its matches can be.
type rule struct {
	re    *regexp.Regexp
	group int // the "secret" group's index, -1 for the whole match
	// lits are literals every match holds; none: the pattern runs over
	// the whole text (a pattern of the user's without a literal prefix).
	lits []string
	fold bool // lits match ASCII letters of either case
	// at is re anchored at its start, for patterns whose matches begin
	// with one of lits (back is nil).
	at *regexp.Regexp
	// back and fwd are the bytes a match may hold before and after one of
	// lits, for patterns with a literal in the middle; end is a byte that
	// may close a match after fwd's run (0: none).
	back, fwd *byteSet
	end       byte
	// worth, when set, says whether a match can hold the literal at at,
	// given the window [lo, hi) around it; false skips the window (a match
	// using a later literal in it is found from that one).
	worth func(s string, lo, at, hi int) bool
}

type byteSet [256]bool

func bytesOf(f func(c byte) bool) *byteSet {
	var s byteSet
	for c := range 256 {
		s[c] = f(byte(c))
	}
	return &s
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// anchors say where DefaultPatterns' matches can be. A pattern named here
// must have no match without one of its literals, and none that reaches
// further than back and fwd allow around it: TestRedactorMatchesRegexps
// checks each against its plain regular expression.
var anchors = map[string]rule{
	`sk-[A-Za-z0-9_\-]{16,}`:    {lits: []string{"sk-"}},
	`(?:AKIA|ASIA)[0-9A-Z]{16}`: {lits: []string{"AKIA", "ASIA"}},
	// The scheme before "://", the user, a colon and the password after it,
	// up to the '@'.
	`[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@"'\\]+:(?P<secret>[^\s/@"'\\]+)@`: {lits: []string{"://"},
		back: bytesOf(func(c byte) bool { return isLetter(c) || isDigit(c) || c == '+' || c == '.' || c == '-' }),
		fwd:  bytesOf(func(c byte) bool { return !strings.ContainsRune("\t\n\f\r /@\"'\\", rune(c)) }), end: '@',
		worth: func(s string, lo, at, hi int) bool {
			return lo < at && s[hi-1] == '@' && strings.IndexByte(s[at+3:hi], ':') >= 0
		}},
	// The name before "=" (bytes from 0x80 up: under (?i), the Kelvin sign
	// is a k and the long s an s) and the value after it.
	`(?i)(?:secret|password|passwd|token|api_?key|access_key)[A-Za-z_]*=(?P<secret>[^\s"'\\&;]{6,})`: {lits: []string{"="},
		back: bytesOf(func(c byte) bool { return isLetter(c) || c == '_' || c >= 0x80 }),
		fwd:  bytesOf(func(c byte) bool { return !strings.ContainsRune("\t\n\f\r \"'\\&;", rune(c)) }),
		worth: func(s string, lo, at, hi int) bool {
			return hi-at > 6 && namesSecret(s[lo:at])
		}},
	`gh[pousr]_[A-Za-z0-9]{30,}`:          {lits: []string{"gh"}},
	`xox[abposr]-[A-Za-z0-9\-]{10,}`:      {lits: []string{"xox"}},
	`AIza[0-9A-Za-z_\-]{35}`:              {lits: []string{"AIza"}},
	`(?i)bearer [A-Za-z0-9._~+/=\-]{16,}`: {lits: []string{"bearer "}, fold: true},
}

// secretNames are the names the assignment pattern looks for, in lower
// case.
var secretNames = []string{"secret", "password", "passwd", "token", "apikey", "api_key", "access_key"}

// namesSecret reports whether name (letters, '_', bytes from 0x80) holds
// one of secretNames in any case, or a byte from 0x80 (which the pattern
// may read as a letter: it decides).
func namesSecret(name string) bool {
	if len(name) < 5 {
		return false
	}
	var buf [64]byte
	low := buf[:0]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 0x80 {
			return true
		}
		if isLetter(c) {
			c |= 0x20
		}
		low = append(low, c)
	}
	for _, n := range secretNames {
		if strings.Contains(string(low), n) {
			return true
		}
	}
	return false
}

// hook is a literal that may begin at some byte: the literal secret i
// (rule -1), or rule's literal lit.
type hook struct {
	rule   int
	secret int
	lit    string
	fold   bool
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
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	var pairs []string
	for i, s := range r.secrets {
		pairs = append(pairs, s, Redacted)
		r.hooks[s[0]] = append(r.hooks[s[0]], hook{rule: -1, secret: i, lit: s})
	}
	if len(pairs) > 0 {
		r.replacer = strings.NewReplacer(pairs...)
	}
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: pattern %q: %w", p, err)
		}
		ru, ok := anchors[p]
		if !ok {
			// A pattern of the user's runs from its literal prefix where it
			// has one, else over the whole text.
			if prefix, _ := re.LiteralPrefix(); prefix != "" {
				ru = rule{lits: []string{prefix}}
			}
		}
		ru.re, ru.group = re, re.SubexpIndex("secret")
		if len(ru.lits) > 0 && ru.back == nil {
			ru.at = regexp.MustCompile(`\A(?:` + p + `)`)
		}
		for _, lit := range ru.lits {
			h := hook{rule: len(r.rules), lit: lit, fold: ru.fold}
			r.hooks[lit[0]] = append(r.hooks[lit[0]], h)
			if ru.fold && isLetter(lit[0]) {
				r.hooks[lit[0]^0x20] = append(r.hooks[lit[0]^0x20], h)
			}
		}
		r.rules = append(r.rules, ru)
		if sre, err := syntax.Parse(p, syntax.Perl); err != nil || canMatchEscaped(sre) {
			r.decodeAll = true
		}
		for _, lit := range ru.lits {
			r.rescan = r.rescan || madeByReplacing(lit, ru.fold)
		}
	}
	r.passable = canPass(r.secrets, patterns) && !r.rescan
	for _, ru := range r.rules {
		r.passable = r.passable && len(ru.lits) > 0
	}
	r.pairs = new([1 << 16 / 64]uint64)
	for c, hs := range r.hooks {
		r.first[c] = len(hs) > 0
		for _, h := range hs {
			if len(h.lit) == 1 {
				for d := range 256 {
					r.setPair(byte(c), byte(d))
				}
				continue
			}
			// c is lit[0] or, folded, its other case.
			r.setPair(byte(c), h.lit[1])
			if h.fold && isLetter(h.lit[1]) {
				r.setPair(byte(c), h.lit[1]^0x20)
			}
		}
	}
	return r, nil
}

func (r *Redactor) setPair(a, b byte) {
	p := uint(a)<<8 | uint(b)
	r.pairs[p>>6] |= 1 << (p & 63)
}

// madeByReplacing reports whether replacing text with Redacted can make
// an occurrence of lit: lit lies in it, or overlaps its start or its end.
func madeByReplacing(lit string, fold bool) bool {
	red := Redacted
	if fold {
		red, lit = strings.ToLower(red), strings.ToLower(lit)
	}
	if strings.Contains(red, lit) {
		return true
	}
	for k := 1; k < len(red) && k < len(lit); k++ {
		if strings.HasPrefix(lit, red[len(red)-k:]) || strings.HasSuffix(lit, red[:k]) {
			return true
		}
	}
	return false
}

// canPass reports whether no match of the secrets and patterns can hold a
// quote, nor depend on where the text it is in begins or ends (^, $, \A,
// \z), nor be empty. Then in a JSON line, where every string begins and
// ends with a quote, each match lies inside a part that runs from a quote
// to a quote or outside it, and is found there as in the whole line (a
// word boundary at a quote looks at the quote either way).
func canPass(secrets, patterns []string) bool {
	for _, s := range secrets {
		if strings.ContainsRune(s, '"') {
			return false
		}
	}
	for _, p := range patterns {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil || holdsQuoteOrEdge(re) || minLen(re) == 0 {
			return false
		}
	}
	return true
}

func holdsQuoteOrEdge(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '"')
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '"' && '"' <= re.Rune[i+1] {
				return true
			}
		}
	}
	for _, sub := range re.Sub {
		if holdsQuoteOrEdge(sub) {
			return true
		}
	}
	return false
}

// canMatchEscaped reports whether re may match one of the characters
// encoding/json writes as a two-byte escape: '"', '\\', '\n', '\r', '\t'.
func canMatchEscaped(re *syntax.Regexp) bool {
	const escaped = "\"\\\n\r\t"
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if strings.ContainsRune(escaped, c) {
				return true
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for _, c := range escaped {
				if re.Rune[i] <= c && c <= re.Rune[i+1] {
					return true
				}
			}
		}
	}
	for _, sub := range re.Sub {
		if canMatchEscaped(sub) {
			return true
		}
	}
	return false
}

// minLen is the fewest characters a match of re holds.
func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += minLen(sub)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, sub := range re.Sub {
			if m := minLen(sub); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // empty, assertions, star, quest
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	out, _ := r.redact(s)
	return out
}

// Bytes redacts b, returning b itself when nothing matched.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	// Read b in place: redact keeps nothing of it and builds a new text
	// only when something matches.
	out, changed := r.redact(unsafe.String(unsafe.SliceData(b), len(b)))
	if !changed {
		return b
	}
	return []byte(out)
}

// span is a part of the text to replace.
type span struct{ lo, hi int }

// cand is where one of a rule's literals begins, and its length.
type cand struct{ at, n int }

// redact returns s redacted and whether anything was. It does what
// replacing the literal secrets and then each pattern's matches in turn
// over the whole text does, step after step, but finds the places where
// each can match in one pass: a replacement drops the places it covers
// and moves the others, and makes none (no literal can begin, end or lie
// in "[REDACTED]"; NewRedactor checks).
func (r *Redactor) redact(s string) (string, bool) { return r.redactPassing(s, nil) }

// redactPassing is redact for a text whose parts pass hold nothing to
// redact: the one pass over the text steps over them (r.passable).
func (r *Redactor) redactPassing(s string, pass []span) (string, bool) {
	var room [16][]cand // for the usual number of rules, on the stack
	cands := r.candidates(s, pass, room[:0])
	changed := false
	for i := -1; i < len(r.rules); i++ {
		if len(cands[i+1]) == 0 && (i < 0 || len(r.rules[i].lits) > 0) {
			continue
		}
		spans := r.matches(s, i, cands[i+1])
		if len(spans) == 0 {
			continue
		}
		s, changed = replaceSpans(s, spans), true
		if r.rescan {
			cands = r.candidates(s, nil, cands[:0])
			continue
		}
		for j := i + 2; j < len(cands); j++ {
			cands[j] = shift(cands[j], spans)
		}
	}
	return s, changed
}

func replaceSpans(s string, spans []span) string {
	var b strings.Builder
	b.Grow(len(s) + len(spans)*len(Redacted))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.lo])
		b.WriteString(Redacted)
		last = sp.hi
	}
	b.WriteString(s[last:])
	return b.String()
}

// shift moves cands to where they are once spans are replaced, dropping
// those a span covers part of.
func shift(cands []cand, spans []span) []cand {
	out := cands[:0]
	delta, k := 0, 0
	for _, c := range cands {
		for k < len(spans) && spans[k].hi <= c.at {
			delta += len(Redacted) - (spans[k].hi - spans[k].lo)
			k++
		}
		if k < len(spans) && c.at+c.n > spans[k].lo {
			continue // the literal is (partly) replaced
		}
		out = append(out, cand{c.at + delta, c.n})
	}
	return out
}

// candidates is the one pass over s, stepping over the spans pass: for
// the literal secrets (index 0) and each rule, where one of its literals
// begins, in order.
func (r *Redactor) candidates(s string, pass []span, cands [][]cand) [][]cand {
	cands = slices.Grow(cands[:0], len(r.rules)+1)[:len(r.rules)+1]
	clear(cands)
	next := len(s) // where the next span to pass over begins
	if len(pass) > 0 {
		next = pass[0].lo
	}
	for i := 0; i < len(s); i++ {
		if i == next {
			i = pass[0].hi - 1
			if pass = pass[1:]; len(pass) > 0 {
				next = pass[0].lo
			} else {
				next = len(s)
			}
			continue
		}
		if i+1 < len(s) {
			// No literal begins with this pair: the usual case, one test.
			if p := uint(s[i])<<8 | uint(s[i+1]); r.pairs[p>>6]&(1<<(p&63)) == 0 {
				continue
			}
		} else if !r.first[s[i]] {
			continue
		}
		for _, h := range r.hooks[s[i]] {
			if hasLiteral(s[i:], h.lit, h.fold) {
				cs := cands[h.rule+1]
				if n := len(cs); n > 0 && cs[n-1].at == i {
					continue // an earlier, longer secret begins here too
				}
				cands[h.rule+1] = append(cs, cand{i, len(h.lit)})
			}
		}
	}
	return cands
}

func hasLiteral(s, lit string, fold bool) bool {
	if len(s) < len(lit) {
		return false
	}
	if !fold {
		return s[:len(lit)] == lit
	}
	for i := range len(lit) {
		if c := s[i]; c != lit[i] && !(isLetter(c) && c^0x20 == lit[i]) {
			return false
		}
	}
	return true
}

// matches finds in s the spans to replace of rule i (-1: the literal
// secrets) from its candidates: left to right without overlapping, as a
// scan of the whole text finds them.
func (r *Redactor) matches(s string, i int, cands []cand) []span {
	var spans []span
	last := 0 // where the last match ended
	if i < 0 {
		for _, c := range cands {
			if c.at < last {
				continue
			}
			for _, sec := range r.secrets { // longest first
				if strings.HasPrefix(s[c.at:], sec) {
					spans = append(spans, span{c.at, c.at + len(sec)})
					last = c.at + len(sec)
					break
				}
			}
		}
		return spans
	}
	ru := &r.rules[i]
	add := func(off int, m []int) {
		last = off + m[1]
		if ru.group > 0 {
			if m[2*ru.group] < 0 {
				return
			}
			spans = append(spans, span{off + m[2*ru.group], off + m[2*ru.group+1]})
			return
		}
		spans = append(spans, span{off + m[0], off + m[1]})
	}
	switch {
	case len(ru.lits) == 0:
		for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
			add(0, m)
		}
	case ru.back == nil:
		for _, c := range cands {
			if c.at < last {
				continue
			}
			if m := ru.at.FindStringSubmatchIndex(s[c.at:]); m != nil && m[1] > 0 {
				add(c.at, m)
			}
		}
	default:
		for _, c := range cands {
			if c.at < last {
				continue
			}
			lo := c.at
			for lo > last && ru.back[s[lo-1]] {
				lo--
			}
			hi := c.at + c.n
			for hi < len(s) && ru.fwd[s[hi]] {
				hi++
			}
			if hi < len(s) && ru.end != 0 && s[hi] == ru.end {
				hi++
			}
			if ru.worth != nil && !ru.worth(s, lo, c.at, hi) {
				continue
			}
			for _, m := range ru.re.FindAllStringSubmatchIndex(s[lo:hi], -1) {
				add(lo, m)
			}
		}
	}
	return spans
}

// JSON redacts one JSON document (an event line). Working on the bytes is fast; when that
// leaves invalid JSON (a secret that began right after a backslash of an
// escape, say) it redacts each decoded string instead. A string written
// with escapes that encoding/json would not write (`\u0041` for "A", `\/`)
// is redacted by what it decodes to.
func (r *Redactor) JSON(b []byte) ([]byte, error) {
	if bytes.IndexByte(b, '\\') >= 0 {
		b, _ = r.decodeEscaped(b, []span{{0, len(b)}})
	}
	return r.jsonPassing(b, nil, nil)
}

// decodeEscaped redacts the strings of the JSON values at spans of line
// (raw values, which the encoder copies as they came, escapes and all) by
// what they decode to: a secret written `sk-\u0041...` or `https:\/\/...`
// is not found in the bytes, but is in the string. A string whose escapes
// are only those encoding/json writes itself (\" \\ \n \r \t) is not
// decoded (unless decodeAll): the redactor finds a literal secret in its
// escaped form and no pattern matches those characters. A string that
// holds a secret is written again, redacted, as json.Marshal writes it;
// the rest of the line is kept byte for byte. spans are in order and do
// not overlap; line is not changed (changed: a new line was made).
func (r *Redactor) decodeEscaped(line []byte, spans []span) (_ []byte, changed bool) {
	if r == nil {
		return line, false
	}
	var out []byte // made when a string is redacted
	last := 0
	for _, sp := range spans {
		if !r.decodeAll && !oddEscape(line[sp.lo:sp.hi]) {
			continue
		}
		for i := sp.lo; i < sp.hi; i++ {
			if line[i] != '"' {
				continue
			}
			j, esc := i+1, false
			for j < sp.hi && line[j] != '"' {
				if line[j] == '\\' {
					esc = true
					j++
				}
				j++
			}
			if j >= sp.hi {
				break // not a whole string: not a JSON value the encoder wrote
			}
			if esc {
				var s string
				if json.Unmarshal(line[i:j+1], &s) == nil {
					if red, ok := r.redact(s); ok {
						if out == nil {
							out = make([]byte, 0, len(line)+len(Redacted))
						}
						out = jsonw.AppendString(append(out, line[last:i]...), red)
						last = j + 1
					}
				}
			}
			i = j
		}
	}
	if out == nil {
		return line, false
	}
	return append(out, line[last:]...), true
}

// oddEscape reports whether b (compact JSON) holds an escape other than
// the two-byte ones encoding/json writes for '"', '\\', '\n', '\r' and
// '\t': a \u escape, \/, \b or \f.
func oddEscape(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 || i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', 'n', 'r', 't':
			b = b[i+2:]
			continue
		}
		return true
	}
}

// cleanScratch is the room knownClean works in, kept by a Writer from one
// line to the next.
type cleanScratch struct {
	pass    []span
	unknown []uint64
}

// jsonPassing is JSON for a line in which the parts long, each from a
// quote to a quote, may be passed over when the redactor knows them
// clean (r.passable): when it has seen one in a line that held nothing to
// redact. scratch, when not nil, is room to work in.
func (r *Redactor) jsonPassing(b []byte, long []part, scratch *cleanScratch) ([]byte, error) {
	out := b
	if r != nil && len(b) > 0 {
		var pass []span
		var unknown []uint64
		if r.passable {
			if scratch == nil {
				scratch = &cleanScratch{}
			}
			pass, unknown = r.knownClean(b, long, scratch)
		}
		red, changed := r.redactPassing(unsafe.String(unsafe.SliceData(b), len(b)), pass)
		if changed {
			out = []byte(red)
		} else {
			// Nothing in the line, so nothing in any of its parts.
			for i, h := range unknown {
				if h != 0 {
					p := long[i]
					r.clean.add(h, b[p.lo:p.hi], struct{}{})
				}
			}
		}
	}
	if len(out) == len(b) && bytes.Equal(out, b) || json.Valid(out) {
		return out, nil
	}
	v, err := decodeGeneric(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r.walk(v))
}

// knownClean are the parts of a line (long, see eventEncoder.long) known
// to hold nothing to redact, in order: a part whose content was in a line
// that held nothing, the outermost where parts nest. unknown[i] is the
// hash of long[i] when it was looked up and not found, else 0. Both are
// made in scratch, which keeps them for the next line.
func (r *Redactor) knownClean(b []byte, long []part, scratch *cleanScratch) (pass []span, unknown []uint64) {
	defer func() { scratch.pass, scratch.unknown = pass, unknown }()
	pass = scratch.pass[:0]
	unknown = slices.Grow(scratch.unknown[:0], len(long))[:len(long)]
	clear(unknown)
	for i := len(long) - 1; i >= 0; {
		p := long[i]
		part := b[p.lo:p.hi]
		h := maphash.Bytes(seenSeed, part)
		if _, ok := r.clean.get(h, part); ok {
			pass = append(pass, span{p.lo, p.hi})
			i -= 1 + p.inner
			continue
		}
		unknown[i] = h // 0 (one hash in 2^64) is not learnt: a cache may forget
		i--
	}
	slices.Reverse(pass)
	return pass, unknown
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
