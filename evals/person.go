package evals

import (
	"context"
	"fmt"
	"sync"

	"github.com/saucerhq/saucer/command"
)

// casePerson plays a case's user: it answers questions and decides
// approvals in the order the case declares them.
type casePerson struct {
	mu        sync.Mutex
	p         Person
	asked     int
	approvals int
}

func (c *casePerson) Ask(ctx context.Context, agent, question string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	if c.asked > len(c.p.Answers) {
		return "", fmt.Errorf("the case declares %d answers (person.answers) and this is question %d: %q", len(c.p.Answers), c.asked, question)
	}
	return c.p.Answers[c.asked-1], nil
}

func (c *casePerson) Confirm(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.approvals++
	if c.approvals > len(c.p.Approvals) {
		return c.p.ApproveRest, nil
	}
	return c.p.Approvals[c.approvals-1], nil
}
