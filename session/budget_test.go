package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
)

// A budget reached stops the session between commands, FAIL, saying which
// budget and what was spent; a cost budget needs a price.
func TestBudgets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget config.Budget
		want   string
	}{
		{"model calls", config.Budget{ModelCalls: 2}, "the budget of 2 model calls is spent (used 2 model calls"},
		{"tokens", config.Budget{Tokens: 1000}, "tokens is spent (used 2 model calls"},
		{"wall time", config.Budget{Wall: config.Duration(time.Nanosecond)}, "the budget of 1ns wall time is spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Budget = tc.budget
			calls := runDemoOutcome(t, cfg)
			if calls.out.Status != fsm.Fail || !strings.Contains(calls.out.Budget, tc.want) || !strings.HasPrefix(calls.out.Answer, "stopped: ") {
				t.Errorf("outcome %s %q budget %q", calls.out.Status, calls.out.Answer, calls.out.Budget)
			}
			if tc.name == "model calls" && calls.n != 2 {
				t.Errorf("%d model calls after a budget of 2", calls.n)
			}
		})
	}
	// A cost budget, priced at $1 per token.
	cfg := config.Default()
	cfg.Budget = config.Budget{CostUSD: 1000}
	r := runDemoOutcomeCost(t, cfg, func(model string, u llm.Usage) (float64, bool) {
		return float64(u.PromptTokens + u.CompletionTokens), true
	})
	if r.out.Status != fsm.Fail || !strings.Contains(r.out.Budget, "the budget of $1000.0000 cost is spent") {
		t.Errorf("cost: %s %q", r.out.Status, r.out.Budget)
	}
	// An unknown price never stops a run.
	r = runDemoOutcomeCost(t, cfg, func(string, llm.Usage) (float64, bool) { return 0, false })
	if !r.out.OK() {
		t.Errorf("unknown price: %s %q", r.out.Status, r.out.Answer)
	}
}
