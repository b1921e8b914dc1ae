package prompts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrIncomplete marks JSON that ends before its strings, comments or
// brackets close. Such text was cut off (a token limit, a server that
// reports the cut as a normal stop, a lost stream), and closing it would
// be a guess that can change what it says: `{"command": "rm -rf keep` may
// have been going to say `rm -rf keep/tmp`. It is never completed; the
// reply is refused and the model asked again.
var ErrIncomplete = errors.New("the JSON is not complete: it ends before its strings and brackets close, as text that was cut off does")

// RepairJSON returns s unchanged if it is valid JSON, and otherwise repairs
// the faults whose meaning is not in doubt (see normalize): a markdown
// fence around it, comments, trailing commas, Python's True, False and
// None, single-quoted strings, unquoted keys, raw control characters inside
// strings. Text that was cut off is an error matching ErrIncomplete; any
// other fault is an error that says where it is. It takes time linear in
// the length of s.
func RepairJSON(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty text, expected JSON")
	}
	if json.Valid([]byte(s)) {
		return s, nil
	}
	s = unfence(s)
	if json.Valid([]byte(s)) {
		return s, nil
	}
	out, err := normalize(s)
	if err != nil {
		return "", err
	}
	if err := validJSON(out); err != nil {
		return "", err
	}
	return out, nil
}

// validJSON says whether s is JSON and, if not, where it stops being JSON.
func validJSON(s string) error {
	if json.Valid([]byte(s)) {
		return nil
	}
	var v any
	err := json.Unmarshal([]byte(s), &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		at := int(se.Offset)
		from := max(at-20, 0)
		to := min(at+20, len(s))
		return fmt.Errorf("not valid JSON near %q: %v", s[from:to], se)
	}
	return fmt.Errorf("not valid JSON: %w", err)
}

// unfence removes a markdown code fence around the text: a first line of
// three backticks (and a language name), and a closing line of three
// backticks if there is one.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") {
		return s
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return s
	}
	if lang := strings.TrimSpace(s[3:nl]); strings.ContainsAny(lang, "{[\"'") {
		return s // not a language name: the fence line holds the JSON
	}
	body := strings.TrimSpace(s[nl+1:])
	return strings.TrimSpace(strings.TrimSuffix(body, "```"))
}

// ParseArguments reads tool-call arguments as a model wrote them: empty
// text and null mean no arguments, the faults RepairJSON repairs are
// repaired, and an object encoded twice (a JSON string holding the object)
// is unwrapped. Arguments that were cut off are an error matching
// ErrIncomplete, never completed; anything but an object is an error. It
// is the one reader of tool-call arguments: the agents and the step-level
// evaluator both use it, so that an evaluation scores only calls an agent
// would make.
func ParseArguments(s string) (map[string]any, error) {
	for range 2 { // at most one level of double encoding
		if strings.TrimSpace(s) == "" {
			return map[string]any{}, nil
		}
		// Arguments are almost always JSON already: decoding them at
		// once checks that too, and only what fails is repaired.
		v, ok := decodeArgs(s)
		if !ok {
			// A variable of its own: what encoding/json decodes into
			// lives on the heap, and the usual call needs none.
			var w any
			if json.Unmarshal([]byte(s), &w) != nil {
				fixed, err := RepairJSON(s)
				if err != nil {
					return nil, err
				}
				w = nil
				if err := json.Unmarshal([]byte(fixed), &w); err != nil {
					return nil, fmt.Errorf("decode arguments: %w", err)
				}
			}
			v = w
		}
		switch v := v.(type) {
		case nil:
			return map[string]any{}, nil
		case map[string]any:
			return v, nil
		case string:
			s = v
			continue
		default:
			return nil, fmt.Errorf("arguments must be a JSON object, not %s", kindOf(v))
		}
	}
	return nil, errors.New("arguments must be a JSON object, not a string")
}

// normalize rewrites s into JSON in one pass, tracking strings so that
// their content is never changed, and brackets so that it knows where keys
// stand. It repairs only what has one meaning:
//   - a raw newline, tab or other control character inside a string is
//     escaped (it can only be the character it is);
//   - a string in single quotes is read as Python reads one (it ends at the
//     first unescaped ', \' is a quote) and written in double quotes;
//   - a key that is a bare identifier followed by a colon is quoted;
//   - comments (// to the end of the line, /* ... */) outside strings go;
//   - a comma before a closing bracket goes;
//   - True, False and None outside strings become true, false and null.
//
// Text that ends inside a string or comment, or before its brackets close,
// is an error matching ErrIncomplete. Anything else is copied as it is,
// for the JSON decoder to accept or refuse.
func normalize(s string) (string, error) {
	out := make([]byte, 0, len(s)+16)
	var open []byte  // the brackets still open, innermost last
	keyNext := false // the next token of the innermost object is a key
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			var ok bool
			var end int
			out, end, ok = copyString(out, s, i)
			if !ok {
				return "", fmt.Errorf("%w (it ends inside the string that starts %q)", ErrIncomplete, clip(s[i:], 40))
			}
			i = end
			keyNext = false
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				i = len(s)
			} else {
				i += end - 1
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return "", fmt.Errorf("%w (it ends inside a /* comment)", ErrIncomplete)
			}
			i += end + 3
		case c == '{' || c == '[':
			open = append(open, c)
			keyNext = c == '{'
			out = append(out, c)
		case c == '}' || c == ']':
			out = dropTrailingComma(out)
			if len(open) == 0 || open[len(open)-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return "", fmt.Errorf("not valid JSON: the %q near %q closes no open bracket of its kind", c, clip(s[max(i-20, 0):], 40))
			}
			open = open[:len(open)-1]
			keyNext = false
			out = append(out, c)
		case c == ',':
			keyNext = len(open) > 0 && open[len(open)-1] == '{'
			out = append(out, c)
		case c == ':':
			keyNext = false
			out = append(out, c)
		case isIdentStart(c) && (i == 0 || !isWordByte(s[i-1])):
			end := i + 1
			for end < len(s) && isWordByte(s[end]) {
				end++
			}
			word := s[i:end]
			if keyNext && nextNonSpace(s, end) == ':' {
				out = append(append(append(out, '"'), word...), '"')
			} else {
				switch word {
				case "True":
					word = "true"
				case "False":
					word = "false"
				case "None":
					word = "null"
				}
				out = append(out, word...)
			}
			i = end - 1
			keyNext = false
		default:
			out = append(out, c)
		}
	}
	if len(open) > 0 {
		return "", fmt.Errorf("%w (%d bracket(s) never closed)", ErrIncomplete, len(open))
	}
	return string(out), nil
}

// copyString appends the string that starts at s[start] (a double or a
// single quote) to out as a JSON string, and returns the index of its
// closing quote; ok is false when the text ends first.
func copyString(out []byte, s string, start int) (_ []byte, end int, ok bool) {
	quote := s[start]
	out = append(out, '"')
	for i := start + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote:
			return append(out, '"'), i, true
		case c == '\\':
			if i+1 >= len(s) {
				return out, 0, false
			}
			i++
			if quote == '\'' && s[i] == '\'' {
				out = append(out, '\'') // \' needs no escape in double quotes
			} else {
				out = append(out, '\\', s[i])
			}
		case c == '"': // only inside single quotes
			out = append(out, '\\', '"')
		case c < 0x20:
			out = appendControl(out, c)
		default:
			out = append(out, c)
		}
	}
	return out, 0, false
}

func appendControl(out []byte, c byte) []byte {
	switch c {
	case '\n':
		return append(out, '\\', 'n')
	case '\r':
		return append(out, '\\', 'r')
	case '\t':
		return append(out, '\\', 't')
	}
	return fmt.Appendf(out, `\u%04x`, c)
}

// dropTrailingComma removes a comma at the end of what was written, before
// any white space after it. The white space it looks through is written
// once and followed by the bracket being closed, so each byte is looked at
// once in all.
func dropTrailingComma(b []byte) []byte {
	t := bytes.TrimRight(b, " \t\r\n")
	if len(t) > 0 && t[len(t)-1] == ',' {
		return append(t[:len(t)-1], b[len(t):]...)
	}
	return b
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isWordByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// nextNonSpace is the first byte from s[i] on that is not white space, or 0.
func nextNonSpace(s string, i int) byte {
	for ; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return s[i]
		}
	}
	return 0
}

// clip shortens s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// stripThinking removes reasoning blocks (<think>…</think>, or <thinking>,
// in any case). Besides whole blocks it handles a closing tag without its
// opening one (some servers drop the opening tag: what comes before it is
// reasoning) and an opening tag never closed at the start (the model ran out
// of tokens while thinking, or forgot to close it): the tag is removed and
// the search for the JSON object goes on in what follows. unclosed reports
// that last case. One pass over s.
func stripThinking(s string) (rest string, unclosed bool) {
	var out strings.Builder
	kept, inBlock := 0, false // s[kept:] is not yet written or dropped
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		end, closing := thinkTag(s, i)
		switch {
		case end < 0:
			continue
		case !closing && !inBlock:
			out.WriteString(s[kept:i])
			inBlock, kept = true, i
		case closing && inBlock:
			inBlock, kept = false, end
		case closing:
			// A closing tag without its opening: all before it was reasoning.
			out.Reset()
			kept = end
		}
		i = end - 1
	}
	out.WriteString(s[kept:])
	rest = out.String()
	trimmed := strings.TrimLeft(rest, " \t\r\n")
	if end, closing := thinkTag(trimmed, 0); end > 0 && !closing {
		return trimmed[end:], true
	}
	return rest, false
}

// thinkTag reads a <think>, <thinking>, </think> or </thinking> tag (any
// case) at s[i], returning the index after it, or -1 if there is none.
func thinkTag(s string, i int) (end int, closing bool) {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		closing = true
		j++
	}
	for _, name := range []string{"think>", "thinking>"} {
		if len(s)-j >= len(name) && strings.EqualFold(s[j:j+len(name)], name) {
			return j + len(name), closing
		}
	}
	return -1, false
}

// span is a stretch of text that starts with '{': complete when its
// brackets balance, else it runs to the end of the text (cut off).
type span struct {
	start, end int
	complete   bool
}

// scanner finds the outermost {...} spans of a reply in one pass. Quotes
// are tracked only inside a span, because prose around the JSON is full of
// apostrophes; inside one, single quotes delimit strings too (a reply
// written as a Python dict), except within a double-quoted string. steps
// counts
// the bytes looked at, so that a test can hold the work to a multiple of
// the length without a clock.
type scanner struct {
	steps int
}

// scan returns the outermost spans. In prose, a '{' opens a span only
// where an object can start (a quote, a closing brace or a key and a colon
// follow it), so that a stray brace in prose ("use the { key") neither
// hides the JSON after it nor reads as a cut-off object. The look-ahead
// stops at the first byte that is neither space nor a key's, so each byte
// is looked at a bounded number of times.
func (sc *scanner) scan(text string) []span {
	var spans []span
	depth, start := 0, 0
	var str inString
	for i := 0; i < len(text); i++ {
		sc.steps++
		c := text[i]
		if depth == 0 {
			if c == '{' && sc.opensObject(text, i+1) {
				depth, start = 1, i
			}
			continue
		}
		if str.quote != 0 {
			str.step(c)
			continue
		}
		switch c {
		case '"', '\'':
			str.quote = c
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				spans = append(spans, span{start, i + 1, true})
			}
		}
	}
	if depth > 0 {
		spans = append(spans, span{start, len(text), false})
	}
	return spans
}

// opensObject reports whether the text from i on can follow the '{' of an
// object: a key in quotes, the closing brace, a bare key and a colon.
func (sc *scanner) opensObject(text string, i int) bool {
	for ; i < len(text); i++ {
		sc.steps++
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		case c == '"' || c == '\'' || c == '}':
			return true
		case isIdentStart(c):
			for i < len(text) && isWordByte(text[i]) {
				sc.steps++
				i++
			}
			return nextNonSpace(text, i) == ':'
		default:
			return false
		}
	}
	return true // a '{' at the very end: an object cut off at its start
}

var errNoObject = errors.New("Your reply contains no JSON object.")

// findObject picks the reply object out of text: the last complete
// outermost object with a status (models that draft write the final
// version last), else the largest object without one, so the error can
// say what is missing. A reply that ends inside an object was cut off (or
// its brackets do not balance) and is refused whatever came before it:
// completing it would be a guess, and an earlier draft is not the answer.
func findObject(text string) (map[string]any, error) {
	var sc scanner
	return sc.findObject(text)
}

func (sc *scanner) findObject(text string) (map[string]any, error) {
	spans := sc.scan(text)
	if n := len(spans); n > 0 && !spans[n-1].complete {
		return nil, cutOff(text[spans[n-1].start:])
	}
	var firstErr error
	var found, largest map[string]any
	largestLen := -1
	for _, sp := range spans {
		m, err := decodeObject(text[sp.start:sp.end])
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if _, ok := lookup(m, "status"); ok {
			found = m
		} else if sp.end-sp.start > largestLen {
			largest, largestLen = m, sp.end-sp.start
		}
	}
	switch {
	case found != nil:
		return found, nil
	case largest != nil:
		return largest, nil
	case firstErr != nil:
		return nil, firstErr
	}
	return nil, errNoObject
}

// decodeObject decodes one JSON object, repairing it first if needed.
func decodeObject(s string) (map[string]any, error) {
	fixed, err := RepairJSON(s)
	if errors.Is(err, ErrIncomplete) {
		return nil, cutOff(s)
	}
	if err != nil {
		return nil, fmt.Errorf("Your reply is not valid JSON (%v).", err)
	}
	var v any
	if err := json.Unmarshal([]byte(fixed), &v); err != nil {
		return nil, fmt.Errorf("Your reply is not valid JSON (%v).", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("Your reply is a JSON %s, not an object.", kindOf(v))
	}
	return m, nil
}

// cutOff says that the reply object s does not end: cut off at the token
// limit, or by a server that reported the cut as a normal stop. Nothing of
// it runs, wherever the cut fell.
func cutOff(s string) error {
	where := "before it was complete"
	if key := openKey(s); key != "" {
		where = fmt.Sprintf("inside %q", key)
	}
	return incompleteError(fmt.Sprintf("Your reply was cut off %s (its strings or brackets never close), so none of it was run; make it shorter (fewer actions, shorter arguments, less text).", where))
}

// inString follows a scan through a quoted string: quote is the string's
// quote (" or '), 0 outside one.
type inString struct {
	quote   byte
	escaped bool
}

// step takes the next byte inside the string and reports whether it
// closed the string.
func (q *inString) step(c byte) bool {
	switch {
	case q.escaped:
		q.escaped = false
	case c == '\\':
		q.escaped = true
	case c == q.quote:
		q.quote = 0
		return true
	}
	return false
}

// incompleteError is a refusal, worded for the model, of text that does
// not end; it matches ErrIncomplete.
type incompleteError string

func (e incompleteError) Error() string        { return string(e) }
func (e incompleteError) Is(target error) bool { return target == ErrIncomplete }

// openKey returns the top-level key whose value the truncated object text
// s ends inside of, or "" if s ends between members or after a complete
// string or container value.
func openKey(s string) string {
	depth, memberStart := 0, 0
	key, inValue, valueDone := "", false, false
	var str inString
	for i := 0; i < len(s); i++ {
		c := s[i]
		if str.quote != 0 {
			if str.step(c) && depth == 1 && inValue {
				valueDone = true
			}
			continue
		}
		switch c {
		case '"', '\'':
			str.quote = c
		case '{', '[':
			depth++
			if depth == 1 {
				memberStart = i + 1
			}
		case '}', ']':
			depth--
			if depth == 1 && inValue {
				valueDone = true
			}
			if depth == 0 {
				return ""
			}
		case ',':
			if depth == 1 {
				memberStart, key, inValue, valueDone = i+1, "", false, false
			}
		case ':':
			if depth == 1 && !inValue {
				key = strings.ToLower(strings.Trim(s[memberStart:i], " \t\r\n\"'"))
				inValue, valueDone = true, false
			}
		}
	}
	if inValue && !valueDone {
		return key
	}
	return "" // cut between members, inside a key, or after a whole value
}

// decodeReply maps a decoded object onto a Reply, accepting any case for
// keys, common aliases, and loose value types.
func decodeReply(m map[string]any) (*Reply, error) {
	r := &Reply{}
	r.Observation = asText(value(m, "observation"))
	r.Thought = asText(value(m, "thought", "thoughts"))
	r.Comment = asText(value(m, "comment"))
	r.Result = asText(value(m, "result"))
	r.Plan = asPlan(value(m, "plan"))

	switch st := value(m, "status").(type) {
	case nil:
	case string:
		r.Status = strings.ToUpper(strings.TrimSpace(st))
	default:
		return nil, fmt.Errorf("\"status\" must be a string such as \"FINISH\", not %s.", kindOf(st))
	}

	actions, ok := lookup(m, "actions", "action")
	if !ok {
		// A single action written at the top level, as older UFO prompts asked.
		if _, hasFn := lookup(m, "function", "tool"); hasFn {
			actions = m
		}
	}
	var err error
	if r.Actions, err = asActions(actions); err != nil {
		return nil, err
	}
	return r, nil
}

func asActions(v any) ([]Action, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil, nil
		}
		fixed, err := RepairJSON(v)
		if err != nil {
			return nil, fmt.Errorf("\"actions\" must be a list of objects, and the string given is not JSON (%v).", err)
		}
		var inner any
		if err := json.Unmarshal([]byte(fixed), &inner); err != nil {
			return nil, fmt.Errorf("\"actions\" must be a list of objects (%v).", err)
		}
		if _, isString := inner.(string); isString {
			return nil, errors.New("\"actions\" must be a list of objects like {\"function\": \"tool_name\", \"arguments\": {...}}, not a string.")
		}
		return asActions(inner)
	case map[string]any:
		a, err := asAction(0, v)
		if err != nil {
			return nil, err
		}
		return []Action{a}, nil
	case []any:
		if len(v) == 0 {
			return nil, nil
		}
		out := make([]Action, 0, len(v))
		for i, item := range v {
			m, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("actions[%d] is %s; each action must be an object like {\"function\": \"tool_name\", \"arguments\": {...}}.", i, kindOf(item))
			}
			a, err := asAction(i, m)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("\"actions\" must be a list of objects, not %s.", kindOf(v))
	}
}

func asAction(i int, m map[string]any) (Action, error) {
	fn := value(m, "function", "name", "tool", "tool_name")
	if nested, ok := fn.(map[string]any); ok {
		// OpenAI's tool-call shape: {"function": {"name": ..., "arguments": ...}}.
		m, fn = nested, value(nested, "name", "function", "tool")
	}
	name, _ := fn.(string)
	name = strings.TrimSpace(name)
	if name == "" {
		return Action{}, fmt.Errorf("actions[%d] has no \"function\" (the tool name); write {\"function\": \"tool_name\", \"arguments\": {...}}.", i)
	}
	args, err := asArguments(value(m, "arguments", "args", "parameters", "params", "input"))
	if err != nil {
		return Action{}, fmt.Errorf("actions[%d] (%s): %v; write the arguments as an object such as {\"path\": \"/tmp\"}.", i, name, err)
	}
	return Action{Function: name, Arguments: args}, nil
}

func asArguments(v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	case string:
		return ParseArguments(v)
	default:
		return nil, fmt.Errorf("arguments must be an object, not %s", kindOf(v))
	}
}

// lookup finds the first of names in m: an exact key first, then one that
// differs only in case (in sorted key order, so the choice is stable).
func lookup(m map[string]any, names ...string) (any, bool) {
	for _, n := range names {
		if v, ok := m[n]; ok {
			return v, true
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, n := range names {
		for _, k := range keys {
			if strings.EqualFold(strings.TrimSpace(k), n) {
				return m[k], true
			}
		}
	}
	return nil, false
}

func value(m map[string]any, names ...string) any {
	v, _ := lookup(m, names...)
	return v
}

// asText turns any JSON value into text: strings as they are, null as
// empty, anything else as compact JSON.
func asText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// asPlan accepts a list, or a string with one step per line.
func asPlan(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			if s := strings.TrimSpace(asText(item)); s != "" {
				out = append(out, s)
			}
		}
		return out
	case string:
		var out []string
		for _, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			for _, bullet := range []string{"- ", "* ", "• "} {
				line = strings.TrimPrefix(line, bullet)
			}
			if line != "" {
				out = append(out, line)
			}
		}
		return out
	default:
		return []string{asText(v)}
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
