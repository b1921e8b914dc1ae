package evals_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// The replay corpus: real runs, against model servers on loopback in
// OpenAI's and Anthropic's wire shapes, that end in a provider error or a
// budget stop at each step of the run, recorded and then replayed offline.
// Every one must replay to the same end at the same point. Then each
// complete recording, cut as a full disk cuts it (after any whole line) or
// torn in the middle of a line, must replay as incomplete up to where it
// stops.

// wireShape is a provider's wire: OpenAI's chat completions or Anthropic's
// messages.
type wireShape string

const (
	wireOpenAI    wireShape = "openai"
	wireAnthropic wireShape = "anthropic"
)

// step is what the server does with one request.
type step func(w http.ResponseWriter, r *http.Request, sh wireShape)

// call is a tool call of a scripted reply; args is JSON.
type call struct{ id, name, args string }

func okReply(calls ...call) step {
	return func(w http.ResponseWriter, r *http.Request, sh wireShape) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, wireBody(sh, calls))
	}
}

func wireBody(sh wireShape, calls []call) string {
	var parts []string
	for _, c := range calls {
		if sh == wireAnthropic {
			parts = append(parts, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, c.id, c.name, c.args))
		} else {
			parts = append(parts, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}`, c.id, c.name, c.args))
		}
	}
	if sh == wireAnthropic {
		return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":9}}`, strings.Join(parts, ","))
	}
	return fmt.Sprintf(`{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[%s]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109}}`, strings.Join(parts, ","))
}

func failWith(code int, header, openaiBody, anthropicBody string) step {
	return func(w http.ResponseWriter, r *http.Request, sh wireShape) {
		if k, v, ok := strings.Cut(header, ": "); ok {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if sh == wireAnthropic {
			io.WriteString(w, anthropicBody)
		} else {
			io.WriteString(w, openaiBody)
		}
	}
}

// cutBody sends the headers of a whole reply and half its body.
func cutBody(w http.ResponseWriter, r *http.Request, sh wireShape) {
	body := wireBody(sh, []call{{"x", "finish_task", `{"result":"x"}`}})
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
	buf.Flush()
}

// hangUp never answers: only the caller's end stops it.
func hangUp(w http.ResponseWriter, r *http.Request, sh wireShape) { <-r.Context().Done() }

// The run every scenario is a variation of: the host assigns, the app
// runs two commands and finishes, the host finishes.
func runSteps() []step {
	return []step{
		okReply(call{"a1", "assign_subtask", `{"app":"shell","subtask":"Say one, then two."}`}),
		okReply(call{"e1", "execute_command", `{"command":"echo one"}`}),
		okReply(call{"e2", "execute_command", `{"command":"echo two"}`}),
		okReply(call{"f1", "finish_task", `{"result":"said one and two"}`}),
		okReply(call{"f2", "finish_task", `{"result":"done"}`}),
	}
}

// scriptedServer serves one step per request, in order.
type scriptedServer struct {
	sh    wireShape
	steps []step
	mu    sync.Mutex
	n     int
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	n := s.n
	s.n++
	s.mu.Unlock()
	if n >= len(s.steps) {
		http.Error(w, `{"error":{"message":"the test script has no reply for this request"}}`, 500)
		return
	}
	s.steps[n](w, r, s.sh)
}

type scenario struct {
	name  string
	sh    wireShape
	steps []step
	yaml  string // budget etc.
	cost  bool   // price each reply at $0.001
}

// at replaces the run from request i on with fault.
func at(i int, fault ...step) []step { return append(runSteps()[:i], fault...) }

// then puts fault at request i and the rest of the run after it.
func thenRest(i int, fault ...step) []step {
	rest := runSteps()
	return append(append(rest[:i:i], fault...), rest[i:]...)
}

func corpus() []scenario {
	var out []scenario
	for _, sh := range []wireShape{wireOpenAI, wireAnthropic} {
		s500 := failWith(500, "", `{"error":{"message":"internal error","type":"server_error"}}`, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)
		s401 := failWith(401, "", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		tooLong := failWith(400, "", `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 210000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`)
		limited := failWith(429, "Retry-After: 3600", `{"error":{"message":"Rate limit reached","type":"requests"}}`, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)
		briefly := failWith(429, "Retry-After-Ms: 20", `{"error":{"message":"Rate limit reached","type":"requests"}}`, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)
		for i := range 5 {
			add := func(name string, steps []step) {
				out = append(out, scenario{name: fmt.Sprintf("%s/%s at request %d", sh, name, i+1), sh: sh, steps: steps})
			}
			add("500 after retries", at(i, s500, s500, s500))
			add("refused key", at(i, s401))
			add("context too long", at(i, tooLong))
			add("body cut after retries", at(i, cutBody, cutBody, cutBody))
			add("Retry-After beyond the cap", at(i, limited))
			add("500 then a reply", thenRest(i, s500))
			add("a short Retry-After", thenRest(i, briefly))
			budget := func(name, yaml string, cost bool) {
				out = append(out, scenario{name: fmt.Sprintf("%s/%s at call %d", sh, name, i+1), sh: sh, steps: runSteps(), yaml: yaml, cost: cost})
			}
			budget("model call budget", fmt.Sprintf("budget: {model_calls: %d}\n", i+1), false)
			budget("token budget", fmt.Sprintf("budget: {tokens: %d}\n", 109*(i+1)-5), false)
			budget("cost budget", fmt.Sprintf("budget: {cost_usd: %g}\n", 0.001*float64(i+1)-0.0005), true)
			out = append(out, scenario{name: fmt.Sprintf("%s/wall time budget in call %d", sh, i+1), sh: sh,
				steps: at(i, hangUp), yaml: "budget: {wall: 1s}\n"})
		}
	}
	return out
}

// record runs a scenario for real and records it; it returns the
// recording's directory and how the run ended.
func recordScenario(t *testing.T, sc scenario) (string, *agent.Outcome) {
	srv := httptest.NewServer(&scriptedServer{sh: sc.sh, steps: sc.steps})
	defer srv.Close()
	spec, prov := "openai:gpt-4o", fmt.Sprintf("  openai: {base_url: %q, api_key: k-test}\n", srv.URL+"/v1")
	if sc.sh == wireAnthropic {
		spec, prov = "anthropic:claude-sonnet-4-5", fmt.Sprintf("  anthropic: {base_url: %q, api_key: k-test}\n", srv.URL)
	}
	yaml := fmt.Sprintf("model: %s\nmode: tools\nagent: {retry_backoff: 1ms, max_retries: 2}\n%sproviders:\n%s", spec, sc.yaml, prov)
	cfg, err := config.FromYAML([]byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	var opts session.Options
	if sc.cost {
		// 100 prompt tokens a reply at $10 a million: $0.001.
		opts.Prices = map[string]price.Price{cfg.Model: {Prompt: 10}}
	}
	return recordRun(t, cfg, t.TempDir(), "say one, then two", opts)
}

// replayVerdict replays a recording offline and says how it compares:
// "matches", "incomplete: ..." or "DIVERGED: ...".
func replayVerdict(t *testing.T, dir string) string {
	tr, err := trajectory.Read(dir)
	if err != nil {
		return "DIVERGED: unreadable: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := evals.Replay(ctx, tr, evals.ReplayOptions{})
	if err != nil {
		return "DIVERGED: " + err.Error()
	}
	if res.Diverged() {
		return "DIVERGED: " + res.Report()
	}
	if res.Incomplete != "" {
		return "incomplete: " + res.Incomplete
	}
	return "matches"
}

// TestReplayReproducesEveryEnd records the corpus and replays each
// recording: every run that ended in a provider error or a budget stop
// replays to the same end at the same point.
func TestReplayReproducesEveryEnd(t *testing.T) {
	scs := corpus()
	var (
		mu       sync.Mutex
		verdicts = map[string]string{}
		ends     = map[string]int{}
	)
	t.Run("corpus", func(t *testing.T) {
		for _, sc := range scs {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				dir, out := recordScenario(t, sc)
				v := replayVerdict(t, dir)
				mu.Lock()
				verdicts[sc.name] = v
				end := string(out.Status)
				if out.Budget != "" {
					end += " (budget)"
				}
				ends[end]++
				mu.Unlock()
				if v != "matches" {
					t.Errorf("recorded end %s %q %v\nreplay: %s", out.Status, out.Answer, out.Err, v)
				}
			})
		}
	})
	matched := 0
	for _, v := range verdicts {
		if v == "matches" {
			matched++
		}
	}
	var kinds []string
	for k, n := range ends {
		kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("%d of %d recordings replay to the same end; the runs ended %s", matched, len(scs), strings.Join(kinds, ", "))
	if matched != len(scs) || len(scs) < 100 {
		t.Errorf("%d of %d recordings replay to the same end", matched, len(scs))
	}
	if ends["ERROR"] < 40 || ends["FAIL (budget)"] < 30 {
		t.Errorf("the corpus ended %v: it must hold provider errors and budget stops", ends)
	}
}

// TestReplayOfACutRecording cuts complete recordings as a full disk cuts
// them (after a whole line: the writer drops the part of a line that did
// not fit and writes no more) and tears them in the middle of a line (a
// crash): each replays up to where it stops and says so, without a
// divergence.
func TestReplayOfACutRecording(t *testing.T) {
	for _, sh := range []wireShape{wireOpenAI, wireAnthropic} {
		sh := sh
		t.Run(string(sh), func(t *testing.T) {
			t.Parallel()
			dir, out := recordScenario(t, scenario{name: "whole run", sh: sh, steps: runSteps()})
			if !out.OK() {
				t.Fatalf("the run ended %s %q %v", out.Status, out.Answer, out.Err)
			}
			data, err := os.ReadFile(filepath.Join(dir, trajectory.EventsFile))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(data, []byte("\n"))
			lines = lines[:len(lines)-1] // after the last newline: nothing
			cuts := 0
			for n := 1; n < len(lines); n++ { // keep n whole lines, lose the rest
				for _, torn := range []int{0, len(lines[n]) / 2} {
					cut := filepath.Join(t.TempDir(), "cut")
					os.MkdirAll(cut, 0o755)
					os.CopyFS(cut, os.DirFS(dir))
					kept := append(bytes.Join(lines[:n], nil), lines[n][:torn]...)
					os.WriteFile(filepath.Join(cut, trajectory.EventsFile), kept, 0o644)
					v := replayVerdict(t, cut)
					cuts++
					want := fmt.Sprintf("stops after event %d", n)
					if !strings.HasPrefix(v, "incomplete: ") || !strings.Contains(v, want) || (torn > 0) != strings.Contains(v, "torn") {
						t.Errorf("kept %d lines and %d bytes of the next: %s\nwant incomplete, saying it %s", n, torn, v, want)
					}
				}
			}
			t.Logf("%d cuts of a %d-line recording replay as incomplete", cuts, len(lines))
		})
	}
}
