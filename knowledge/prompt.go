package knowledge

import (
	"context"
	"fmt"
	"strings"

	"github.com/saucerhq/saucer/internal/tokens"
)

// promptLimit is how many entries a prompt is offered at most.
const promptLimit = 5

// ForPrompt is what an agent is given for its request or subtask: the best
// entries (about app, or any app when app is empty) within budgetTokens,
// rendered with their sources named, and those sources in the same order.
// The same store, request and budget give the same text, byte for byte,
// so a replayed prompt is the recorded one. With no entries that fit it
// returns "" and no sources.
func (s *DirStore) ForPrompt(ctx context.Context, request, app string, budgetTokens int) (string, []Source, error) {
	return forPrompt(ctx, s, request, app, budgetTokens)
}

// forPrompt is every store's ForPrompt, over its Search.
func forPrompt(ctx context.Context, s interface {
	Search(context.Context, Query) ([]Hit, error)
}, request, app string, budgetTokens int) (string, []Source, error) {
	if strings.TrimSpace(request) == "" || budgetTokens <= 0 {
		return "", nil, nil
	}
	left := budgetTokens - tokensOf(promptHead)
	if left <= 0 {
		return "", nil, nil
	}
	hits, err := s.Search(ctx, Query{Text: request, App: app, Limit: promptLimit, TokenBudget: left})
	if err != nil || len(hits) == 0 {
		return "", nil, err
	}
	var b strings.Builder
	b.WriteString(promptHead)
	used := make([]Source, 0, len(hits))
	for i, h := range hits {
		b.WriteString(render(i+1, h))
		used = append(used, h.Entry.Source)
	}
	return b.String(), used, nil
}

// promptHead opens what an agent is given. The answers in experience were
// for that run's data: a model in the seat warned that a weaker model
// might reuse one for a near-identical question.
const promptHead = "## What was learned before\nFrom earlier runs and help documents, best match first. They show where things are and what worked; their values and answers were for that run's data, so find yours again. Check them against what you see; a failed run shows what not to do.\n"

func tokensOf(s string) int { return tokens.Count(tokenModel, s) }

// render writes one hit as a prompt shows it.
func render(n int, h Hit) string {
	e := h.Entry
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %d. %s: %s\n", n, e.Label(), oneLine(e.Title))
	fmt.Fprintf(&b, "Source: %s\n", e.Source)
	if e.Text != "" {
		b.WriteString(strings.TrimRight(e.Text, "\n"))
		b.WriteString("\n")
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
