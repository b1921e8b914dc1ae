package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultArtifactHead is how many bytes of an artifact a request shows
// when Artifacts.Head is 0.
const DefaultArtifactHead = 2000

// Artifacts keeps the values too large to repeat in every request (a
// tool's 5 MB output, a long file the model wrote) where the model can
// read them on demand. When such a value first enters a request it is
// replaced, for good, by a stand-in: its head, its size and a handle; the
// read_artifact tool (Read) answers with any part of it. What was sent is
// never rewritten, so providers' prompt caches hold.
//
// A handle is the start of the value's SHA-256: the same value gets the
// same handle and the same stand-in in a replay or a resumed task, where
// the recorded results fill the store again.
//
// One store serves a session's agents; it is safe for concurrent use.
type Artifacts struct {
	// Threshold is the size in bytes from which a value is kept aside;
	// 0 keeps nothing aside.
	Threshold int
	// Head is how many bytes of a kept value the stand-in shows
	// (DefaultArtifactHead when 0).
	Head int

	mu    sync.Mutex
	items map[string]string
}

// handleLen is how many hex digits of the SHA-256 name an artifact.
const handleLen = 12

func (a *Artifacts) over(s string) bool { return a != nil && a.Threshold > 0 && len(s) > a.Threshold }

func (a *Artifacts) head() int {
	h := a.Head
	if h <= 0 {
		h = DefaultArtifactHead
	}
	if a.Threshold > 0 {
		h = min(h, a.Threshold)
	}
	return h
}

// keep stores s and returns its handle.
func (a *Artifacts) keep(s string) string {
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:handleLen]
	a.mu.Lock()
	if a.items == nil {
		a.items = map[string]string{}
	}
	a.items[h] = s
	a.mu.Unlock()
	return h
}

// Len is how many artifacts are kept.
func (a *Artifacts) Len() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.items)
}

// Text is s as a request carries it: whole when it is within the
// threshold, else its head and tail (Ends, within the artifact head's
// bytes) around a stand-in that says how to read the rest.
func (a *Artifacts) Text(s string) string {
	if !a.over(s) {
		return s
	}
	return a.Ends(s, 0, a.head())
}

// JSON is a JSON value as a request carries it: every string in it longer
// than the threshold replaced by its stand-in, and the whole kept aside
// when it is still too long. A value within the threshold keeps its
// bytes; a longer one comes back canonical (keys sorted, as
// prompts.CanonicalJSON writes it).
func (a *Artifacts) JSON(raw []byte) []byte {
	if !a.over(string(raw)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return []byte(a.Text(string(raw)))
	}
	v = a.walk(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(a.Text(string(raw)))
	}
	return []byte(a.Text(strings.TrimRight(buf.String(), "\n")))
}

// JSONString is JSON for text held as a string: s itself when it is
// within the threshold (no copies either way).
func (a *Artifacts) JSONString(s string) string {
	if !a.over(s) {
		return s
	}
	return string(a.JSON([]byte(s)))
}

func (a *Artifacts) walk(v any) any { return walkStrings(v, a.Text) }

// Keep keeps s aside, whatever its size, and returns its handle.
func (a *Artifacts) Keep(s string) string { return a.keep(s) }

// Shorten is s as a request carries it under a context policy's head: whole
// when it has at most lines lines and bytes bytes (0 bounds neither),
// else kept aside and shown by its first and last lines (Ends).
func (a *Artifacts) Shorten(s string, lines, bytes int) string { return a.Ends(s, lines, bytes) }

// ShortenJSON is a JSON value under a context policy's head: each string in
// it cut to its head (see Shorten), and the whole, when still longer than
// twice bytes, cut as text. A value that needs no cut keeps its bytes.
func (a *Artifacts) ShortenJSON(raw []byte, lines, bytes int) []byte {
	if lines <= 0 && bytes <= 0 {
		return raw
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return []byte(a.Shorten(string(raw), lines, bytes))
	}
	cut := false
	v = walkStrings(v, func(s string) string {
		h := a.Shorten(s, lines, bytes)
		cut = cut || h != s
		return h
	})
	out := raw
	if cut {
		// A result that says whether it was cut (the shell's truncated)
		// says so now: a model may trust the flag over the stand-in.
		if m, ok := v.(map[string]any); ok {
			if _, ok := m["truncated"].(bool); ok {
				m["truncated"] = true
			}
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return []byte(a.Shorten(string(raw), lines, bytes))
		}
		out = []byte(strings.TrimRight(buf.String(), "\n"))
	}
	if bytes > 0 && len(out) > 2*bytes {
		return []byte(a.Shorten(string(out), 0, bytes))
	}
	return out
}

func walkStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, f)
		}
	case []any:
		for i, e := range x {
			x[i] = walkStrings(e, f)
		}
	}
	return v
}

// ReadArgs are the arguments of read_artifact: a byte range (Offset and
// Length) or, with Grep, the lines that match a regular expression.
type ReadArgs struct {
	Handle string `json:"handle"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	Grep   string `json:"grep"`
}

// UnmarshalJSON takes the handle as a string or as a number: a handle
// made only of decimal digits (about one in 280) looks like a number, and
// models send it as one.
func (r *ReadArgs) UnmarshalJSON(b []byte) error {
	type plain ReadArgs
	var v struct {
		plain
		Handle json.RawMessage `json:"handle"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = ReadArgs(v.plain)
	h := bytes.TrimSpace(v.Handle)
	switch {
	case len(h) == 0 || string(h) == "null":
		r.Handle = ""
	case h[0] == '"':
		return json.Unmarshal(h, &r.Handle)
	default:
		var n json.Number
		if err := json.Unmarshal(h, &n); err != nil {
			return fmt.Errorf("handle must be a string, not %s: the %d hex digits after \"artifact\" in a shortened value", h, handleLen)
		}
		r.Handle = n.String()
	}
	return nil
}

// handlesIn are the handles a model may mean by what it wrote for one, in
// order: "3f9a0c1d2b4e" as it is, or with the word before it ("artifact
// 3f9a0c1d2b4e"), in capitals; then, for a number, the handle it was before
// it lost its leading zeros (1234567890 for 001234567890) or was written
// with an exponent.
func handlesIn(s string) []string {
	h := strings.ToLower(strings.TrimSpace(s))
	h = strings.TrimPrefix(h, "artifact")
	h = strings.Trim(h, " \t\n:#=[]()'\"`,.")
	out := []string{h}
	digits := h
	if f, err := strconv.ParseFloat(h, 64); err == nil && strings.ContainsAny(h, "e+.") && f >= 0 && f < 1e12 && f == math.Trunc(f) {
		digits = strconv.FormatFloat(f, 'f', 0, 64)
		out = append(out, digits)
	}
	if len(digits) < handleLen && digits != "" && strings.Trim(digits, "0123456789") == "" {
		out = append(out, strings.Repeat("0", handleLen-len(digits))+digits)
	}
	return out
}

// Read answers read_artifact: the bytes asked for (moved to whole
// characters) under a line that says which they are, or the matching lines
// with their numbers. What it returns stays within the threshold, so that
// it is never kept aside itself. An error is for the model to read.
func (a *Artifacts) Read(r ReadArgs) (string, error) {
	var s string
	ok := false
	a.mu.Lock()
	for _, h := range handlesIn(r.Handle) {
		if s, ok = a.items[h]; ok {
			break
		}
	}
	a.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("no artifact %q: a handle is the %d hex digits after \"artifact\" in a shortened value, e.g. {\"handle\": \"3f9a0c1d2b4e\"}", r.Handle, handleLen)
	}
	room := 2 * a.head()
	if a.Threshold > 0 {
		room = max(256, a.Threshold-256)
	}
	if r.Grep != "" {
		return grep(s, r.Grep, room)
	}
	if r.Offset < 0 || r.Offset >= len(s) {
		return "", fmt.Errorf("offset %d is outside the artifact's %d bytes", r.Offset, len(s))
	}
	length := r.Length
	if length <= 0 {
		length = 2 * a.head()
	}
	length = min(length, room)
	from := runeStart(s, r.Offset)
	to := runeStart(s, min(len(s), from+length))
	if to == from { // a character longer than the room: take it whole
		_, n := utf8.DecodeRuneInString(s[from:])
		to = from + n
	}
	return fmt.Sprintf("[bytes %d to %d of %d]\n%s", from, to, len(s), s[from:to]), nil
}

func grep(s, pattern string, room int) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("grep: %v (a Go regular expression, RE2)", err)
	}
	var b strings.Builder
	matches, shown := 0, 0
	n := 0
	for line := range strings.Lines(s) {
		n++
		line = strings.TrimRight(line, "\n")
		if !re.MatchString(line) {
			continue
		}
		matches++
		entry := fmt.Sprintf("%d: %s\n", n, line)
		if b.Len()+len(entry) > room {
			continue
		}
		b.WriteString(entry)
		shown++
	}
	if matches == 0 {
		return fmt.Sprintf("no line of the artifact's %d lines matches %q", n, pattern), nil
	}
	return fmt.Sprintf("%d of %d lines match %q; %d shown (line: text):\n%s", matches, n, pattern, shown, b.String()), nil
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
