package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/saucerhq/saucer/command"
)

// DefaultAskTimeout is how long a question or an approval waits for a
// person when Options.AskTimeout is zero.
const DefaultAskTimeout = 10 * time.Minute

// A task's agents put questions and approvals to a person through the API:
// each waits, open, until it is answered (POST), the task ends, or the
// timeout gives it its default (no answer; an approval denied). Each stays
// in the task's record with how it was settled.

// PendingInfo is a question or an approval as the API shows it.
type PendingInfo struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"` // question or approval
	Agent string `json:"agent"`
	// Question is a question's text; Reason and Commands are what an
	// approval is asked for.
	Question string            `json:"question,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Commands []command.Command `json:"commands,omitempty"`
	// Status is open, answered, timed_out or withdrawn (the task ended).
	Status     string     `json:"status"`
	Answer     string     `json:"answer,omitempty"`
	Approved   *bool      `json:"approved,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	SettledAt  *time.Time `json:"settled_at,omitempty"`
	SettledBy  string     `json:"settled_by,omitempty"` // the key's label (Options.KeyLabel), timeout or the task's end
	settled    chan struct{}
	expireStop func() bool
}

// Answer is the body of POST /api/tasks/{id}/pending/{pid}: an answer to
// a question, or approve true or false for an approval.
type Answer struct {
	Answer  *string `json:"answer,omitempty"`
	Approve *bool   `json:"approve,omitempty"`
}

// Errors of Settle, mapped to HTTP statuses.
var (
	ErrNoPending = errors.New("no such question or approval")
	ErrSettled   = errors.New("already settled")
	ErrTaskEnded = errors.New("the task has ended")
)

// taskPerson is the person behind a task's agents: questions and approvals
// go to the API and wait there.
type taskPerson struct {
	s *Server
	t *task
}

// A resumed task's earlier answers come from its journal; new ones are
// recorded there.
func (p taskPerson) Ask(ctx context.Context, agent, question string) (string, error) {
	j := p.t.journal
	if raw := j.next(&j.answers); raw != nil {
		var ans string
		if json.Unmarshal(raw, &ans) == nil {
			return ans, nil
		}
	}
	it := p.t.addPending(p.s, &PendingInfo{Kind: "question", Agent: agent, Question: question})
	if err := p.t.wait(ctx, it); err != nil {
		return "", err
	}
	p.t.mu.Lock()
	ans := it.Answer
	if it.Status == "timed_out" {
		ans = fmt.Sprintf("(nobody answered within %s; go on without the answer, or fail if you cannot)", p.s.opts.AskTimeout)
	}
	p.t.mu.Unlock()
	if err := j.append(entryAnswer, "", ans); err != nil {
		p.s.logf("task %s: answer not recorded: %v", p.t.info.ID, err)
	}
	return ans, nil
}

func (p taskPerson) Confirm(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error) {
	j := p.t.journal
	if raw := j.next(&j.answers); raw != nil {
		var ok bool
		if json.Unmarshal(raw, &ok) == nil {
			return ok, nil
		}
	}
	it := p.t.addPending(p.s, &PendingInfo{Kind: "approval", Agent: agent, Reason: reason, Commands: cmds})
	if err := p.t.wait(ctx, it); err != nil {
		return false, err
	}
	p.t.mu.Lock()
	ok := it.Approved != nil && *it.Approved
	p.t.mu.Unlock()
	if err := j.append(entryAnswer, "", ok); err != nil {
		p.s.logf("task %s: approval not recorded: %v", p.t.info.ID, err)
	}
	return ok, nil
}

// addPending opens a question or an approval, with its timeout.
func (t *task) addPending(s *Server, it *PendingInfo) *PendingInfo {
	now := time.Now().UTC()
	t.mu.Lock()
	it.ID = strconv.Itoa(len(t.pending) + 1)
	it.Status, it.CreatedAt, it.ExpiresAt = "open", now, now.Add(s.opts.AskTimeout)
	it.settled = make(chan struct{})
	t.pending = append(t.pending, it)
	timer := time.AfterFunc(s.opts.AskTimeout, func() {
		f := false
		t.settle(it, "timed_out", "timeout", nil, &f)
	})
	it.expireStop = timer.Stop
	t.publishLocked(EventPending, *it)
	s.logf("task %s: %s %s from %s is waiting (GET /api/tasks/%s/pending)", t.info.ID, it.Kind, it.ID, it.Agent, t.info.ID)
	t.mu.Unlock()
	s.persistNow(t)
	return it
}

// wait blocks until it is settled or ctx ends (the task is cancelled).
func (t *task) wait(ctx context.Context, it *PendingInfo) error {
	select {
	case <-it.settled:
		return nil
	case <-ctx.Done():
		t.settle(it, "withdrawn", "the task's end", nil, nil)
		return context.Cause(ctx)
	}
}

// settle closes an open item; it reports false when it was already settled.
func (t *task) settle(it *PendingInfo, status, by string, answer *string, approve *bool) bool {
	t.mu.Lock()
	if it.Status != "open" {
		t.mu.Unlock()
		return false
	}
	now := time.Now().UTC()
	it.Status, it.SettledAt, it.SettledBy = status, &now, by
	if answer != nil {
		it.Answer = *answer
	}
	if approve != nil && it.Kind == "approval" {
		it.Approved = approve
	}
	it.expireStop()
	close(it.settled)
	t.publishLocked(EventPending, *it)
	t.mu.Unlock()
	t.srv.persistNow(t)
	return true
}

// pendingList copies a task's questions and approvals.
func (t *task) pendingList() []PendingInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]PendingInfo, 0, len(t.pending))
	for _, it := range t.pending {
		out = append(out, *it)
	}
	return out
}

// Pending lists a task's questions and approvals, open and settled.
func (s *Server) Pending(taskID string) ([]PendingInfo, error) {
	s.mu.Lock()
	t := s.tasks[taskID]
	s.mu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("%w %q", ErrNoTask, taskID)
	}
	return t.pendingList(), nil
}

// Settle answers a question or decides an approval of a running task,
// as the holder of the server's key (Options.KeyLabel).
func (s *Server) Settle(taskID, id string, a Answer) (PendingInfo, error) {
	return s.SettleAs(taskID, id, s.queuedBy(), a)
}

// SettleAs is Settle recorded as settled by by (a PendingInfo's
// SettledBy).
func (s *Server) SettleAs(taskID, id, by string, a Answer) (PendingInfo, error) {
	s.mu.Lock()
	t := s.tasks[taskID]
	s.mu.Unlock()
	if t == nil {
		return PendingInfo{}, fmt.Errorf("%w %q", ErrNoTask, taskID)
	}
	t.mu.Lock()
	var it *PendingInfo
	for _, p := range t.pending {
		if p.ID == id {
			it = p
		}
	}
	t.mu.Unlock()
	switch {
	case it == nil:
		return PendingInfo{}, fmt.Errorf("%w: task %s has no question or approval %q (GET /api/tasks/%s/pending lists them)", ErrNoPending, taskID, id, taskID)
	case it.Kind == "question" && (a.Answer == nil || a.Approve != nil):
		return PendingInfo{}, fmt.Errorf("%w: %s is a question: send {\"answer\": \"...\"}", ErrBadRequest, id)
	case it.Kind == "approval" && (a.Approve == nil || a.Answer != nil):
		return PendingInfo{}, fmt.Errorf("%w: %s is an approval: send {\"approve\": true} or {\"approve\": false}", ErrBadRequest, id)
	}
	if !t.settle(it, "answered", by, a.Answer, a.Approve) {
		t.mu.Lock()
		cp := *it
		t.mu.Unlock()
		// The status is final before done is closed: look at both, so
		// a client that saw the task end is told so.
		if st := t.snapshot().Status; t.ended() || st != StatusRunning || cp.SettledBy == "the task's end" {
			return cp, fmt.Errorf("%w (%s): %s %s can no longer be answered", ErrTaskEnded, st, it.Kind, id)
		}
		return cp, fmt.Errorf("%w: %s %s was %s at %s by %s", ErrSettled, it.Kind, id, cp.Status, cp.SettledAt.Format(time.RFC3339), cp.SettledBy)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return *it, nil
}

func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	list, err := s.Pending(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) settlePending(w http.ResponseWriter, r *http.Request) {
	var a Answer
	body, ok := ReadBody(w, r, maxBody)
	if !ok {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeError(w, fmt.Errorf("%w: the body must be {\"answer\": \"...\"} or {\"approve\": true|false}: %v", ErrBadRequest, err))
		return
	}
	it, err := s.Settle(r.PathValue("id"), r.PathValue("pid"), a)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, it)
}
