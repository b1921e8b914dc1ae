package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
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
	CostUSD    float64
	CostKnown  bool
	Wall       time.Duration
}

func (e *BudgetError) Error() string {
	cost := "unknown cost"
	if e.Spent.CostKnown {
		cost = fmt.Sprintf("$%.4f", e.Spent.CostUSD)
	}
	return fmt.Sprintf("the budget of %s %s is spent (used %d model calls, %d tokens, %s, %s)", e.Limit, e.What,
		e.Spent.ModelCalls, e.Spent.Tokens, cost, e.Spent.Wall.Round(time.Millisecond))
}

// budgetTracker counts what the session spends, from its model calls.
type budgetTracker struct {
	limit config.Budget
	model string
	cost  func(model string, u llm.Usage) (float64, bool)

	mu     sync.Mutex
	spent  Spent
	start  time.Time
	cancel context.CancelCauseFunc
}

func (b *budgetTracker) observe(e agent.Event) {
	if e.Kind != agent.EventModelCall {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent.ModelCalls++
	if e.Response != nil {
		u := e.Response.Usage
		b.spent.Tokens += u.PromptTokens + u.CompletionTokens
		if b.cost != nil {
			if c, ok := b.cost(b.model, u); ok {
				b.spent.CostUSD += c
				b.spent.CostKnown = b.spent.ModelCalls == 1 || b.spent.CostKnown
			} else {
				b.spent.CostKnown = false
			}
		}
	}
	l := b.limit
	var over *BudgetError
	switch {
	case l.ModelCalls > 0 && b.spent.ModelCalls >= l.ModelCalls:
		over = &BudgetError{What: "model calls", Limit: fmt.Sprint(l.ModelCalls)}
	case l.Tokens > 0 && b.spent.Tokens >= l.Tokens:
		over = &BudgetError{What: "tokens", Limit: fmt.Sprint(l.Tokens)}
	case l.CostUSD > 0 && b.spent.CostKnown && b.spent.CostUSD >= l.CostUSD:
		over = &BudgetError{What: "cost", Limit: fmt.Sprintf("$%.4f", l.CostUSD)}
	}
	if over != nil && b.cancel != nil {
		b.spent.Wall = time.Since(b.start)
		over.Spent = b.spent
		b.cancel(over)
	}
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
// spent; what ran stays done.
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
