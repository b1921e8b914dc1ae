package scripted

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm"
)

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		kind     string
		sentinel error
	}{
		{"rate_limit", llm.ErrRateLimit},
		{"auth", llm.ErrAuth},
		{"context_length", llm.ErrContextLength},
		{"timeout", llm.ErrTimeout},
		{"server", llm.ErrServer},
		{"empty_reply", llm.ErrEmptyReply},
		{"bad_request", llm.ErrBadRequest},
	}
	for _, tt := range tests {
		m := New(Script{Replies: []Reply{{Error: tt.kind}}})
		resp, err := m.Complete(context.Background(), ask("x"))
		if resp != nil || !errors.Is(err, tt.sentinel) {
			t.Errorf("error: %s gave %v, %v; want %v", tt.kind, resp, err, tt.sentinel)
			continue
		}
		var llmErr *llm.Error
		if !errors.As(err, &llmErr) || llmErr.Provider != "scripted" || !strings.Contains(err.Error(), "call 1") {
			t.Errorf("error: %s gave %#v", tt.kind, err)
		}
		for _, other := range tests {
			if other.kind != tt.kind && errors.Is(err, other.sentinel) {
				t.Errorf("error: %s also matches %s", tt.kind, other.kind)
			}
		}
	}
}

func TestExpect(t *testing.T) {
	m := New(Script{Replies: []Reply{
		{Expect: "subtask", Text: "ok"},
		{Expect: "subtask", Text: "ok"},
	}})
	req := &llm.Request{Messages: []llm.Message{llm.System("assign each subtask to an app"), llm.User("open notepad")}}
	if resp := mustComplete(t, m, req); resp.Message.Content != "ok" {
		t.Fatalf("content = %q", resp.Message.Content)
	}

	long := strings.Repeat("x", 500) + " and then the end of the question"
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{
		llm.User("first question"), llm.Assistant("answer about a subtas"), llm.User(long),
	}})
	var expectErr *ExpectError
	if !errors.As(err, &expectErr) {
		t.Fatalf("error = %v, want *ExpectError", err)
	}
	if expectErr.Call != 2 || expectErr.Expect != "subtask" {
		t.Fatalf("ExpectError = %+v", expectErr)
	}
	msg := err.Error()
	for _, want := range []string{"call 2", `"subtask"`, "the end of the question"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if len(msg) > 400 || strings.Contains(msg, "first question") {
		t.Errorf("error shows more than the tail of the last user message: %q", msg)
	}
}

func TestExhausted(t *testing.T) {
	m := New(Script{Replies: []Reply{{Text: "a"}, {Text: "b"}}})
	mustComplete(t, m, ask("x"))
	mustComplete(t, m, ask("x"))
	for call := 3; call <= 4; call++ {
		_, err := m.Complete(context.Background(), ask("x"))
		var exhausted *ExhaustedError
		if !errors.As(err, &exhausted) || exhausted.Call != call || exhausted.Replies != 2 {
			t.Fatalf("call %d: error = %v", call, err)
		}
		want := "scripted: the script has 2 replies and call " + string(rune('0'+call)) + " has none"
		if !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("error %q does not start with %q", err, want)
		}
	}
}

func TestLoop(t *testing.T) {
	m := New(Script{Loop: true, Replies: []Reply{{Text: "a"}, {Text: "b"}, {ToolCalls: []ToolCall{{Name: "t"}}}}})
	var got []string
	for range 7 {
		resp := mustComplete(t, m, ask("x"))
		if len(resp.Message.ToolCalls) > 0 {
			got = append(got, resp.Message.ToolCalls[0].ID)
		} else {
			got = append(got, resp.Message.Content)
		}
	}
	want := []string{"a", "b", "call_3_1", "a", "b", "call_6_1", "a"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replies = %v, want %v", got, want)
	}
	if m.Remaining() != 2 || m.Count() != 7 {
		t.Fatalf("Remaining %d Count %d, want 2 and 7", m.Remaining(), m.Count())
	}
}

func TestLatency(t *testing.T) {
	const latency = 50 * time.Millisecond
	m := New(Script{Replies: []Reply{{Latency: latency, Text: "slow"}, {Latency: time.Hour, Text: "never"}, {Text: "after"}}})

	start := time.Now()
	mustComplete(t, m, ask("x"))
	if elapsed := time.Since(start); elapsed < latency {
		t.Fatalf("the call took %s, less than its latency %s", elapsed, latency)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := m.Complete(ctx, ask("x"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "call 2") {
		t.Fatalf("error = %v, want a deadline error naming call 2", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("cancellation took %s", elapsed)
	}
	// The cancelled call used its reply; the next one gets the third.
	if got := mustComplete(t, m, ask("x")).Message.Content; got != "after" {
		t.Fatalf("after the cancelled call got %q", got)
	}
}

func TestCancelledBeforeCallTakesNoReply(t *testing.T) {
	m := New(Script{Replies: []Reply{{Text: "first"}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Complete(ctx, ask("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if m.Count() != 0 || m.Remaining() != 1 || len(m.Calls()) != 0 {
		t.Fatalf("a call with a done context was counted: Count %d Remaining %d", m.Count(), m.Remaining())
	}
	if got := mustComplete(t, m, ask("x")).Message.Content; got != "first" {
		t.Fatalf("got %q", got)
	}
}

func TestStreamEqualsComplete(t *testing.T) {
	script := Script{Replies: []Reply{
		{Text: "I will  run two\ncommands now.", ToolCalls: []ToolCall{
			{Name: "execute_command", Arguments: `{"command":"echo héllo"}`},
			{ID: "fixed", Name: "read_file", Arguments: map[string]string{"path": "/etc/hosts"}},
		}},
		{JSON: map[string]string{"status": "FINISH"}},
		{Error: "server"},
	}}
	complete, stream := New(script), New(script)
	for i := range script.Replies {
		want, wantErr := complete.Complete(context.Background(), ask("go"))
		var chunks []llm.Chunk
		got, err := stream.Stream(context.Background(), ask("go"), func(c llm.Chunk) { chunks = append(chunks, c) })
		if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) {
			t.Fatalf("reply %d: Stream = %+v, %v; Complete = %+v, %v", i+1, got, err, want, wantErr)
		}
		if err != nil {
			if !errors.Is(err, llm.ErrServer) || len(chunks) != 0 {
				t.Fatalf("reply %d: error %v with %d chunks", i+1, err, len(chunks))
			}
			continue
		}

		// The pieces, in order, rebuild the reply.
		var text strings.Builder
		var calls []llm.ToolCall
		textChunks := 0
		for _, c := range chunks {
			if c.ToolCall == nil {
				if len(calls) > 0 {
					t.Fatalf("reply %d: text after a tool call", i+1)
				}
				text.WriteString(c.Text)
				textChunks++
				continue
			}
			d := c.ToolCall
			if d.Index == nil {
				t.Fatalf("reply %d: tool-call delta without index", i+1)
			}
			if *d.Index == len(calls) {
				if d.Name == "" || d.Arguments != "" {
					t.Fatalf("reply %d: tool call %d does not start with its name: %+v", i+1, *d.Index, d)
				}
				calls = append(calls, llm.ToolCall{ID: d.ID, Name: d.Name})
				continue
			}
			if *d.Index != len(calls)-1 {
				t.Fatalf("reply %d: delta for call %d while building call %d", i+1, *d.Index, len(calls)-1)
			}
			calls[*d.Index].Arguments += d.Arguments
		}
		if text.String() != want.Message.Content {
			t.Fatalf("reply %d: streamed text %q, want %q", i+1, text.String(), want.Message.Content)
		}
		if !reflect.DeepEqual(calls, want.Message.ToolCalls) {
			t.Fatalf("reply %d: streamed calls %+v, want %+v", i+1, calls, want.Message.ToolCalls)
		}
		if i == 0 && (textChunks != 6 || len(chunks) != 6+2*3) {
			t.Fatalf("reply 1: %d text chunks of %d, want 6 words then 3 deltas per call", textChunks, len(chunks))
		}
	}
	// A nil onChunk is allowed.
	if _, err := New(script).Stream(context.Background(), ask("go"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestUsageEstimate(t *testing.T) {
	reply := Reply{Text: "12345", ToolCalls: []ToolCall{{Name: "ab", Arguments: "{}"}}} // 5+2+2 = 9 bytes -> 3
	req := &llm.Request{Messages: []llm.Message{
		llm.System("0123456789"), // 10
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "tool", Arguments: `{"a":1}`}}}, // 4+7
		llm.User("xy"), // 2
	}} // 23 bytes -> 6
	want := llm.Usage{PromptTokens: 6, CompletionTokens: 3, TotalTokens: 9}
	for range 2 {
		m := New(Script{Replies: []Reply{reply}})
		if got := mustComplete(t, m, req).Usage; got != want {
			t.Fatalf("usage = %+v, want %+v", got, want)
		}
	}
	m := New(Script{Replies: []Reply{{Text: "x"}}})
	if got := mustComplete(t, m, &llm.Request{}).Usage; got != (llm.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}) {
		t.Fatalf("usage of an empty request = %+v, want at least 1 each", got)
	}
}

func TestCallsRecordsRequests(t *testing.T) {
	m := New(Script{Loop: true, Replies: []Reply{{Text: "a"}}})
	temp := 0.2
	req := &llm.Request{
		Messages:    []llm.Message{llm.User("first"), {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "t"}}}},
		Tools:       []llm.Tool{{Name: "t"}},
		Temperature: &temp,
		Stop:        []string{"END"},
	}
	mustComplete(t, m, req)
	mustComplete(t, m, ask("second"))

	// Changing the caller's request afterwards does not change the record.
	req.Messages[0].Content = "changed"
	req.Messages[1].ToolCalls[0].Name = "changed"
	req.Tools[0].Name = "changed"
	req.Stop[0] = "changed"
	temp = 9

	calls := m.Calls()
	if len(calls) != 2 || m.Count() != 2 {
		t.Fatalf("%d calls recorded, Count %d", len(calls), m.Count())
	}
	first := calls[0]
	if first.Messages[0].Content != "first" || first.Messages[1].ToolCalls[0].Name != "t" ||
		first.Tools[0].Name != "t" || first.Stop[0] != "END" || *first.Temperature != 0.2 {
		t.Fatalf("recorded request changed with the caller's: %+v", first)
	}
	if calls[1].Messages[1].Content != "second" {
		t.Fatalf("second call = %+v", calls[1])
	}
	// Calls returns copies too.
	calls[0].Messages[0].Content = "mine"
	if m.Calls()[0].Messages[0].Content != "first" {
		t.Fatal("changing the result of Calls changed the record")
	}

	m.SetRecord(false)
	mustComplete(t, m, ask("third"))
	if len(m.Calls()) != 2 || m.Count() != 3 {
		t.Fatalf("with recording off: %d calls recorded, Count %d; want 2 and 3", len(m.Calls()), m.Count())
	}
}

func TestConcurrentCalls(t *testing.T) {
	const goroutines, each = 8, 50
	m := New(Script{Loop: true, Replies: []Reply{{Text: "a"}, {Text: "b"}}})
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				resp, err := m.Stream(context.Background(), ask("x"), func(llm.Chunk) {})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[resp.Message.Content]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := goroutines * each
	if m.Count() != total || len(m.Calls()) != total || seen["a"] != total/2 || seen["b"] != total/2 {
		t.Fatalf("Count %d, recorded %d, replies %v", m.Count(), len(m.Calls()), seen)
	}
}

func TestDefaultToolCallIDs(t *testing.T) {
	m := New(Script{Replies: []Reply{
		{Text: "a"},
		{ToolCalls: []ToolCall{{Name: "x"}, {Name: "y", ID: "mine"}, {Name: "z"}}},
	}})
	mustComplete(t, m, ask("x"))
	var ids []string
	for _, c := range mustComplete(t, m, ask("x")).Message.ToolCalls {
		ids = append(ids, c.ID)
	}
	if want := []string{"call_2_1", "mine", "call_2_3"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
}

func TestResponsesAreIndependent(t *testing.T) {
	m := New(Script{Loop: true, Replies: []Reply{{ToolCalls: []ToolCall{{Name: "x", ID: "id"}}}}})
	first := mustComplete(t, m, ask("x"))
	first.Message.ToolCalls[0].Name = "changed"
	if got := mustComplete(t, m, ask("x")).Message.ToolCalls[0].Name; got != "x" {
		t.Fatalf("changing a response changed the script: %q", got)
	}
}

func BenchmarkComplete(b *testing.B) {
	m := New(Script{Loop: true, Replies: []Reply{
		{Text: "thinking", ToolCalls: []ToolCall{{Name: "execute_command", Arguments: map[string]string{"command": "echo hi"}}}},
		{JSON: map[string]string{"status": "FINISH", "result": "done"}},
	}})
	m.SetRecord(false)
	req := &llm.Request{Messages: []llm.Message{
		llm.System(strings.Repeat("You are an agent. ", 50)),
		llm.User("run the command"),
	}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// A script answers one way when the request offers something (retrieved
// experience, say) and another way when it does not; the replies of the
// way not taken are passed over for good.
func TestWhenAndUnlessFollowTheRequest(t *testing.T) {
	script := `
replies:
  - when: "Experience:"
    text: "as before: one step"
  - unless: "Experience:"
    text: "explore 1"
  - unless: "Experience:"
    text: "explore 2"
  - text: "done"
`
	s, err := Parse([]byte(script), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prompt string
		want   []string
	}{
		{"Experience: wc -l counts lines\ncount the lines", []string{"as before: one step", "done"}},
		{"count the lines", []string{"explore 1", "explore 2", "done"}},
	} {
		m := New(*s)
		var got []string
		for range tc.want {
			got = append(got, mustComplete(t, m, ask(tc.prompt)).Message.Content)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("prompt %q: replies %q, want %q", tc.prompt, got, tc.want)
		}
		if m.Remaining() != 0 || m.Count() != len(tc.want) {
			t.Fatalf("prompt %q: Remaining %d Count %d, want 0 and %d", tc.prompt, m.Remaining(), m.Count(), len(tc.want))
		}
		var exhausted *ExhaustedError
		if _, err := m.Complete(context.Background(), ask(tc.prompt)); !errors.As(err, &exhausted) {
			t.Fatalf("a call past the script: %v, want *ExhaustedError", err)
		}
	}
	// A looping script whose every reply is passed over says so rather
	// than looping for ever.
	m := New(Script{Loop: true, Replies: []Reply{{When: "never said", Text: "x"}}})
	var exhausted *ExhaustedError
	if _, err := m.Complete(context.Background(), ask("hello")); !errors.As(err, &exhausted) {
		t.Fatalf("error = %v, want *ExhaustedError", err)
	}
}
