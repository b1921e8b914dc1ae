package evals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/session"
)

// summarizer writes the summaries a fold asks for and lets the script
// answer the rest.
type summarizer struct {
	llm.Model
	asked int
}

func (s *summarizer) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "Write that note now") {
		s.asked++
		return &llm.Response{Message: llm.Assistant(fmt.Sprintf("Summary %d: listed folders, all fine.", s.asked)), FinishReason: "stop"}, nil
	}
	return s.Model.Complete(ctx, req)
}

func (s *summarizer) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	return s.Complete(ctx, req)
}

// A run whose history folds, with summaries the model wrote, replays
// request for request: the folds come at the same steps, the summary calls
// are answered from the recording, and nothing diverges.
func TestFoldedRunReplays(t *testing.T) {
	work := t.TempDir()
	const folders = 12
	replies := []scripted.Reply{{ToolCalls: []scripted.ToolCall{{Name: "assign_subtask", Arguments: map[string]any{"app": "shell", "subtask": "List each folder dN."}}}}}
	for i := range folders {
		dir := filepath.Join(work, fmt.Sprintf("d%d", i))
		os.MkdirAll(dir, 0o755)
		for j := range 30 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%02d.txt", j)), []byte(strings.Repeat("x", j)), 0o644)
		}
		replies = append(replies, scripted.Reply{Text: fmt.Sprintf("Folder %d.", i),
			ToolCalls: []scripted.ToolCall{{Name: "execute_command", Arguments: map[string]any{"command": fmt.Sprintf("ls -la d%d", i)}}}})
	}
	done := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "finish_task", Arguments: map[string]any{"result": "Listed them."}}}}
	replies = append(replies, done, done)
	model := &summarizer{Model: scripted.New(scripted.Script{Replies: replies})}

	cfg := config.Default()
	cfg.Model = "scripted:fold"
	cfg.Agent.Context = memory.Policy{Preset: memory.Economy, Summary: memory.SummaryModel, FoldBytes: 2000}
	dir, out := recordRun(t, cfg, work, "List the folders d0 to d11.", session.Options{Model: model})
	if !out.OK() {
		t.Fatalf("%s %q %v", out.Status, out.Answer, out.Err)
	}
	if model.asked < 2 {
		t.Fatalf("the model wrote %d summaries, want folds enough for 2", model.asked)
	}
	res, err := evals.Replay(context.Background(), readTrajectory(t, dir), evals.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Diverged() || !res.Outcome.OK() {
		t.Fatalf("the replay of a folded run: %s %s", res.Outcome.Status, res.Report())
	}
}
