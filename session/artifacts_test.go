package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// scriptedWire is an OpenAI chat-completions server on loopback whose
// replies are computed from the requests (a handle read from one goes into
// the next reply); it keeps every request body as sent.
type scriptedWire struct {
	mu     sync.Mutex
	bodies [][]byte
	next   func(n int, body []byte) (name, args string)
}

func (s *scriptedWire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	name, args := s.next(n, b)
	if name == "" {
		http.Error(w, `{"error":{"message":"the test has no reply for this request"}}`, 500)
		return
	}
	a, _ := json.Marshal(args)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109}}`,
		n, n, name, a)
}

func (s *scriptedWire) sent() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

var handleRE = regexp.MustCompile(`\[artifact ([0-9a-f]{12}):`)

// A huge tool output (3.4 MB; the device client refuses a result over
// 4 MiB, client.DefaultMaxResultBytes) and a 100 KB argument the model
// wrote are not re-sent in every later request: each enters the history as
// its head and an artifact handle, once and for good; the model reads the
// middle of the output with read_artifact and gets its exact bytes.
func TestHugeResultsAreArtifacts(t *testing.T) {
	runArtifacts(t, 500000, false)
}

// The recording keeps the whole and replays: the same heads and handle in
// the requests, the read answered from the recorded output. (A smaller
// output: recording redacts every value, at about 3 MB of CPU a second.)
func TestArtifactsReplay(t *testing.T) {
	runArtifacts(t, 20000, true)
}

// runArtifacts runs `seq 1 count` (and writes a 100 KB letter) through a
// loopback OpenAI server, checks what each request carried, and replays
// the recording when recorded is set.
func runArtifacts(t *testing.T, count int, recorded bool) {
	var seq strings.Builder
	for i := 1; i <= count; i++ {
		seq.WriteString(strconv.Itoa(i))
		seq.WriteByte('\n')
	}
	output := seq.String()
	// A single argument of a command line is bounded at 128 KiB by Linux.
	letter := strings.Repeat("All work and no play.\n", 4500)
	offset, length := len(output)/2, 3000

	var handle string
	srv := &scriptedWire{}
	srv.next = func(n int, body []byte) (string, string) {
		switch n {
		case 0:
			return "assign_subtask", `{"app":"shell","subtask":"Write the letter, then count and report the middle."}`
		case 1:
			b, _ := json.Marshal(map[string]string{"command": "cat > letter.txt <<'EOF'\n" + letter + "EOF"})
			return "execute_command", string(b)
		case 2:
			return "execute_command", fmt.Sprintf(`{"command":"seq 1 %d"}`, count)
		case 3:
			if m := handleRE.FindAllSubmatch(body, -1); len(m) > 0 {
				handle = string(m[len(m)-1][1])
			}
			return "read_artifact", fmt.Sprintf(`{"handle":%q,"offset":%d,"length":%d}`, handle, offset, length)
		case 4:
			return "finish_task", `{"result":"read the middle"}`
		case 5:
			return "finish_task", `{"result":"done"}`
		}
		return "", ""
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	// Every command is waited for (detach_after 0): on a loaded machine
	// the huge output's way through the device client can take past the
	// default 30s, and the step would get it as still running.
	cfgYAML := fmt.Sprintf("model: openai:gpt-4o\nproviders: {openai: {base_url: %q, api_key: k-test}}\ntools: {shell: {max_output: 8388608}}\nagent: {detach_after: 0s}\n", hs.URL+"/v1")
	cfg, err := config.FromYAML([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dev, err := local.Device(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var rec *record.Recorder
	opts := session.Options{Device: dev}
	if recorded {
		apps := map[string]string{}
		for _, ns := range dev.Namespaces() {
			apps[ns.Name] = ns.Description
		}
		if rec, err = recordStart(filepath.Join(t.TempDir(), "run"), trajectory.Session{Task: "count", Model: cfg.Model, Mode: "tools", Config: cfgYAML, Apps: apps}); err != nil {
			t.Fatal(err)
		}
		opts.Observers = []func(agent.Event){rec.Observe}
	}
	sess, err := session.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A safety net, not a budget: the run ends by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out := sess.Run(ctx, "count")
	if rec != nil {
		if err := rec.Finish(out); err != nil {
			t.Fatal(err)
		}
	}
	if out.Status != fsm.Finish {
		t.Fatalf("%s %q %v", out.Status, out.Answer, out.Err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "letter.txt")); err != nil || string(b) != letter {
		t.Fatalf("the letter on disk: %d bytes, %v; want the model's whole argument", len(b), err)
	}

	bodies := srv.sent()
	if len(bodies) != 6 {
		t.Fatalf("%d requests", len(bodies))
	}
	// The request after the command shows its output as far as the
	// context policy's show_bytes (64 KB of it, head and tail, and the
	// JSON's escapes); every other request stays small: neither the
	// letter nor the output is sent again.
	for i, b := range bodies {
		if max := 64 << 10; len(b) > max && (i != 3 || len(b) > 3*max/2+16<<10) {
			t.Errorf("request %d is %d bytes", i, len(b))
		}
	}
	if handle == "" {
		t.Fatalf("request 3 names no artifact:\n%s", bodies[3])
	}
	// The history is append-only but for the newest result, which the
	// model reads once as first shown and then as seen: what request 3
	// carried before it comes again, byte for byte, at the start of
	// request 4.
	var r3, r4 struct {
		Messages []json.RawMessage `json:"messages"`
	}
	json.Unmarshal(bodies[3], &r3)
	json.Unmarshal(bodies[4], &r4)
	if len(r4.Messages) <= len(r3.Messages) {
		t.Fatalf("request 4 has %d messages, request 3 %d", len(r4.Messages), len(r3.Messages))
	}
	for i := range len(r3.Messages) - 2 { // the newest result and the status turn are rendered anew
		if string(r3.Messages[i]) != string(r4.Messages[i]) {
			t.Errorf("message %d changed between requests 3 and 4:\n%s\n%s", i, r3.Messages[i], r4.Messages[i])
		}
	}
	// The read brought the model the middle of the output, exactly.
	read := toolResult(t, bodies[4], "call_3")
	header, got, _ := strings.Cut(read, "\n")
	want := fmt.Sprintf("[bytes %d to %d of %d]", offset, offset+length, len(output))
	if header != want || got != output[offset:offset+length] {
		t.Errorf("read_artifact answered %q…, want %s and the output's bytes", cutStr(read, 200), want)
	}
	// The letter's call is repeated shortened, as valid JSON arguments.
	args := toolCallArguments(t, bodies[2], "call_1")
	var cmd struct{ Command string }
	if err := json.Unmarshal([]byte(args), &cmd); err != nil || len(cmd.Command) > 4000 ||
		!strings.HasPrefix(cmd.Command, "cat > letter.txt <<'EOF'\nAll work and no play.\n") || !strings.Contains(cmd.Command, "[artifact ") {
		t.Errorf("request 2 repeats the letter's call as %d bytes: %.300s (%v)", len(args), args, err)
	}
	if rec == nil {
		return
	}
	// Offline, the recording answers: the same requests (heads and
	// handle), the read from the recorded output.
	tr, err := trajectory.Read(rec.Dir())
	if err != nil {
		t.Fatal(err)
	}
	rr, err := evals.Replay(context.Background(), tr, evals.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Outcome.Status != fsm.Finish || rr.Diverged() {
		t.Fatalf("replay: %s, diverged:\n%s", rr.Outcome.Status, rr.Report())
	}
}

func recordStart(dir string, s trajectory.Session) (*record.Recorder, error) {
	return record.Start(dir, s, trajectory.Options{})
}

// toolResult is the content of the tool turn answering call id in a
// chat-completions request body.
func toolResult(t *testing.T, body []byte, id string) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no tool result for %s", id)
	return ""
}

// toolCallArguments are the arguments of call id in a chat-completions
// request body's history.
func toolCallArguments(t *testing.T, body []byte, id string) string {
	t.Helper()
	var req struct {
		Messages []struct {
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Function.Arguments
			}
		}
	}
	t.Fatalf("no tool call %s", id)
	return ""
}

func cutStr(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// In json mode too: the result turn carries the output's head and handle,
// and a read_artifact action greps it.
func TestHugeResultsAreArtifactsInJSONMode(t *testing.T) {
	var seq strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	sum := sha256.Sum256([]byte(seq.String()))
	h := hex.EncodeToString(sum[:])[:12]
	act := func(status, fn string, args map[string]any) scripted.Reply {
		reply := map[string]any{"thought": "go on", "status": status}
		if fn != "" {
			reply["actions"] = []map[string]any{{"function": fn, "arguments": args}}
		} else {
			reply["result"] = "done"
		}
		return scripted.Reply{JSON: reply}
	}
	replies := []scripted.Reply{
		act("ASSIGN", "assign_subtask", map[string]any{"app": "shell", "subtask": "Count to 20000 and find 12345."}),
		act("CONTINUE", "execute_command", map[string]any{"command": "seq 1 20000"}),
		act("CONTINUE", "read_artifact", map[string]any{"handle": h, "grep": "^12345$"}),
		act("FINISH", "", nil),
		act("FINISH", "", nil),
	}
	replies[2].Expect = "[artifact " + h + ":"
	replies[3].Expect = "12345: 12345"
	model := scripted.New(scripted.Script{Replies: replies})
	cfg := config.Default()
	cfg.Mode, cfg.Tools.Shell.MaxOutput = "json", 1<<20
	if out := runLocal(t, cfg, t.TempDir(), session.Options{Model: model}, "count"); out.Status != fsm.Finish {
		for _, c := range model.Calls() {
			for _, m := range c.Messages[2:] {
				t.Logf("%s: %.600s", m.Role, m.Content)
			}
			t.Log("----")
		}
		t.Fatalf("%s %q %v", out.Status, out.Answer, out.Err)
	}
	// The request after the command shows up to 64 KB of its output
	// (head and tail); the others stay small.
	for i, req := range model.Calls() {
		if n := requestSize(req); n > 32<<10 && (i != 2 || n > 96<<10) {
			t.Errorf("request %d is %d bytes", i, n)
		}
	}
}
