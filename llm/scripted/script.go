package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/saucerhq/saucer/llm"
)

// Script is what a scripted Model answers: its replies, in order.
type Script struct {
	// Loop starts again from the first reply after the last one, so a short
	// script can answer any number of calls (benchmarks, soak tests).
	Loop    bool    `yaml:"loop,omitempty" json:"loop,omitempty"`
	Replies []Reply `yaml:"replies" json:"replies"`
	// Computer makes the model one with a native computer-use tool
	// (llm.ComputerUser): agents then offer it, and the script answers
	// with tool calls named "computer" whose arguments are normalized
	// actions ({actions: [{action: click, x: 10, y: 20}]}).
	Computer bool `yaml:"computer,omitempty" json:"computer,omitempty"`
}

// Reply is the model's answer to one call. It must say something: Text,
// JSON, ToolCalls or Error.
type Reply struct {
	// Expect, when set, must occur in the content of some message of the
	// request; if it does not, the call fails with an *ExpectError. It lets a
	// script check that the agent sent what the test thinks it sent.
	Expect string `yaml:"expect,omitempty" json:"expect,omitempty"`
	// When and Unless make the reply depend on what the request offers:
	// a reply whose When does not occur in the content of any message of
	// the request, or whose Unless does, is passed over for good and the
	// next reply is tried. A script can so answer one way when, say,
	// retrieved experience is in the prompt and another way when not.
	When   string `yaml:"when,omitempty" json:"when,omitempty"`
	Unless string `yaml:"unless,omitempty" json:"unless,omitempty"`
	// Latency is how long the call takes; a cancelled context ends it early.
	Latency time.Duration `yaml:"latency,omitempty" json:"latency,omitempty"`
	// Text is the assistant content, verbatim: a thought next to tool calls,
	// or raw content (fenced JSON, garbage) to exercise reply parsers.
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
	// JSON is any value, sent as compact JSON content. Scripts loaded from a
	// file keep the keys in the order written (the value is then a
	// json.RawMessage). Text and JSON are mutually exclusive.
	JSON any `yaml:"json,omitempty" json:"json,omitempty"`
	// ToolCalls are native tool calls.
	ToolCalls []ToolCall `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	// Usage, when set, is reported as is (TotalTokens is recomputed as
	// prompt + completion); otherwise it is estimated, see Model.
	Usage *llm.Usage `yaml:"usage,omitempty" json:"usage,omitempty"`
	// Error, when set, makes the call fail with an *llm.Error of that kind:
	// one of rate_limit, auth, context_length, timeout, server, empty_reply,
	// bad_request. It excludes every field but Expect and Latency.
	Error string `yaml:"error,omitempty" json:"error,omitempty"`
	// FinishReason defaults to "tool_calls" when there are tool calls and
	// "stop" otherwise.
	FinishReason string `yaml:"finish_reason,omitempty" json:"finish_reason,omitempty"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID defaults to "call_<n>_<i>": n is the call number and i the tool
	// call's position (both from 1), so ids stay unique when a script loops.
	ID   string `yaml:"id,omitempty" json:"id,omitempty"`
	Name string `yaml:"name" json:"name"`
	// Arguments is sent as the call's arguments: a string verbatim (it may be
	// malformed JSON on purpose), nil as "{}", anything else as compact JSON.
	Arguments any `yaml:"arguments,omitempty" json:"arguments,omitempty"`
	// FromRequest sets arguments from the request the reply answers: each
	// argument's regular expression (with one group) is searched in the
	// request's messages, the latest first, and the argument is the first
	// match's group, a number if it reads as one. It lets a script act on
	// what only the run knows, such as a control's id in an observation
	// ("\\[(\\d+)\\] push button \"7\""). No match fails the call with a
	// *FromRequestError.
	FromRequest map[string]string `yaml:"from_request,omitempty" json:"from_request,omitempty"`
}

// errorKinds are the names a script may give in Reply.Error.
var errorKinds = map[string]llm.ErrorKind{
	"rate_limit":     llm.KindRateLimit,
	"auth":           llm.KindAuth,
	"context_length": llm.KindContextLength,
	"timeout":        llm.KindTimeout,
	"server":         llm.KindServer,
	"empty_reply":    llm.KindEmptyReply,
	"bad_request":    llm.KindBadRequest,
}

func errorKindNames() string {
	names := make([]string, 0, len(errorKinds))
	for name := range errorKinds {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Load reads a script file (.yaml, .yml or .json) and returns a model that
// answers from it. Errors name the file and, for YAML, the line.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "yaml" && format != "yml" && format != "json" {
		return nil, fmt.Errorf("scripted: %s: unknown script format %q: name the file .yaml, .yml or .json", path, filepath.Ext(path))
	}
	s, err := Parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return New(*s), nil
}

// Parse reads a script in format "yaml" (or "yml", or "") or "json", and
// checks it as Validate does. Unknown keys are errors, named with the reply
// (and, for YAML, the line) they are in.
func Parse(data []byte, format string) (*Script, error) {
	var (
		root value
		err  error
	)
	switch strings.ToLower(strings.TrimPrefix(format, ".")) {
	case "", "yaml", "yml":
		root, err = parseYAML(data)
	case "json":
		// JSON is YAML too, but yaml.v3 refuses some valid JSON (the \/
		// escape), so JSON gets the JSON parser.
		root, err = parseJSON(data)
	default:
		return nil, fmt.Errorf("scripted: unknown script format %q (use yaml or json)", format)
	}
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	s, lines, err := readScript(root)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	if _, err := compileScript(*s, lines); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks a script the way Parse and New do.
func (s Script) Validate() error {
	_, err := compileScript(s, nil)
	return err
}

// value is a parsed YAML or JSON value, so one reader serves both formats.
type value interface {
	// line is the value's line in the file, or 0 when unknown.
	line() int
	// fields returns a mapping's keys and values, in a deterministic order.
	fields() ([]field, error)
	// items returns a sequence's elements.
	items() ([]value, error)
	// decode stores a scalar into a string, int or bool.
	decode(into any) error
	// str returns the value if it is a string.
	str() (string, bool)
	// json returns the value as compact JSON, keys in the order written.
	json() (json.RawMessage, error)
}

type field struct {
	key string
	val value
}

var (
	scriptKeys   = []string{"loop", "replies", "computer"}
	replyKeys    = []string{"expect", "latency", "text", "json", "tool_calls", "usage", "error", "finish_reason", "when", "unless"}
	toolCallKeys = []string{"name", "arguments", "id", "from_request"}
	usageKeys    = []string{"prompt_tokens", "completion_tokens", "cached_tokens"}
)

// readScript turns a parsed file into a Script and the line of each reply.
func readScript(root value) (*Script, []int, error) {
	fields, err := root.fields()
	if err != nil {
		return nil, nil, fmt.Errorf("the script must be a mapping with a replies list: %w", err)
	}
	s := &Script{}
	var lines []int
	for _, f := range fields {
		switch f.key {
		case "loop":
			if err := f.val.decode(&s.Loop); err != nil {
				return nil, nil, at(f.val, "loop: %w", err)
			}
		case "computer":
			if err := f.val.decode(&s.Computer); err != nil {
				return nil, nil, at(f.val, "computer: %w", err)
			}
		case "replies":
			items, err := f.val.items()
			if err != nil {
				return nil, nil, at(f.val, "replies: %w", err)
			}
			for i, item := range items {
				r, err := readReply(item)
				if err != nil {
					return nil, nil, at(item, "reply %d: %w", i+1, err)
				}
				s.Replies = append(s.Replies, r)
				lines = append(lines, item.line())
			}
		default:
			return nil, nil, at(f.val, "unknown key %q at the top level (valid keys: %s)", f.key, strings.Join(scriptKeys, ", "))
		}
	}
	return s, lines, nil
}

func readReply(v value) (Reply, error) {
	var r Reply
	fields, err := v.fields()
	if err != nil {
		return r, err
	}
	for _, f := range fields {
		var err error
		switch f.key {
		case "expect":
			err = f.val.decode(&r.Expect)
		case "when":
			err = f.val.decode(&r.When)
		case "unless":
			err = f.val.decode(&r.Unless)
		case "text":
			err = f.val.decode(&r.Text)
		case "error":
			err = f.val.decode(&r.Error)
		case "finish_reason":
			err = f.val.decode(&r.FinishReason)
		case "latency":
			var d string
			if err = f.val.decode(&d); err == nil {
				r.Latency, err = time.ParseDuration(d)
			}
			if err != nil {
				err = fmt.Errorf("%w (write a Go duration such as \"20ms\")", err)
			}
		case "json":
			var raw json.RawMessage
			if raw, err = f.val.json(); err == nil {
				r.JSON = raw
			}
		case "tool_calls":
			var items []value
			if items, err = f.val.items(); err != nil {
				break
			}
			for i, item := range items {
				call, err := readToolCall(item)
				if err != nil {
					return r, at(item, "tool call %d: %w", i+1, err)
				}
				r.ToolCalls = append(r.ToolCalls, call)
			}
		case "usage":
			r.Usage = &llm.Usage{}
			err = readUsage(f.val, r.Usage)
		default:
			return r, at(f.val, "unknown key %q (valid keys: %s)", f.key, strings.Join(replyKeys, ", "))
		}
		if err != nil {
			return r, at(f.val, "%s: %w", f.key, err)
		}
	}
	return r, nil
}

func readToolCall(v value) (ToolCall, error) {
	var c ToolCall
	fields, err := v.fields()
	if err != nil {
		return c, err
	}
	for _, f := range fields {
		var err error
		switch f.key {
		case "name":
			err = f.val.decode(&c.Name)
		case "id":
			err = f.val.decode(&c.ID)
		case "from_request":
			var raw json.RawMessage
			if raw, err = f.val.json(); err == nil {
				err = json.Unmarshal(raw, &c.FromRequest)
			}
		case "arguments":
			if s, ok := f.val.str(); ok {
				c.Arguments = s
			} else {
				c.Arguments, err = f.val.json()
			}
		default:
			return c, at(f.val, "unknown key %q (valid keys: %s)", f.key, strings.Join(toolCallKeys, ", "))
		}
		if err != nil {
			return c, at(f.val, "%s: %w", f.key, err)
		}
	}
	return c, nil
}

func readUsage(v value, u *llm.Usage) error {
	fields, err := v.fields()
	if err != nil {
		return err
	}
	for _, f := range fields {
		var target *int
		switch f.key {
		case "prompt_tokens":
			target = &u.PromptTokens
		case "completion_tokens":
			target = &u.CompletionTokens
		case "cached_tokens":
			target = &u.CachedTokens
		default:
			return at(f.val, "unknown key %q (valid keys: %s; the total is computed)", f.key, strings.Join(usageKeys, ", "))
		}
		if err := f.val.decode(target); err != nil {
			return at(f.val, "%s: %w", f.key, err)
		}
	}
	return nil
}

// at prefixes an error with the value's line, when known and not already
// given by a nested error.
func at(v value, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	var located *locatedError
	if v.line() > 0 && !errors.As(err, &located) {
		return &locatedError{line: v.line(), err: err}
	}
	return err
}

// locatedError marks an error that already names its line, so outer levels
// do not name another.
type locatedError struct {
	line int
	err  error
}

func (e *locatedError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *locatedError) Unwrap() error { return e.err }

// compiled is a reply ready to serve: everything that can be computed before
// the first call is, so Complete only copies.
type compiled struct {
	expect string
	// when and unless decide whether the reply answers a request at all.
	when, unless string
	latency      time.Duration
	content      string
	toolCalls    []llm.ToolCall // ID "" means the default id
	// fromRequest are, per tool call, the arguments taken from the request.
	fromRequest []map[string]*regexp.Regexp
	usage       *llm.Usage
	// completion is the completion-token estimate used when usage is nil.
	completion int
	finish     string
	failWith   llm.ErrorKind // KindUnknown means no error
}

// compileScript checks every reply and prepares it; lines (may be nil) gives
// each reply's line for error messages.
func compileScript(s Script, lines []int) ([]compiled, error) {
	if len(s.Replies) == 0 {
		return nil, errors.New("scripted: the script has no replies: add a replies list")
	}
	out := make([]compiled, len(s.Replies))
	for i, r := range s.Replies {
		c, err := compileReply(r)
		if err != nil {
			if i < len(lines) && lines[i] > 0 {
				return nil, fmt.Errorf("scripted: reply %d (line %d): %w", i+1, lines[i], err)
			}
			return nil, fmt.Errorf("scripted: reply %d: %w", i+1, err)
		}
		out[i] = c
	}
	return out, nil
}

func compileReply(r Reply) (compiled, error) {
	c := compiled{expect: r.Expect, when: r.When, unless: r.Unless, latency: r.Latency, finish: r.FinishReason}
	if r.Latency < 0 {
		return c, fmt.Errorf("latency %s is negative", r.Latency)
	}
	if r.Error != "" {
		kind, ok := errorKinds[r.Error]
		if !ok {
			return c, fmt.Errorf("unknown error kind %q (valid: %s)", r.Error, errorKindNames())
		}
		if r.Text != "" || r.JSON != nil || len(r.ToolCalls) > 0 || r.Usage != nil || r.FinishReason != "" {
			return c, errors.New("a reply with error has nothing else to say: remove text, json, tool_calls, usage and finish_reason")
		}
		c.failWith = kind
		return c, nil
	}
	if r.Text == "" && r.JSON == nil && len(r.ToolCalls) == 0 {
		return c, errors.New("the reply is empty: give text, json, tool_calls or error (use error: empty_reply for an empty answer)")
	}
	if r.Text != "" && r.JSON != nil {
		return c, errors.New("text and json are mutually exclusive: keep one")
	}
	c.content = r.Text
	if r.JSON != nil {
		content, err := compactJSON(r.JSON)
		if err != nil {
			return c, fmt.Errorf("json: %w", err)
		}
		c.content = content
	}
	size := len(c.content)
	for i, tc := range r.ToolCalls {
		if tc.Name == "" {
			return c, fmt.Errorf("tool call %d has no name", i+1)
		}
		args := "{}"
		switch a := tc.Arguments.(type) {
		case nil:
		case string:
			args = a
		default:
			var err error
			if args, err = compactJSON(a); err != nil {
				return c, fmt.Errorf("tool call %d (%s): arguments: %w", i+1, tc.Name, err)
			}
		}
		from := map[string]*regexp.Regexp{}
		for arg, expr := range tc.FromRequest {
			re, err := regexp.Compile(expr)
			if err != nil {
				return c, fmt.Errorf("tool call %d (%s): from_request.%s: %w", i+1, tc.Name, arg, err)
			}
			if re.NumSubexp() != 1 {
				return c, fmt.Errorf("tool call %d (%s): from_request.%s: %q has %d groups: give exactly one, around the value", i+1, tc.Name, arg, expr, re.NumSubexp())
			}
			from[arg] = re
		}
		if len(from) > 0 {
			var obj map[string]any
			if err := json.Unmarshal([]byte(args), &obj); err != nil {
				return c, fmt.Errorf("tool call %d (%s): from_request needs arguments that are an object", i+1, tc.Name)
			}
		}
		c.toolCalls = append(c.toolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
		c.fromRequest = append(c.fromRequest, from)
		size += len(tc.Name) + len(args)
	}
	if r.Usage != nil {
		if r.Usage.PromptTokens < 0 || r.Usage.CompletionTokens < 0 || r.Usage.CachedTokens < 0 {
			return c, errors.New("usage: token counts cannot be negative")
		}
		u := *r.Usage
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		c.usage = &u
	}
	c.completion = tokens(size)
	if c.finish == "" {
		c.finish = "stop"
		if len(c.toolCalls) > 0 {
			c.finish = "tool_calls"
		}
	}
	return c, nil
}

// compactJSON renders v as compact JSON without HTML escaping (a scripted
// "<" stays "<", as a model would write it).
func compactJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// tokens estimates a token count from a byte count: a quarter, rounded up,
// at least 1. Crude, but deterministic and close enough for English.
func tokens(size int) int {
	return max(1, (size+3)/4)
}
