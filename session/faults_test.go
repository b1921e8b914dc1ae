package session_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/session"
)

// The fault matrix: model servers on loopback that misbehave the way real
// ones do, each in a provider's real wire shape, driven through the whole
// assembly (config → provider → session → a real device in a temp dir).
// Each row asserts how the session ended, how many requests the server
// saw, what the model was told next, what was recorded, and what ran.

// shape is a provider's wire shape, and how Saucer is configured for it.
type shape string

const (
	oaiJSON shape = "openai"           // chat completions
	oaiSSE  shape = "openai-stream"    // chat completions, streamed
	antJSON shape = "anthropic"        // messages
	antSSE  shape = "anthropic-stream" // messages, streamed
	ollama  shape = "ollama"           // Ollama's OpenAI-compatible API
	// Ollama's OpenAI-compatible API, streamed: each call whole in one
	// chunk, every one at index 0.
	ollSSE shape = "ollama-stream"
)

func (s shape) stream() bool    { return s == oaiSSE || s == antSSE || s == ollSSE }
func (s shape) anthropic() bool { return s == antJSON || s == antSSE }
func (s shape) ollama() bool    { return s == ollama || s == ollSSE }

func (s shape) spec() string {
	switch {
	case s.anthropic():
		return "anthropic:claude-sonnet-4-5"
	case s.ollama():
		return "ollama:qwen2.5"
	}
	return "openai:gpt-4o"
}

func (s shape) path() string {
	if s.anthropic() {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// providerYAML configures the shape's provider to send to url.
func (s shape) providerYAML(url, timeouts string) string {
	switch {
	case s.anthropic():
		return fmt.Sprintf("  anthropic: {base_url: %q, api_key: k-test-anthropic, timeouts: {%s}}\n", url, timeouts)
	case s.ollama():
		return fmt.Sprintf("  ollama: {base_url: %q, timeouts: {%s}}\n", url, timeouts)
	}
	return fmt.Sprintf("  openai: {base_url: %q, api_key: k-test-openai, timeouts: {%s}}\n", url+"/v1", timeouts)
}

// call is one tool call of a scripted reply. obj sends its arguments as a
// JSON object rather than as JSON text (a vLLM/Ollama dialect).
type tcall struct {
	id, name, args string
	obj            bool
}

// act is what the server does with one request.
type act func(w http.ResponseWriter, r *http.Request, sh shape)

// reply answers with calls, ending for the reason given in OpenAI's words
// (tool_calls, length, content_filter), in the shape's own words and wire.
func reply(finish string, calls ...tcall) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		if sh.stream() {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, streamBody(sh, finish, calls, false))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, jsonBody(sh, finish, calls))
	}
}

// cut streams calls and ends the stream before the server says the reply
// is done: a connection cut in transit.
func cut(calls ...tcall) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, streamBody(sh, "", calls, true))
	}
}

// status answers with a failure (or a 200 that is one).
func status(code int, header, body string) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		if k, v, ok := strings.Cut(header, ": "); ok {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// hang accepts the request and never answers.
func hang() act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) { <-r.Context().Done() }
}

// stall starts a streamed reply and goes silent.
func stall() act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		w.Header().Set("Content-Type", "text/event-stream")
		head, _, _ := strings.Cut(streamBody(sh, "tool_calls", []tcall{finishCall("x")}, false), "\n\n")
		io.WriteString(w, head+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// drip sends a byte of white space every 20ms, never finishing the body:
// no gap is long enough to be idle, only the total bound stops it.
func drip() act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for {
			if _, err := io.WriteString(w, " "); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// halfBody sends the headers of a complete reply and half its body, then
// closes the connection.
func halfBody(calls ...tcall) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		body := jsonBody(sh, "tool_calls", calls)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
		buf.Flush()
	}
}

// words answers with text only, ending for the reason given in OpenAI's
// words.
func words(finish, text string) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		t, _ := json.Marshal(text)
		w.Header().Set("Content-Type", "application/json")
		if sh.anthropic() {
			fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":%s}],"stop_reason":%q,"usage":{"input_tokens":100,"output_tokens":9}}`, t, anthropicStop(finish))
			return
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109}}`, t, finish)
	}
}

// abrupt starts streaming calls and drops the connection mid-body, with no
// end to the chunked encoding: a connection reset in transit.
func abrupt(calls ...tcall) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		body := streamBody(sh, "tool_calls", calls, false)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		half := body[:len(body)/2]
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(half), half)
		buf.Flush()
	}
}

// splitName streams one call whose name comes in two fragments.
func splitName(c tcall) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		w.Header().Set("Content-Type", "text/event-stream")
		head := c.name[:len(c.name)/2]
		args, _ := json.Marshal(c.args)
		for _, d := range []string{
			fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, c.id, head),
			fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"name":%q}}]}`, c.name[len(head):]),
			fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%s}}]}`, args),
		} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, oaiTail("tool_calls"))
	}
}

// anthropicStop is Anthropic's word for an OpenAI finish reason.
func anthropicStop(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	case "pause_turn", "error":
		return finish // Anthropic's own word (or a server's), sent as it is
	}
	return "tool_use"
}

func jsonBody(sh shape, finish string, calls []tcall) string {
	if sh.anthropic() {
		var blocks []string
		for _, c := range calls {
			blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, c.id, c.name, c.args))
		}
		return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"usage":{"input_tokens":100,"output_tokens":9}}`,
			strings.Join(blocks, ","), anthropicStop(finish))
	}
	var tcs []string
	for _, c := range calls {
		args, _ := json.Marshal(c.args)
		if c.obj {
			args = []byte(c.args)
		}
		id := ""
		if c.id != "" {
			id = fmt.Sprintf(`"id":%q,`, c.id)
		}
		tcs = append(tcs, fmt.Sprintf(`{%s"type":"function","function":{"name":%q,"arguments":%s}}`, id, c.name, args))
	}
	return fmt.Sprintf(`{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[%s]},"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109}}`,
		strings.Join(tcs, ","), finish)
}

func oaiTail(finish string) string {
	return fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish) +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":9,\"total_tokens\":109}}\n\n" +
		"data: [DONE]\n\n"
}

// streamBody is the shape's event stream for calls, each call's arguments
// in two fragments; cut leaves out everything from the end of the reply on.
func streamBody(sh shape, finish string, calls []tcall, cut bool) string {
	var b strings.Builder
	if sh.anthropic() {
		ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}}}`)
		for i, c := range calls {
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, c.id, c.name))
			half := len(c.args) / 2
			for _, part := range []string{c.args[:half], c.args[half:]} {
				p, _ := json.Marshal(part)
				ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, p))
			}
			if cut && i == len(calls)-1 {
				return b.String()
			}
			ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		}
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":9}}`, anthropicStop(finish)))
		ev("message_stop", `{"type":"message_stop"}`)
		return b.String()
	}
	if sh == ollSSE {
		for _, c := range calls {
			args, _ := json.Marshal(c.args)
			fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen2.5\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"index\":0,\"id\":%q,\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":%s}}]},\"finish_reason\":null}]}\n\n", c.id, c.name, args)
		}
		if !cut {
			b.WriteString(oaiTail(finish))
		}
		return b.String()
	}
	for i, c := range calls {
		half := len(c.args) / 2
		first, _ := json.Marshal(c.args[:half])
		rest, _ := json.Marshal(c.args[half:])
		fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":%d,\"id\":%q,\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":%s}}]},\"finish_reason\":null}]}\n\n", i, c.id, c.name, first)
		fmt.Fprintf(&b, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":%s}}]},\"finish_reason\":null}]}\n\n", i, rest)
	}
	if !cut {
		b.WriteString(oaiTail(finish))
	}
	return b.String()
}

// The calls of the run every row is a variation of: remove keep/tmp.
func assignCall() tcall {
	return tcall{"a1", "assign_subtask", `{"app":"shell","subtask":"Remove keep/tmp."}`, false}
}
func execCall(id, cmd string) tcall {
	return tcall{id, "execute_command", fmt.Sprintf(`{"command":%q}`, cmd), false}
}
func finishCall(result string) tcall {
	return tcall{"f1", "finish_task", fmt.Sprintf(`{"result":%q}`, result), false}
}

// happy is the whole run after its first n requests.
func happy(from int) []act {
	all := []act{
		reply("tool_calls", assignCall()),
		reply("tool_calls", execCall("e1", "rm -rf keep/tmp")),
		reply("tool_calls", finishCall("keep/tmp removed")),
		reply("tool_calls", finishCall("done")),
	}
	return all[from:]
}

func then(first []act, rest ...act) []act { return append(append([]act(nil), first...), rest...) }

// faultServer serves one act per request, in order, and keeps what it was
// sent. Past the script it fails with a 500 the test will notice.
type faultServer struct {
	sh   shape
	acts []act
	mu   sync.Mutex
	reqs []seen
}

// seen is one request as the server read it.
type seen struct {
	path string
	body map[string]any
}

func (f *faultServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(b, &body)
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, seen{r.URL.Path, body})
	f.mu.Unlock()
	if n >= len(f.acts) {
		http.Error(w, `{"error":{"message":"the test script has no reply for this request"}}`, 500)
		return
	}
	f.acts[n](w, r, f.sh)
}

func (f *faultServer) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// toldNext renders what a request carries after the model's last reply:
// tool results as "tool[ID]: content" and user turns as "user: text",
// whatever the wire shape.
func toldNext(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	var out []string
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		role, _ := m["role"].(string)
		if role == "assistant" {
			break
		}
		var parts []string
		if id, ok := m["tool_call_id"].(string); ok {
			parts = append(parts, fmt.Sprintf("tool[%s]: %v", id, m["content"]))
		} else if s, ok := m["content"].(string); ok {
			parts = append(parts, role+": "+s)
		} else if blocks, ok := m["content"].([]any); ok {
			for _, bl := range blocks {
				bm, _ := bl.(map[string]any)
				switch bm["type"] {
				case "text":
					parts = append(parts, fmt.Sprintf("%s: %v", role, bm["text"]))
				case "tool_result":
					parts = append(parts, fmt.Sprintf("tool[%v]: %v", bm["tool_use_id"], bm["content"]))
				}
			}
		}
		out = append(parts, out...)
	}
	return strings.Join(out, "\n")
}

// fullListener is a loopback address whose accept queue is full, so that a
// new connection is never opened: a real connect timeout.
func fullListener(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for i := 0; i < 4; i++ {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return "http://" + addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("could not fill the accept queue of a loopback listener")
	return ""
}

type faultRow struct {
	name  string
	shape shape
	acts  []act
	// yaml adds to the config (timeouts go to the shape's provider).
	yaml, timeouts string
	// context is the agent.context preset, when not the default.
	context string
	// fallback, when set, is the script of an OpenAI-compatible server
	// configured as the model's fallback.
	fallback []act
	// connectTimeout points the provider at a listener that never accepts.
	connectTimeout bool

	status   fsm.State
	say      string // in the answer, the error or the budget
	requests int    // the primary server saw
	fbReqs   int    // the fallback server saw
	toldAt   int    // the request (from 0) whose new turns hold told
	told     []string
	ran      []string // execute_command lines that ran
	calls    []string // recorded model calls: finish reason, or error:KIND
	// switches is how many fallback switches were announced and recorded,
	// the first naming why.
	switches int
	why      string
	check    func(t *testing.T, reqs []seen, events []agent.Event)
}

var (
	five    = []string{"tool_calls", "tool_calls", "tool_calls", "tool_calls", "tool_calls"}
	rmTmp   = []string{"rm -rf keep/tmp"}
	cutWarn = []string{"none of it was run"}
)

func withFirst(first string, rest []string) []string {
	return append([]string{rest[0], first}, rest[2:]...)
}

func faultRows() []faultRow {
	// A reply that stops mid-command: were it run, keep would go.
	truncated := func(name string, sh shape, finish, want string) faultRow {
		return faultRow{name: name, shape: sh,
			acts:   then([]act{happy(0)[0], reply(finish, execCall("e0", "rm -rf keep"))}, happy(1)...),
			status: fsm.Finish, requests: 5, toldAt: 2, told: append([]string{want}, cutWarn...), ran: rmTmp,
			calls: withFirst(finish, five)}
	}
	cutStream := func(name string, sh shape) faultRow {
		return faultRow{name: name, shape: sh,
			acts:   then([]act{happy(0)[0], cut(execCall("e0", "rm -rf keep"))}, happy(1)...),
			status: fsm.Finish, requests: 5, toldAt: 2, told: []string{"connection ended before your last reply was complete", "none of it was run"},
			ran: rmTmp, calls: withFirst(llm.FinishIncomplete, five)}
	}
	retried := func(name string, sh shape, first act, kind string, timeouts string) faultRow {
		calls := append([]string{"error:" + kind}, five[1:]...)
		return faultRow{name: name, shape: sh, acts: then([]act{first}, happy(0)...), timeouts: timeouts,
			status: fsm.Finish, requests: 5, ran: rmTmp, calls: calls}
	}
	tooLong := status(400, "", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`)
	loading := status(503, "", `{"error":{"message":"the model is loading","type":"server_error"}}`)
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	return []faultRow{
		// Truncation: nothing of a cut reply runs; the model is told why.
		truncated("length", oaiJSON, "length", "cut off at the output token limit"),
		truncated("length streamed", oaiSSE, "length", "cut off at the output token limit"),
		truncated("max_tokens", antJSON, "length", "cut off at the output token limit"),
		truncated("max_tokens streamed", antSSE, "length", "cut off at the output token limit"),
		truncated("length", ollama, "length", "cut off at the output token limit"),
		truncated("content_filter", oaiJSON, "content_filter", "content filter stopped your last reply"),
		truncated("refusal", antJSON, "content_filter", "content filter stopped your last reply"),
		truncated("length streamed", ollSSE, "length", "cut off at the output token limit"),
		truncated("content_filter streamed", oaiSSE, "content_filter", "content filter stopped your last reply"),
		// Any other end is not a normal one either: a complete call that
		// ends with "error" (or a reason no one has seen yet) does not run.
		truncated("error", oaiJSON, "error", `did not end normally (finish reason "error")`),
		truncated("error streamed", oaiSSE, "error", `did not end normally (finish reason "error")`),
		truncated("error", ollama, "error", `did not end normally (finish reason "error")`),
		truncated("error streamed", ollSSE, "error", `did not end normally (finish reason "error")`),
		truncated("an unknown reason", oaiJSON, "gone_fishing", `did not end normally (finish reason "gone_fishing")`),
		truncated("pause_turn", antJSON, "pause_turn", `did not end normally (finish reason "pause_turn")`),
		truncated("pause_turn streamed", antSSE, "pause_turn", `did not end normally (finish reason "pause_turn")`),
		// A reply in words only ends an app agent with the words as its
		// answer: a cut one must not.
		{name: "max_tokens in words", shape: antJSON,
			acts:   then(happy(0)[:2], words("length", "I removed keep/tmp and then I will che"), happy(2)[0], happy(3)[0]),
			status: fsm.Finish, say: "done", requests: 5, ran: rmTmp, toldAt: 3, told: append([]string{"cut off at the output token limit"}, cutWarn...),
			calls: []string{"tool_calls", "tool_calls", "length", "tool_calls", "tool_calls"},
			check: func(t *testing.T, _ []seen, events []agent.Event) {
				for _, e := range events {
					if e.Kind == agent.EventAgentEnd && e.Note != nil && strings.Contains(e.Note.Result, "I will che") {
						t.Errorf("the cut words became the app agent's answer: %q", e.Note.Result)
					}
				}
			}},
		cutStream("cut stream", ollSSE),
		cutStream("cut stream", oaiSSE),
		cutStream("cut stream", antSSE),

		// Dialects.
		{name: "arguments as an object", shape: ollama,
			acts:   then(happy(0)[:1], reply("tool_calls", tcall{"e1", "execute_command", `{"command":"rm -rf keep/tmp"}`, true}), happy(2)[0], happy(3)[0]),
			status: fsm.Finish, requests: 4, ran: rmTmp, calls: five[1:]},
		{name: "a call without an id", shape: oaiJSON,
			acts:   then(happy(0)[:1], reply("tool_calls", execCall("", "rm -rf keep/tmp")), happy(2)[0], happy(3)[0]),
			status: fsm.Finish, requests: 4, ran: rmTmp, calls: five[1:], toldAt: 2, told: []string{"tool[call_1]: "}},
		{name: "two calls sharing an id", shape: oaiJSON,
			acts:   then(happy(0)[:1], reply("tool_calls", execCall("dup", "echo one"), execCall("dup", "echo two")), happy(2)[0], happy(3)[0]),
			status: fsm.Finish, requests: 4, ran: []string{"echo one", "echo two"}, calls: five[1:], toldAt: 2,
			check: func(t *testing.T, reqs []seen, _ []agent.Event) {
				told := toldNext(reqs[2].body)
				one, two := strings.Index(told, "tool[dup]: "), strings.Index(told, "tool[call_2]: ")
				if one < 0 || two < 0 || !strings.Contains(told[one:two], "one") || !strings.Contains(told[two:], "two") || strings.Contains(told[two:], "one") {
					t.Errorf("each result must answer its own call; the model was told:\n%s", told)
				}
			}},
		{name: "error body with status 200, retried", shape: oaiJSON,
			acts:   then([]act{status(200, "", `{"error":{"message":"model is overloaded","type":"server_error"}}`)}, happy(0)...),
			status: fsm.Finish, requests: 5, ran: rmTmp, calls: append([]string{"error:server"}, five[1:]...)},
		{name: "error body with status 200, said", shape: ollama,
			acts:   []act{status(200, "", `{"error":{"message":"model \"qwen2.5\" not found, try pulling it first","type":"invalid_request_error"}}`)},
			status: fsm.Error, say: `model "qwen2.5" not found, try pulling it first`, requests: 1, calls: []string{"error:bad_request"}},
		{name: "two calls in one stream, both at index 0", shape: ollSSE,
			acts:   then(happy(0)[:1], reply("tool_calls", execCall("e1", "echo one"), execCall("e2", "echo two")), happy(2)[0], happy(3)[0]),
			status: fsm.Finish, requests: 4, ran: []string{"echo one", "echo two"}, calls: five[1:], toldAt: 2,
			check: func(t *testing.T, reqs []seen, _ []agent.Event) {
				told := toldNext(reqs[2].body)
				one, two := strings.Index(told, "tool[e1]: "), strings.Index(told, "tool[e2]: ")
				if one < 0 || two < one || !strings.Contains(told[one:two], "one") || !strings.Contains(told[two:], "two") {
					t.Errorf("each result must answer its own call; the model was told:\n%s", told)
				}
			}},
		{name: "a name split across chunks", shape: oaiSSE,
			acts:   then(happy(0)[:1], splitName(execCall("e1", "rm -rf keep/tmp")), happy(2)[0], happy(3)[0]),
			status: fsm.Finish, requests: 4, ran: rmTmp, calls: five[1:]},

		// Rate limits and failing servers: one policy, capped waits.
		{name: "Retry-After beyond the cap", shape: oaiJSON,
			acts:   []act{status(429, "Retry-After: 3600", `{"error":{"message":"Rate limit reached","type":"requests"}}`)},
			status: fsm.Error, say: "asks to wait 1h0m0s before retrying, longer than the 2m0s Saucer waits", requests: 1, calls: []string{"error:rate_limit"}},
		{name: "Retry-After beyond the cap", shape: antJSON,
			acts:   []act{status(429, "Retry-After: 3600", `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)},
			status: fsm.Error, say: "longer than the 2m0s Saucer waits", requests: 1, calls: []string{"error:rate_limit"}},
		{name: "Retry-After honoured and shown", shape: oaiSSE,
			acts:   then([]act{status(429, "Retry-After-Ms: 120", `{"error":{"message":"Rate limit reached","type":"requests"}}`)}, happy(0)...),
			status: fsm.Finish, requests: 5, ran: rmTmp, calls: append([]string{"error:rate_limit"}, five[1:]...),
			check: func(t *testing.T, _ []seen, events []agent.Event) {
				var waits []time.Duration
				for _, e := range events {
					if e.Kind == agent.EventRetry {
						waits = append(waits, e.Duration)
					}
				}
				if len(waits) != 1 || waits[0] < 120*time.Millisecond {
					t.Errorf("retry waits %v, want one of at least the 120ms asked", waits)
				}
			}},
		retried("a body closed midway", antJSON, halfBody(assignCall()), "server", ""),
		retried("a body closed midway", oaiJSON, halfBody(assignCall()), "server", ""),
		retried("a stream dropped mid-body", oaiSSE, abrupt(assignCall()), "server", ""),
		retried("a stream dropped mid-body", antSSE, abrupt(assignCall()), "server", ""),
		retried("a stream dropped mid-body", ollSSE, abrupt(assignCall()), "server", ""),
		retried("500", oaiJSON, status(500, "", `{"error":{"message":"internal error","type":"server_error"}}`), "server", ""),
		retried("529 overloaded", antSSE, status(529, "", overloaded), "server", ""),
		retried("429 without a wait", ollama, status(429, "", `{"error":{"message":"too many requests"}}`), "rate_limit", ""),
		{name: "503 until the retries are spent", shape: ollama,
			acts:   []act{status(503, "", `{"error":"server busy"}`), status(503, "", `{"error":"server busy"}`), status(503, "", `{"error":"server busy"}`)},
			status: fsm.Error, say: "gave up after 2 retries", requests: 3, calls: []string{"error:server", "error:server", "error:server"}},

		// Timeouts: typed, retried, and they name the bound.
		{name: "connect timeout", shape: oaiJSON, connectTimeout: true, timeouts: "connect: 150ms",
			status: fsm.Error, say: "connect 150ms", requests: 0, calls: []string{"error:timeout", "error:timeout", "error:timeout"}},
		// The bounds hold for the happy requests after the fault too: they
		// leave a loaded machine room (150ms timed out happy requests at
		// load 45).
		retried("first byte timeout", antJSON, hang(), "timeout", "first_byte: 1s"),
		retried("first byte timeout", oaiJSON, hang(), "timeout", "first_byte: 1s"),
		retried("idle timeout", oaiSSE, stall(), "timeout", "idle: 1s"),
		retried("idle timeout", antSSE, stall(), "timeout", "idle: 1s"),
		retried("total timeout", ollama, drip(), "timeout", "total: 2s"),

		// Fallback: a model that is down, or too small, is passed over.
		{name: "fallback when unavailable", shape: oaiJSON,
			acts:     []act{loading, loading, loading, loading},
			fallback: happy(0)[:2], yaml: "budget: {model_calls: 2}\n",
			status: fsm.Fail, say: "2 model calls", requests: 4, fbReqs: 2, ran: rmTmp, calls: five[:2],
			switches: 2, why: "openai:gpt-4o is unavailable, asking openai-compatible:small instead: openai: server (HTTP 503): the model is loading"},
		{name: "fallback when the context is too small", shape: antJSON,
			acts:     []act{tooLong, tooLong, tooLong, tooLong},
			fallback: happy(0), yaml: fmt.Sprintf("tools: {shell: {description: %q}}\n", strings.Repeat("Runs shell commands. ", 40)),
			// The host's first request is too long; the app's first is
			// shorter and is tried once; longer ones skip it. (Under the
			// window preset, whose app agents are offered read_artifact
			// only once there are artifacts, and with a long description
			// of the shell app, which only the host's prompt lists, the
			// app's first request is the shorter by a margin that the
			// length of a tool's description does not undo.)
			context: "window",
			status:  fsm.Finish, requests: 2, fbReqs: 4, ran: rmTmp, calls: five[1:],
			switches: 2, why: "anthropic:claude-sonnet-4-5 cannot take a request this long, asking openai-compatible:small instead: anthropic: context length (HTTP 400)"},

		// Budgets end the task with their own status and what was spent.
		{name: "token budget", shape: antSSE, acts: happy(0), yaml: "budget: {tokens: 300}\n",
			status: fsm.Fail, say: "the budget of 300 tokens is spent (used 3 model calls", requests: 3, ran: rmTmp, calls: five[:3]},
		{name: "model call budget", shape: ollama, acts: happy(0), yaml: "budget: {model_calls: 1}\n",
			status: fsm.Fail, say: "the budget of 1 model calls is spent", requests: 1, calls: five[:1]},
	}
}

func TestFaultMatrix(t *testing.T) {
	for _, row := range faultRows() {
		t.Run(string(row.shape)+"/"+row.name, func(t *testing.T) {
			t.Parallel()
			srv := &faultServer{sh: row.shape, acts: row.acts}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			url := hs.URL
			if row.connectTimeout {
				url = fullListener(t)
			}
			yaml := fmt.Sprintf("model: %s\nmode: tools\nagent: {retry_backoff: 1ms, max_retries: 2}\n%sproviders:\n%s",
				row.shape.spec(), row.yaml, row.shape.providerYAML(url, row.timeouts))
			// Tools mode for every shape (Ollama's default is json mode).
			models := fmt.Sprintf("models:\n  %q: {mode: tools}\n", row.shape.spec())
			var fb *faultServer
			if row.fallback != nil {
				fb = &faultServer{sh: oaiJSON, acts: row.fallback}
				fhs := httptest.NewServer(fb)
				defer fhs.Close()
				yaml += fmt.Sprintf("  openai-compatible: {base_url: %q}\n", fhs.URL+"/v1")
				models = fmt.Sprintf("models:\n  %q: {mode: tools, fallbacks: [\"openai-compatible:small\"]}\n", row.shape.spec())
			}
			yaml += models
			cfg, err := config.FromYAML([]byte(yaml))
			if err != nil {
				t.Fatalf("%v\n%s", err, yaml)
			}
			cfg.Agent.Context.Preset = row.context
			run := runKeepTask(t, cfg, "tools", session.Options{OnChunk: onChunk(row.shape)})
			out, ran, events, tr := run.out, run.ran, run.events, run.tr

			// How it ended.
			said := out.Answer + " | " + out.Budget
			if out.Err != nil {
				said += " | " + out.Err.Error()
			}
			if out.Status != row.status || !strings.Contains(said, row.say) {
				t.Errorf("ended %s: %s\nwant %s saying %q", out.Status, said, row.status, row.say)
			}
			// Nothing of a cut reply ran; only what was meant to.
			if run.kept != nil {
				t.Errorf("%v: a destructive command ran", run.kept)
			}
			if fmt.Sprint(ran) != fmt.Sprint(row.ran) {
				t.Errorf("ran %q, want %q", ran, row.ran)
			}
			// What the servers saw.
			reqs := srv.requests()
			if len(reqs) != row.requests {
				t.Errorf("the server saw %d requests, want %d", len(reqs), row.requests)
			}
			for i, r := range reqs {
				if r.path != row.shape.path() || (r.body["stream"] == true) != row.shape.stream() {
					t.Errorf("request %d: %s stream=%v, not the %s wire shape", i, r.path, r.body["stream"], row.shape)
				}
			}
			if fb != nil && len(fb.requests()) != row.fbReqs {
				t.Errorf("the fallback saw %d requests, want %d", len(fb.requests()), row.fbReqs)
			}
			// What the model was told next.
			if len(row.told) > 0 {
				all := reqs
				if fb != nil {
					all = fb.requests()
				}
				if row.toldAt >= len(all) {
					t.Fatalf("no request %d to check what the model was told", row.toldAt)
				}
				told := toldNext(all[row.toldAt].body)
				for _, w := range row.told {
					if !strings.Contains(told, w) {
						t.Errorf("request %d told the model:\n%s\nwant it to say %q", row.toldAt, told, w)
					}
				}
			}
			// What was recorded.
			var calls []string
			for _, c := range tr.Calls() {
				switch {
				case c.Error != nil:
					calls = append(calls, "error:"+c.Error.Kind)
				case c.Response != nil:
					calls = append(calls, c.Response.FinishReason)
				}
			}
			// Every reply's tokens count, a cut one's too: a stream cut
			// before its usage has none to give, and Saucer counts it
			// (marked estimated).
			replies, counted := 0, 0
			for _, c := range tr.Calls() {
				switch {
				case c.Response == nil:
				case c.Response.FinishReason != llm.FinishIncomplete:
					replies++
				case !c.Response.Usage.Estimated || c.Response.Usage.PromptTokens == 0:
					t.Errorf("a cut reply's usage %+v, want Saucer's count", c.Response.Usage)
				default:
					counted += c.Response.Usage.CompletionTokens
				}
			}
			if out.Usage.CompletionTokens != 9*replies+counted {
				t.Errorf("completion tokens %d, want %d for %d replies and %d counted", out.Usage.CompletionTokens, 9*replies+counted, replies, counted)
			}
			if fmt.Sprint(calls) != fmt.Sprint(row.calls) {
				t.Errorf("recorded calls %q, want %q", calls, row.calls)
			}
			var shown, recorded []string
			for _, e := range events {
				if e.Kind == agent.EventFallback {
					shown = append(shown, e.Err.Error())
				}
			}
			for _, c := range tr.Calls() {
				recorded = append(recorded, c.Fallbacks...)
			}
			if len(shown) != row.switches || fmt.Sprint(shown) != fmt.Sprint(recorded) || row.switches > 0 && !strings.HasPrefix(shown[0], row.why) {
				t.Errorf("fallback switches shown %q, recorded %q; want %d, the first starting %q", shown, recorded, row.switches, row.why)
			}
			if end := tr.End(); end == nil || end.Status != string(out.Status) {
				t.Errorf("recorded end %+v, want status %s", end, out.Status)
			}
			if row.check != nil {
				row.check(t, reqs, events)
			}
		})
	}
}

// onChunk streams for the streaming shapes (as saucer run does on a
// terminal), and leaves the others to Complete.
func onChunk(sh shape) func(string, llm.Chunk) {
	if !sh.stream() {
		return nil
	}
	return func(string, llm.Chunk) {}
}
