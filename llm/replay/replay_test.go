package replay_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
