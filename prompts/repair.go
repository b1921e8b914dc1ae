package prompts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kaptinlin/jsonrepair"
)

// RepairJSON returns s unchanged if it is valid JSON, and otherwise tries to
// repair it: trailing commas, single quotes, unquoted keys, Python literals,
// comments, markdown fences around it, and truncation (unclosed strings and
// brackets). The result is valid JSON or an error.
func RepairJSON(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty text, expected JSON")
	}
	if json.Valid([]byte(s)) {
		return s, nil
	}
	// Our own string-aware pass first: jsonrepair's file-path heuristics
	// double the backslashes of correctly escaped Windows paths
	// ("C:\\Users" becomes "C:\\\\Users") whenever it has to repair anything.
	if light := lightRepair(s); json.Valid([]byte(light)) {
		return light, nil
	}
	out, err := jsonrepair.Repair(s)
	if err != nil {
		return "", fmt.Errorf("cannot repair JSON: %w", err)
	}
	if !json.Valid([]byte(out)) {
		return "", errors.New("cannot repair JSON: the repaired text is still not valid")
	}
	return out, nil
}

// ParseArguments reads tool-call arguments as a model wrote them: empty
// text and null mean no arguments, malformed JSON is repaired, and an object
// encoded twice (a JSON string holding the object) is unwrapped. Anything
// but an object is an error. It is the one reader of tool-call arguments:
// the agents and the step-level evaluator both use it, so that an
// evaluation scores only calls an agent would make.
func ParseArguments(s string) (map[string]any, error) {
	for range 2 { // at most one level of double encoding
		if strings.TrimSpace(s) == "" {
			return map[string]any{}, nil
		}
		fixed, err := RepairJSON(s)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal([]byte(fixed), &v); err != nil {
			return nil, fmt.Errorf("decode arguments: %w", err)
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

// lightRepair fixes the faults it can fix without guessing, tracking
// strings so that their content is never touched: raw control characters
// inside strings, comments, trailing commas, the Python literals True,
// False and None, and truncation (an unclosed string, a dangling comma or
// colon, unclosed brackets). Other faults are left for jsonrepair.
func lightRepair(s string) string {
	out := make([]byte, 0, len(s)+8)
	var open []byte // the closers still owed, innermost last
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c == '\n':
				out = append(out, '\\', 'n')
				continue
			case c == '\r':
				out = append(out, '\\', 'r')
				continue
			case c == '\t':
				out = append(out, '\\', 't')
				continue
			}
			out = append(out, c)
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '/' && strings.HasPrefix(s[i:], "//"):
			if end := strings.IndexByte(s[i:], '\n'); end >= 0 {
				i += end - 1
			} else {
				i = len(s)
			}
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			if end := strings.Index(s[i+2:], "*/"); end >= 0 {
				i += end + 3
			} else {
				i = len(s)
			}
		case c == '{':
			open = append(open, '}')
			out = append(out, c)
		case c == '[':
			open = append(open, ']')
			out = append(out, c)
		case c == '}' || c == ']':
			out = dropTrailingComma(out)
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			out = append(out, c)
		case isWordByte(c) && (i == 0 || !isWordByte(s[i-1])):
			end := i
			for end < len(s) && isWordByte(s[end]) {
				end++
			}
			word := s[i:end]
			switch word {
			case "True":
				word = "true"
			case "False":
				word = "false"
			case "None":
				word = "null"
			}
			out = append(out, word...)
			i = end - 1
		default:
			out = append(out, c)
		}
	}
	if inString {
		if escaped {
			out = out[:len(out)-1]
		}
		out = append(out, '"')
	}
	out = bytes.TrimRight(out, " \t\r\n")
	out = dropTrailingComma(out)
	if len(out) > 0 && out[len(out)-1] == ':' {
		out = append(out, "null"...)
	}
	for i := len(open) - 1; i >= 0; i-- {
		out = append(dropTrailingComma(out), open[i])
	}
	return string(out)
}

func dropTrailingComma(b []byte) []byte {
	t := bytes.TrimRight(b, " \t\r\n")
	if len(t) > 0 && t[len(t)-1] == ',' {
		return t[:len(t)-1]
	}
	return b
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

var (
	thinkBlock = regexp.MustCompile(`(?is)<think(?:ing)?>.*?</think(?:ing)?>`)
	thinkClose = regexp.MustCompile(`(?i)</think(?:ing)?>`)
	thinkOpen  = regexp.MustCompile(`(?i)^\s*<think(?:ing)?>`)
)

// stripThinking removes reasoning blocks. Besides whole <think>…</think>
// blocks it handles a closing tag without its opening one (some servers
// drop the opening tag) and an opening tag never closed (the model ran out
// of tokens while thinking, or forgot to close it): the tag is removed and
// the search for the JSON object goes on in what follows. unclosed reports
// that last case.
func stripThinking(s string) (rest string, unclosed bool) {
	s = thinkBlock.ReplaceAllString(s, "")
	if locs := thinkClose.FindAllStringIndex(s, -1); len(locs) > 0 {
		s = s[locs[len(locs)-1][1]:]
	}
	if loc := thinkOpen.FindStringIndex(s); loc != nil {
		return s[loc[1]:], true
	}
	return s, false
}

// span is a stretch of text that starts with '{': complete when its
// brackets balance, else it runs to the end of the text (truncated).
type span struct {
	start, end int
	complete   bool
}

// scan finds the outermost {...} spans from position from on. Quotes are
// tracked only inside a span, because prose around the JSON is full of
// apostrophes; only double quotes count, for the same reason.
func scan(text string, from int) []span {
	var spans []span
	depth, start := 0, 0
	inString, escaped := false, false
	for i := from; i < len(text); i++ {
		c := text[i]
		if depth == 0 {
			if c == '{' {
				depth, start = 1, i
			}
			continue
		}
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
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

// maxRescans bounds the search inside an unbalanced span.
const maxRescans = 32

var errNoObject = errors.New("Your reply contains no JSON object.")

// findObject picks the reply object out of text. Preference: a complete
// outermost object with a status (the last one, since models that draft
// write the final version last); then a truncated outermost object with a
// status; then an object with a status found inside an unbalanced stretch
// (a stray '{' in prose before the JSON hides it from the first scan); then
// the largest object without a status, so the error can say what is
// missing.
func findObject(text string) (obj map[string]any, truncated bool, err error) {
	top := scan(text, 0)
	var inner []span
	if n := len(top); n > 0 && !top[n-1].complete {
		from := top[n-1].start + 1
		for range maxRescans {
			more := scan(text, from)
			inner = append(inner, more...)
			k := len(more)
			if k == 0 || more[k-1].complete {
				break
			}
			from = more[k-1].start + 1
		}
	}

	var firstErr error
	var largest map[string]any
	largestLen := -1
	lastWithStatus := func(spans []span) map[string]any {
		var found map[string]any
		for _, sp := range spans {
			if !sp.complete {
				continue
			}
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
		return found
	}

	if m := lastWithStatus(top); m != nil {
		return m, false, nil
	}
	var truncErr error
	if n := len(top); n > 0 && !top[n-1].complete {
		m, err := decodeTruncated(text[top[n-1].start:])
		if err == nil {
			if _, ok := lookup(m, "status"); ok {
				return m, true, nil
			}
			err = errors.New("Your reply was cut off before its \"status\"; keep it shorter.")
		}
		truncErr = err
	}
	if m := lastWithStatus(inner); m != nil {
		return m, false, nil
	}
	switch {
	case truncErr != nil:
		return nil, false, truncErr
	case largest != nil:
		return largest, false, nil
	case firstErr != nil:
		return nil, false, firstErr
	}
	return nil, false, errNoObject
}

// decodeObject decodes one JSON object, repairing it first if needed.
func decodeObject(s string) (map[string]any, error) {
	fixed, err := RepairJSON(s)
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

// cutUnsafe are the keys whose value, if cut off, would make the reply
// dangerous to act on: a half status, or actions with half their arguments.
var cutUnsafe = map[string]bool{
	"status": true, "actions": true, "action": true,
	"function": true, "tool": true, "arguments": true, "args": true, "parameters": true,
}

// decodeTruncated completes a reply that was cut off, unless the cut fell
// inside its status or its actions.
func decodeTruncated(s string) (map[string]any, error) {
	s = strings.TrimRight(s, " \t\r\n")
	s = strings.TrimSuffix(s, "```") // a fence closing an object that never closed
	if key := openKey(s); cutUnsafe[key] {
		return nil, fmt.Errorf("Your reply was cut off inside %q, so it cannot be used; make it shorter (fewer actions, shorter arguments, less text).", key)
	}
	return decodeObject(s)
}

// openKey returns the top-level key whose value the truncated object text
// s ends inside of, or "" if s ends between members or after a complete
// string or container value.
func openKey(s string) string {
	depth, memberStart := 0, 0
	key, inValue, valueDone := "", false, false
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 1 && inValue {
					valueDone = true
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
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
