package replay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/replay"
	"github.com/saucerhq/saucer/trajectory"
)

func calls() []trajectory.Call {
	req := llm.Request{Messages: []llm.Message{llm.System("sys"), llm.User("list the files")}}
	req2 := llm.Request{Messages: []llm.Message{llm.System("sys"), llm.User("list the files"), llm.Assistant("ok"), llm.User("key " + trajectory.Redacted)}}
	return []trajectory.Call{
		{N: 1, Request: req, Error: &trajectory.CallError{Kind: "rate_limit", Message: "429"}},
		{N: 2, Request: req, Response: &llm.Response{Message: llm.Assistant("ok"), Usage: llm.Usage{PromptTokens: 5}}},
		{N: 3, Request: req2, Response: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "finish_task", Arguments: "{}"}}}}},
	}
}

func TestReplayAnswersInOrder(t *testing.T) {
	red, _ := trajectory.NewRedactor([]string{"secret-value-1"}, nil)
	m := replay.New(calls(), replay.Options{Redactor: red})
	ctx := context.Background()
	req := &llm.Request{Messages: []llm.Message{llm.System("sys"), llm.User("list the files")}}
	if _, err := m.Complete(ctx, req); !errors.Is(err, llm.ErrRateLimit) {
		t.Fatalf("call 1: want the recorded rate limit, got %v", err)
	}
	resp, err := m.Complete(ctx, req)
	if err != nil || resp.Message.Content != "ok" || resp.Usage.PromptTokens != 5 {
		t.Fatalf("call 2: %+v %v", resp, err)
	}
	// The live request holds the secret; the recording its redaction.
	req2 := &llm.Request{Messages: append(req.Messages, llm.Assistant("ok"), llm.User("key secret-value-1"))}
	resp, err = m.Stream(ctx, req2, func(llm.Chunk) {})
	if err != nil || resp.Message.ToolCalls[0].Name != "finish_task" {
		t.Fatalf("call 3: %+v %v", resp, err)
	}
	if m.Remaining() != 0 || len(m.Divergences()) != 0 {
		t.Errorf("remaining %d, divergences %v", m.Remaining(), m.Divergences())
	}
	_, err = m.Complete(ctx, req)
	var de *replay.DivergenceError
	if !errors.As(err, &de) || !strings.Contains(de.Reason, "3 model calls") {
		t.Errorf("call past the end: %v", err)
	}
}

func TestReplayReportsDivergenceWithDiff(t *testing.T) {
	m := replay.New(calls()[1:], replay.Options{})
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.System("sys"), llm.User("delete the files")}})
	var de *replay.DivergenceError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(de.Reason, "message 2 (user) differs") || !strings.Contains(de.Diff, `-       "content": "list the files"`) ||
		!strings.Contains(de.Diff, `+       "content": "delete the files"`) {
		t.Errorf("reason %q diff:\n%s", de.Reason, de.Diff)
	}
	// Lenient replay answers anyway and still reports.
	m = replay.New(calls()[1:], replay.Options{Lenient: true})
	resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.System("other")}})
	if err != nil || resp.Message.Content != "ok" || len(m.Divergences()) != 1 {
		t.Errorf("lenient: %+v %v %v", resp, err, m.Divergences())
	}
}

// TestRecordedFailureReadsAsRecorded: a recorded failure replays with its
// recorded text (the notes and answers built from it must not change) and
// kind, and with its Retry-After only when the session refused to wait
// that long, so the retry policy decides as it did without the wait.
func TestRecordedFailureReadsAsRecorded(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{llm.User("go")}}
	text := "openai: rate limit (HTTP 429): Rate limit reached (wait and retry, or lower the request rate)"
	m := replay.New([]trajectory.Call{
		{N: 1, Request: req, Error: &trajectory.CallError{Kind: "rate_limit", Message: text, RetryAfterMS: 3600e3}},
		{N: 2, Request: req, Error: &trajectory.CallError{Kind: "rate_limit", Message: text, RetryAfterMS: 20}},
	}, replay.Options{MaxRetryAfter: 2 * time.Minute})
	policy := llm.RetryPolicy{Base: time.Millisecond, Max: 2, MaxRetryAfter: 2 * time.Minute}
	_, err := m.Complete(context.Background(), &req)
	if err == nil || err.Error() != text || !errors.Is(err, llm.ErrRateLimit) {
		t.Fatalf("replayed %v, want the recorded %q as a rate limit", err, text)
	}
	if _, refused := policy.Wait(0, err); refused == nil || !strings.Contains(refused.Error(), "1h0m0s") {
		t.Errorf("an hour's Retry-After was retried in the replay: %v", refused)
	}
	_, err = m.Complete(context.Background(), &req)
	if d, refused := policy.Wait(0, err); refused != nil || d >= 20*time.Millisecond {
		t.Errorf("a 20ms Retry-After: wait %v, %v; want a retry without the wait", d, refused)
	}
}

// TestReplayAtEnd: in a recording that stops early, a call past its last
// is the end of the replay, not a divergence.
func TestReplayAtEnd(t *testing.T) {
	ended := 0
	m := replay.New(calls()[1:2], replay.Options{AtEnd: func() { ended++ }})
	req := &llm.Request{Messages: []llm.Message{llm.System("sys"), llm.User("list the files")}}
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(context.Background(), req); !errors.Is(err, replay.ErrRecordingEnds) || ended != 1 || len(m.Divergences()) != 0 {
		t.Errorf("past the end: %v, AtEnd called %d times, divergences %v", err, ended, m.Divergences())
	}
}

// Stop sequences are compared as a list: ["a b"] is not ["a", "b"],
// though both print alike.
func TestReplayComparesStopSequences(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{llm.User("go")}, Stop: []string{"a", "b"}}
	m := replay.New([]trajectory.Call{{N: 1, Request: req, Response: &llm.Response{Message: llm.Assistant("ok")}}}, replay.Options{})
	got := req
	got.Stop = []string{"a b"}
	_, err := m.Complete(context.Background(), &got)
	var de *replay.DivergenceError
	if !errors.As(err, &de) || !strings.Contains(de.Reason, "stop") {
		t.Fatalf("a request with other stop sequences: %v, want a divergence", err)
	}
}
