// Package scripted is a deterministic llm.Model that answers from a script:
// for tests, benchmarks and the demo that runs without an API key.
//
// A script lists replies (text, JSON content, native tool calls, a typed
// error) served in order, one per call. A reply can check the request it
// answers (expect), take time (latency) and report usage. The model records
// every request it received, so a test can assert what the agent asked.
//
// A script file looks like this (YAML; the same keys work in JSON):
//
//	loop: false
//	replies:
//	  - expect: "subtask"
//	    latency: 20ms
//	    text: "I will list the files first."
//	    tool_calls:
//	      - name: execute_command
//	        arguments: {command: "ls"}
//	  - json: {status: FINISH, result: "done"}
//	    usage: {prompt_tokens: 12, completion_tokens: 5}
//	  - error: rate_limit
//	  - when: "Experience"       # only if the request offers it; else
//	    text: "As before: ..."   # passed over (unless: the opposite)
//	  - tool_calls:              # an argument read from the request:
//	      - name: click            # the first group of the latest match
//	        from_request: {id: '\[(\d+)\] push button "OK"'}
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/saucerhq/saucer/llm"
)

// ModelName is the Response.Model of every scripted reply.
const ModelName = "scripted"

// Model answers calls from a script. Usage not given by the script is
// estimated: prompt tokens are the bytes of the request's message contents
// and tool calls divided by 4, rounded up (at least 1); completion tokens the
// same for the reply; cached tokens the share of the prompt tokens that a
// provider's prompt cache would hold, the longest prefix the request
// shares with one of the last few (see llm.SharedPrefix). It is safe for concurrent use: concurrent calls take
// replies in the order they arrive.
type Model struct {
	replies  []compiled
	loop     bool
	computer bool

	mu     sync.Mutex
	count  int  // calls received
	next   int  // the reply to try next (when and unless pass replies over)
	record bool // keep a copy of each request
	calls  []llm.Request
	// recent are the last requests, for the prompt cache it simulates.
	recent [cacheDepth]*llm.Request
}

// cacheDepth is how many recent requests the simulated prompt cache
// remembers: enough for a host agent and an app agent taking turns.
const cacheDepth = 4

var _ llm.Model = (*Model)(nil)

// New returns a model that answers from s. It records requests (see
// SetRecord). It panics if s is invalid (see Script.Validate): a script
// written in Go is part of the program; use Parse or Load for input.
func New(s Script) *Model {
	replies, err := compileScript(s, nil)
	if err != nil {
		panic(err)
	}
	return &Model{replies: replies, loop: s.Loop, computer: s.Computer, record: true}
}

// SupportsComputer reports whether the script said the model has a native
// computer-use tool (Script.Computer).
func (m *Model) SupportsComputer() bool { return m.computer }

// SetRecord turns recording of requests on (the default) or off. Turn it off
// for long runs: every recorded request is kept in memory.
func (m *Model) SetRecord(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record = on
}

// Calls returns a copy of every request recorded, in the order received.
// The copy is deep down to message, tool-call, image and tool slices; image
// bytes and tool schemas are shared with the caller's request.
func (m *Model) Calls() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]llm.Request, len(m.calls))
	for i, r := range m.calls {
		out[i] = copyRequest(&r)
	}
	return out
}

// Count is the number of calls received, including failed ones.
func (m *Model) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// Remaining is the number of replies not yet served. When the script loops,
// it is the number left before it starts again.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loop {
		return len(m.replies) - m.next%len(m.replies)
	}
	return max(0, len(m.replies)-m.next)
}

// Skip passes over the next reply without serving it: a resumed session
// whose earlier replies come from its journal keeps its place in the
// script this way.
func (m *Model) Skip() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count++
	m.next++
}

// Complete returns the next scripted reply. A call whose context is already
// done fails without taking a reply; one cancelled during its latency has
// used its reply.
func (m *Model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	reply, call, cached, err := m.take(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, err := reply.answer(ctx, call, req)
	if err == nil && reply.usage == nil {
		resp.Usage.CachedTokens = int(float64(resp.Usage.PromptTokens) * cached)
	}
	return resp, err
}

// Stream is Complete, also delivering the reply through onChunk: the text a
// word at a time, then each tool call as a fragment with its id and name
// followed by its arguments in two halves.
func (m *Model) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	resp, err := m.Complete(ctx, req)
	if err != nil || onChunk == nil {
		return resp, err
	}
	for _, word := range splitWords(resp.Message.Content) {
		onChunk(llm.Chunk{Text: word})
	}
	for i, tc := range resp.Message.ToolCalls {
		onChunk(llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: &i, ID: tc.ID, Name: tc.Name}})
		first, second := halves(tc.Arguments)
		for _, part := range []string{first, second} {
			if part != "" {
				onChunk(llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: &i, Arguments: part}})
			}
		}
	}
	return resp, nil
}

// take counts the call, records it and picks its reply. cached is the
// share of the request a provider's prompt cache would have held: the
// longest prefix it shares with a recent request.
func (m *Model) take(ctx context.Context, req *llm.Request) (_ *compiled, call int, cached float64, _ error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("scripted: %w", err)
	}
	if req == nil {
		return nil, 0, 0, errors.New("scripted: nil request")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count++
	call = m.count
	if m.record {
		m.calls = append(m.calls, copyRequest(req))
	}
	best, total := 0, 0
	for _, prev := range m.recent {
		shared, n := llm.SharedPrefix(prev, req)
		best, total = max(best, shared), n
	}
	if total > 0 {
		cached = float64(best) / float64(total)
	}
	// Agents build a new request each step and never change one they
	// sent, so keeping a shallow copy is safe.
	cp := *req
	copy(m.recent[1:], m.recent[:cacheDepth-1])
	m.recent[0] = &cp
	// A looping script passes over at most one round of replies.
	for tried := 0; ; tried++ {
		if m.next >= len(m.replies) {
			if !m.loop || tried >= len(m.replies) {
				return nil, call, 0, &ExhaustedError{Replies: len(m.replies), Call: call}
			}
			m.next = 0
		}
		c := &m.replies[m.next]
		m.next++
		if (c.when == "" || contains(req, c.when)) && (c.unless == "" || !contains(req, c.unless)) {
			return c, call, cached, nil
		}
	}
}

// answer serves the reply to call number call.
func (c *compiled) answer(ctx context.Context, call int, req *llm.Request) (*llm.Response, error) {
	if c.expect != "" && !contains(req, c.expect) {
		return nil, &ExpectError{Call: call, Expect: c.expect, LastUser: tail(lastUser(req), 200)}
	}
	if c.latency > 0 {
		t := time.NewTimer(c.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("scripted: call %d cancelled during its %s latency: %w", call, c.latency, ctx.Err())
		}
	}
	if c.failWith != llm.KindUnknown {
		return nil, &llm.Error{Kind: c.failWith, Provider: ModelName, Message: "scripted failure for call " + strconv.Itoa(call)}
	}
	resp := &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: c.content},
		FinishReason: c.finish,
		Model:        ModelName,
	}
	if len(c.toolCalls) > 0 {
		calls := make([]llm.ToolCall, len(c.toolCalls))
		copy(calls, c.toolCalls)
		for i := range calls {
			if len(c.fromRequest[i]) > 0 {
				args, err := argumentsFrom(req, calls[i].Arguments, c.fromRequest[i])
				if err != nil {
					return nil, &FromRequestError{Call: call, Tool: calls[i].Name, Err: err}
				}
				calls[i].Arguments = args
			}
			if calls[i].ID == "" {
				calls[i].ID = "call_" + strconv.Itoa(call) + "_" + strconv.Itoa(i+1)
			}
		}
		resp.Message.ToolCalls = calls
	}
	if c.usage != nil {
		resp.Usage = *c.usage
	} else {
		resp.Usage = llm.Usage{PromptTokens: tokens(requestSize(req)), CompletionTokens: c.completion}
		resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	}
	return resp, nil
}

// requestSize is the byte count the prompt-token estimate is based on.
func requestSize(req *llm.Request) int {
	n := 0
	for i := range req.Messages {
		msg := &req.Messages[i]
		n += len(msg.Content)
		for _, tc := range msg.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return n
}

func contains(req *llm.Request, s string) bool {
	for i := range req.Messages {
		if strings.Contains(req.Messages[i].Content, s) {
			return true
		}
	}
	return false
}

func lastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// tail returns the last n bytes of s (whole runes), marked when cut.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "..." + s
}

// splitWords cuts s after each run of spaces, so the pieces join back to s.
func splitWords(s string) []string {
	var out []string
	for s != "" {
		end := strings.IndexAny(s, " \t\n")
		if end < 0 {
			out = append(out, s)
			break
		}
		for end < len(s) && strings.ContainsRune(" \t\n", rune(s[end])) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// halves splits s near its middle, on a rune boundary.
func halves(s string) (string, string) {
	mid := len(s) / 2
	for mid > 0 && mid < len(s) && !utf8.RuneStart(s[mid]) {
		mid--
	}
	return s[:mid], s[mid:]
}

func copyRequest(r *llm.Request) llm.Request {
	out := *r
	out.Messages = make([]llm.Message, len(r.Messages))
	for i, msg := range r.Messages {
		msg.Images = append([]llm.Image(nil), msg.Images...)
		msg.ToolCalls = append([]llm.ToolCall(nil), msg.ToolCalls...)
		out.Messages[i] = msg
	}
	out.Tools = append([]llm.Tool(nil), r.Tools...)
	out.Stop = append([]string(nil), r.Stop...)
	if r.Computer != nil {
		c := *r.Computer
		out.Computer = &c
	}
	if r.Temperature != nil {
		t := *r.Temperature
		out.Temperature = &t
	}
	return out
}

// ExhaustedError is a call made after the last reply of a script that does
// not loop.
type ExhaustedError struct {
	Replies int // replies in the script
	Call    int // the call that found none
}

func (e *ExhaustedError) Error() string {
	noun := "replies"
	if e.Replies == 1 {
		noun = "reply"
	}
	return fmt.Sprintf("scripted: the script has %d %s and call %d has none (add replies, or set loop: true)", e.Replies, noun, e.Call)
}

// ExpectError is a call whose request did not contain the text the reply
// expected.
type ExpectError struct {
	Call   int
	Expect string
	// LastUser is the end of the request's last user message, to show what
	// was asked instead.
	LastUser string
}

func (e *ExpectError) Error() string {
	return fmt.Sprintf("scripted: call %d expected a message containing %q, but none does; the last user message ends with %q", e.Call, e.Expect, e.LastUser)
}

// FromRequestError is a call whose reply takes an argument from the
// request, which has no match for it.
type FromRequestError struct {
	Call int
	Tool string
	Err  error
}

func (e *FromRequestError) Error() string {
	return fmt.Sprintf("scripted: call %d: %s: %v", e.Call, e.Tool, e.Err)
}

// argumentsFrom sets each argument of from to its regular expression's
// group in the latest message of req that matches it.
func argumentsFrom(req *llm.Request, args string, from map[string]*regexp.Regexp) (string, error) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return "", err
	}
	for _, arg := range slices.Sorted(maps.Keys(from)) {
		re := from[arg]
		var m []string
		for i := len(req.Messages) - 1; i >= 0 && m == nil; i-- {
			m = re.FindStringSubmatch(req.Messages[i].Content)
		}
		if m == nil {
			return "", fmt.Errorf("from_request.%s: no message of the request matches %q; the last user message ends with %q", arg, re, tail(lastUser(req), 200))
		}
		if n, err := strconv.Atoi(m[1]); err == nil {
			obj[arg] = n
		} else {
			obj[arg] = m[1]
		}
	}
	out, err := compactJSON(obj)
	if err != nil {
		return "", err
	}
	return out, nil
}
