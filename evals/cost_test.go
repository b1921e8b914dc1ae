package evals_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm"
)

// A report never shows $0.0000 for what it could not price, and marks
// figures that Saucer counted because a provider reported no usage.
func TestReportCostUnknownAndEstimated(t *testing.T) {
	usd := func(v float64) *float64 { return &v }
	s := &evals.Suite{Name: "costs", Cases: []evals.Case{{ID: "a", Task: "x"}, {ID: "b", Task: "y"}}}
	est := llm.Usage{PromptTokens: 1000, CompletionTokens: 10, TotalTokens: 1010, Estimated: true}
	exact := llm.Usage{PromptTokens: 500, CompletionTokens: 5, TotalTokens: 505}

	// Every trial priced, one from Saucer's count.
	rep := evals.BuildReport(s, map[string][]*evals.TrialResult{
		"a": {{Case: "a", Model: "openai:gpt-4o", Usage: est, CostUSD: usd(0.0026), CostEstimated: true}},
		"b": {{Case: "b", Model: "openai:gpt-4o", Usage: exact, CostUSD: usd(0.0013)}},
	}, nil)
	m := rep.Metrics
	if !m.Tokens.Estimated || !m.CostEstimated || m.CostText() != "~$0.0039 (estimated: a provider reported no token usage, Saucer counted the tokens)" {
		t.Errorf("estimated: %+v, %q", m.Tokens, m.CostText())
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| tokens | ~1500 prompt, ~15 completion (0 cached) |") || !strings.Contains(md.String(), "~$0.0039") {
		t.Errorf("markdown:\n%s", md.String())
	}

	// One model without a price: no total, and no $0.0000 for it.
	rep = evals.BuildReport(s, map[string][]*evals.TrialResult{
		"a": {{Case: "a", Model: "openai-compatible:local", Usage: exact}},
		"b": {{Case: "b", Model: "openai:gpt-4o", Usage: exact, CostUSD: usd(0.0013)}},
	}, nil)
	m = rep.Metrics
	if m.CostUSD != nil || m.CostText() != "cost unknown (no price for openai-compatible:local; the priced trials cost $0.0013)" {
		t.Errorf("unknown: %v %q", m.CostUSD, m.CostText())
	}
}
