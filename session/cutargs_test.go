package session_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	lcollama "github.com/tmc/langchaingo/llms/ollama"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/langchain"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// A tool call whose arguments stop inside a string: were it completed and
// run, `rm -rf keep` would take keep/precious.txt with it.
const cutRm = `{"command":"rm -rf keep`

// jsonWords answers a json-mode reply: text only, in the shape's own wire,
// ending for the reason given in OpenAI's words (empty: none said).
func jsonWords(finish, content string) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		c, _ := json.Marshal(content)
		fin := "null"
		if finish != "" {
			fin = fmt.Sprintf("%q", finish)
		}
		if sh.stream() {
			w.Header().Set("Content-Type", "text/event-stream")
			half := len(content) / 2
			for _, part := range []string{content[:half], content[half:]} {
				p, _ := json.Marshal(part)
				fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen2.5\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s},\"finish_reason\":null}]}\n\n", p)
			}
			io.WriteString(w, oaiTail(finish))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"qwen2.5","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":%s}],"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109}}`, c, fin)
	}
}

// The json-mode run: assign, remove keep/tmp, finish, finish.
var jsonHappy = []string{
	`{"thought":"one app","status":"ASSIGN","actions":[{"function":"assign_subtask","arguments":{"app":"shell","subtask":"Remove keep/tmp."}}]}`,
	`{"thought":"remove it","status":"CONTINUE","actions":[{"function":"execute_command","arguments":{"command":"rm -rf keep/tmp"}}]}`,
	`{"thought":"gone","status":"FINISH","actions":[],"result":"keep/tmp removed"}`,
	`{"thought":"done","status":"FINISH","actions":[],"result":"done"}`,
}

// A json-mode reply cut inside its action's arguments.
const jsonCut = `{"thought":"remove it","status":"CONTINUE","actions":[{"function":"execute_command","arguments":{"command":"rm -rf keep`

func jsonRun(finish string) []act {
	w := func(s string) act { return jsonWords("stop", s) }
	return []act{w(jsonHappy[0]), jsonWords(finish, jsonCut), w(jsonHappy[1]), w(jsonHappy[2]), w(jsonHappy[3])}
}

// cutRun is a session that meets one cut reply and must go on without
// running any of it: what it ran, what the model was told after the cut
// reply, and the recording.
type cutRun struct {
	out     *agent.Outcome
	ran     []string
	told    string // the turns after the model's last reply in request 3
	reqs    int
	calls   []trajectory.Call
	precise bool // keep/precious.txt is still there, whole
}

func runCut(t *testing.T, sh shape, acts []act, mode string, model llm.Model) cutRun {
	t.Helper()
	srv := &faultServer{sh: sh, acts: acts}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	yaml := fmt.Sprintf("model: %s\nmode: %s\nagent: {retry_backoff: 1ms, max_retries: 2}\nproviders:\n%smodels:\n  %q: {mode: %s}\n",
		sh.spec(), mode, sh.providerYAML(hs.URL, ""), sh.spec(), mode)
	cfg, err := config.FromYAML([]byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	run := runKeepTask(t, cfg, mode, session.Options{Model: model, OnChunk: onChunk(sh)})
	r := cutRun{out: run.out, ran: run.ran, reqs: len(srv.requests()), calls: run.tr.Calls(), precise: run.kept == nil}
	if len(r.calls) > 2 {
		req := r.calls[2].Request
		var told []string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != llm.RoleAssistant; i-- {
			told = append([]string{string(req.Messages[i].Role) + ": " + req.Messages[i].Content}, told...)
		}
		r.told = strings.Join(told, "\n")
	}
	return r
}

// check asserts the one outcome every row must have: the cut reply ran in
// no part, the model was asked again with the reason, and the run went on
// to do what was meant.
func (r cutRun) check(t *testing.T, told string) {
	t.Helper()
	if !r.precise {
		t.Fatalf("keep/precious.txt is gone or changed: the cut command ran (ran %q)", r.ran)
	}
	if fmt.Sprint(r.ran) != fmt.Sprint([]string{"rm -rf keep/tmp"}) {
		t.Errorf("ran %q, want only the whole command", r.ran)
	}
	if r.out.Status != fsm.Finish {
		t.Errorf("ended %s (%s, %v), want FINISH after asking again", r.out.Status, r.out.Answer, r.out.Err)
	}
	if r.reqs != 5 || len(r.calls) != 5 {
		t.Errorf("%d requests, %d recorded calls; want 5: the cut reply asked again once", r.reqs, len(r.calls))
	}
	for _, w := range []string{told, "none of"} {
		if !strings.Contains(r.told, w) {
			t.Errorf("after the cut reply the model was told:\n%s\nwant it to say %q", r.told, w)
		}
	}
}

// TestCutArgumentsNeverRun: in every provider shape, streamed or not, and
// whatever the finish reason says (servers report a cut at the token limit
// as stop, tool_calls, error or nothing), a tool call whose arguments stop
// inside a string is refused whole and the model asked again; the real
// file the cut `rm -rf keep` would remove survives.
func TestCutArgumentsNeverRun(t *testing.T) {
	cut := tcall{"e0", "execute_command", cutRm, false}
	type row struct {
		sh     shape
		finish string // OpenAI's words; anthropicStop maps them
		told   string
	}
	var rows []row
	for _, sh := range []shape{oaiJSON, oaiSSE, ollama, ollSSE} {
		for _, f := range []string{"tool_calls", "stop", "length", "error", ""} {
			told := "were cut off"
			switch {
			case f == "length":
				told = "cut off at the output token limit"
			case f == "error":
				// Refused for its end before its arguments are read.
				told = `did not end normally (finish reason "error")`
			case f == "" && sh.stream():
				told = "connection ended before your last reply was complete"
			}
			rows = append(rows, row{sh, f, told})
		}
	}
	// Anthropic's stream: max_tokens, and the cut reported as tool_use or
	// end_turn (langchaingo refuses the input whole, the stop unread).
	for _, f := range []string{"length", "tool_calls", "stop"} {
		rows = append(rows, row{antSSE, f, "cut off inside a tool call's arguments"})
	}
	for _, r := range rows {
		t.Run(fmt.Sprintf("%s/finish=%q", r.sh, r.finish), func(t *testing.T) {
			t.Parallel()
			acts := then([]act{happy(0)[0], reply(r.finish, cut)}, happy(1)...)
			run := runCut(t, r.sh, acts, "tools", nil)
			run.check(t, r.told)
			// The recording shows the refused reply as the model sent it.
			if got := run.calls[1].Response; !r.sh.anthropic() && (got == nil || len(got.Message.ToolCalls) != 1 || got.Message.ToolCalls[0].Arguments != cutRm) {
				t.Errorf("recorded call 2: %+v, want the cut arguments as sent", got)
			}
		})
	}
}

// TestCutJSONReplyNeverRuns: the same in json mode, where the action is
// in the reply's text: over Ollama's OpenAI-compatible API, streamed or
// not, and through langchaingo's Ollama client (which reports no finish
// reason at all).
func TestCutJSONReplyNeverRuns(t *testing.T) {
	for _, sh := range []shape{ollama, ollSSE} {
		for _, f := range []string{"stop", "length", ""} {
			t.Run(fmt.Sprintf("%s/finish=%q", sh, f), func(t *testing.T) {
				t.Parallel()
				told := `cut off inside "actions"`
				switch {
				case f == "length":
					told = "cut off at the output token limit"
				case f == "" && sh.stream():
					told = "connection ended before your last reply was complete"
				}
				run := runCut(t, sh, jsonRun(f), "json", nil)
				run.check(t, told)
			})
		}
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("langchaingo-ollama/stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			replies := append([]string{jsonHappy[0], jsonCut}, jsonHappy[1:]...)
			srv := &ollamaChat{replies: replies}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			inner, err := lcollama.New(lcollama.WithServerURL(hs.URL), lcollama.WithModel("qwen2.5"))
			if err != nil {
				t.Fatal(err)
			}
			sh := ollama
			if stream {
				sh = ollSSE
			}
			run := runCut(t, sh, nil, "json", langchain.New(inner, "ollama"))
			run.reqs = srv.count()
			run.check(t, `cut off inside "actions"`)
		})
	}
}

// ollamaChat is Ollama's own /api/chat, answering each request with the
// next reply: one JSON object, or, streamed, NDJSON lines of a few bytes
// and a last one with done.
type ollamaChat struct {
	mu      sync.Mutex
	n       int
	replies []string
}

func (o *ollamaChat) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

func (o *ollamaChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	o.mu.Lock()
	n := o.n
	o.n++
	o.mu.Unlock()
	if r.URL.Path != "/api/chat" || n >= len(o.replies) {
		http.Error(w, `{"error":"no reply scripted"}`, 500)
		return
	}
	msg := func(content string, done bool) string {
		b, _ := json.Marshal(map[string]any{"model": "qwen2.5", "created_at": "2025-01-01T00:00:00Z",
			"message": map[string]any{"role": "assistant", "content": content}, "done": done,
			"prompt_eval_count": 100, "eval_count": 9})
		return string(b) + "\n"
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	text := o.replies[n]
	if !req.Stream {
		io.WriteString(w, msg(text, true))
		return
	}
	bw := bufio.NewWriter(w)
	for len(text) > 0 {
		k := min(7, len(text))
		bw.WriteString(msg(text[:k], false))
		text = text[k:]
	}
	bw.WriteString(msg("", true))
	bw.Flush()
}
