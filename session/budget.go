package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/memory"
)

// Session is a session of agents with its budget: Run stops it, between
// commands, when the model calls, tokens, cost or wall time it may spend
// run out, and says what was spent.
type Session struct {
	*agent.Session
	b *budgetTracker
}

// BudgetError says which budget a session reached and what it spent.
type BudgetError struct {
	What  string // "model calls", "tokens", "cost", "wall time"
	Limit string
	Spent Spent
}

// Spent is what a session used: every model reply counts, used or not.
type Spent struct {
	ModelCalls int
	Tokens     int
	// TokensEstimated is set when some reply's tokens were counted by
	// Saucer, its server having reported none.
	TokensEstimated bool
	// Cost is priced by the model that answered each call; unknown for a
	// model without a price, estimated with the tokens.
	Cost price.Cost
	Wall time.Duration
}

// String says what was spent: "3 model calls, ~1200 tokens (estimated),
// ~$0.0031 (estimated), 2.1s".
func (s Spent) String() string {
	tokens := fmt.Sprintf("%d tokens", s.Tokens)
	if s.TokensEstimated {
		tokens = "~" + tokens + " (estimated)"
	}
	return fmt.Sprintf("%d model calls, %s, %s, %s", s.ModelCalls, tokens, s.Cost, s.Wall.Round(time.Millisecond))
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the budget of %s %s is spent (used %s)", e.Limit, e.What, e.Spent)
}

// CheckBudget refuses, before anything runs, a budget that could not be
// enforced. Model calls and wall time always can; tokens can too (a
// server that reports no usage is counted by Saucer, marked estimated);
// cost only with a price for the model and for each of its fallbacks,
// since a reply's cost is otherwise unknown.
func CheckBudget(cfg *config.Config, prices price.Table) error {
	b := cfg.Budget
	if b.ModelCalls < 0 || b.Tokens < 0 || b.CostUSD < 0 || b.Wall < 0 {
		return errors.New("budget: model_calls, tokens, cost_usd and wall must not be negative (0 is unbounded)")
	}
	if b.CostUSD == 0 {
		return nil
	}
	var unpriced []string
	for _, spec := range append([]string{cfg.Model}, cfg.FallbacksFor(cfg.Model)...) {
		if _, ok := prices.Lookup(spec); !ok {
			unpriced = append(unpriced, spec)
		}
	}
	if len(unpriced) == 0 {
		return nil
	}
	return fmt.Errorf("budget.cost_usd ($%.4f) cannot be enforced: %s has no price, so what its replies cost is unknown. "+
		"Add its price in USD per million tokens to the config (prices: {%q: {prompt: 3, completion: 15}}), "+
		"or remove budget.cost_usd (budget.tokens bounds a run without a price)",
		b.CostUSD, strings.Join(unpriced, " and "), unpriced[0])
}

// budgetTracker counts what the session spends, from its model calls, and
// prices them for the events the observers see.
type budgetTracker struct {
	limit  config.Budget
	model  string
	prices price.Table

	mu    sync.Mutex
	spent Spent
	// step sums the cost of each agent's model calls since its last step.
	step   map[string]price.Cost
	start  time.Time
	cancel context.CancelCauseFunc
}

// observe counts a model call and prices the event: a model call by the
// model that answered, a step by the calls it made.
func (b *budgetTracker) observe(e *agent.Event) {
	switch e.Kind {
	case agent.EventStep:
		b.mu.Lock()
		e.Cost = b.step[e.Agent]
		delete(b.step, e.Agent)
		b.mu.Unlock()
	case agent.EventModelCall:
		e.Cost = b.count(e.Response, e.Agent)
	}
}

// count counts a model call (resp is nil when it failed) and returns what
// it cost. agent, when not "", is the agent that asked, whose step the
// cost is added to.
func (b *budgetTracker) count(resp *llm.Response, agent string) price.Cost {
	var cost price.Cost
	if resp != nil {
		model := b.model
		if resp.Spec != "" {
			model = resp.Spec
		}
		cost = b.prices.Cost(model, resp.Usage)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if agent != "" {
		if b.step == nil {
			b.step = map[string]price.Cost{}
		}
		b.step[agent] = b.step[agent].Add(cost)
	}
	b.spent.ModelCalls++
	if resp != nil {
		u := resp.Usage
		b.spent.Tokens += u.PromptTokens + u.CompletionTokens
		b.spent.TokensEstimated = b.spent.TokensEstimated || u.Estimated
		b.spent.Cost = b.spent.Cost.Add(cost)
	}
	l := b.limit
	var over *BudgetError
	switch {
	case l.ModelCalls > 0 && b.spent.ModelCalls >= l.ModelCalls:
		over = &BudgetError{What: "model calls", Limit: fmt.Sprint(l.ModelCalls)}
	case l.Tokens > 0 && b.spent.Tokens >= l.Tokens:
		over = &BudgetError{What: "tokens", Limit: fmt.Sprint(l.Tokens)}
	case l.CostUSD > 0 && !b.spent.Cost.Unknown && b.spent.Cost.USD >= l.CostUSD:
		over = &BudgetError{What: "cost", Limit: fmt.Sprintf("$%.4f", l.CostUSD)}
	}
	if over != nil && b.cancel != nil {
		b.spent.Wall = time.Since(b.start)
		over.Spent = b.spent
		b.cancel(over)
	}
	return cost
}

// budgeted is a model whose calls the budget counts as they return, for a
// session without observers: its agents then make no events at all,
// where the budget would otherwise count the model-call events.
type budgeted struct {
	next llm.Model
	b    *budgetTracker
}

func (m budgeted) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := m.next.Complete(ctx, req)
	m.b.count(resp, "")
	return resp, err
}

func (m budgeted) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	resp, err := m.next.Stream(ctx, req, onChunk)
	m.b.count(resp, "")
	return resp, err
}

func anyFinished(notes []memory.Note) bool {
	for _, n := range notes {
		if n.Status == string(fsm.Finish) {
			return true
		}
	}
	return false
}

// Spent is what the session has used so far.
func (s *Session) Spent() Spent {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	sp := s.b.spent
	if !s.b.start.IsZero() {
		sp.Wall = time.Since(s.b.start)
	}
	return sp
}

// Run works the request within the session's budget. A budget reached
// ends the session FAIL, with Outcome.Budget saying which and what was
// spent; what ran stays done. Outcome.Cost is what the model calls cost.
func (s *Session) Run(ctx context.Context, request string) *agent.Outcome {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.b.mu.Lock()
	s.b.start, s.b.cancel = time.Now(), cancel
	s.b.mu.Unlock()
	if w := s.b.limit.Wall.D(); w > 0 {
		timer := time.AfterFunc(w, func() {
			s.b.mu.Lock()
			sp := s.b.spent
			s.b.mu.Unlock()
			sp.Wall = w
			cancel(&BudgetError{What: "wall time", Limit: w.String(), Spent: sp})
		})
		defer timer.Stop()
	}
	out := s.Session.Run(ctx, request)
	out.Cost = s.Spent().Cost
	if out.OK() && len(out.Subtasks) > 0 && !anyFinished(out.Subtasks) {
		// Whatever the host said, nothing it assigned was done: the task
		// is not done either.
		out.Status = fsm.Fail
		out.Answer = fmt.Sprintf("the host agent finished, but none of its %d subtasks did (the last: %s %s); its answer was: %s",
			len(out.Subtasks), out.Subtasks[len(out.Subtasks)-1].Status, out.Subtasks[len(out.Subtasks)-1].Result, out.Answer)
	}
	var be *BudgetError
	if errors.As(context.Cause(ctx), &be) {
		out.Status, out.Cancelled, out.Budget = fsm.Fail, false, be.Error()
		out.Answer = "stopped: " + be.Error()
	}
	return out
}

// SupportsComputer passes on whether the model has a native computer-use
// tool (llm.ComputerUser).
func (m budgeted) SupportsComputer() bool { return llm.SupportsComputer(m.next) }
