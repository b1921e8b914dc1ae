package strategy

import (
	"context"
	"fmt"
	"strings"
)

// Retriever gives an agent what was learned before that fits its work:
// experience from earlier runs, demonstrations and help documents
// (package knowledge keeps them; the assembly hands agents a Retriever).
// It is asked once per agent, before its first prompt, and what it
// returns goes into that prompt's first user turn, which every later
// request repeats unchanged (providers' prompt caches hold it).
type Retriever interface {
	Retrieve(ctx context.Context, q Query) (Retrieved, error)
}

// Query is what an agent asks a Retriever: the user's request, and for
// an app agent its subtask and app.
type Query struct {
	// Agent is the agent's name ("host", "app:shell#1"): a recording's
	// retriever answers by it.
	Agent   string
	Request string
	Subtask string
	App     string
}

// Text is what the entries are matched against: an app agent's subtask
// with the request it serves, or the host's request.
func (q Query) Text() string {
	if q.Subtask == "" || q.Subtask == q.Request {
		return q.Request
	}
	return q.Subtask + "\n" + q.Request
}

// Retrieved is what an agent was given: the text its prompt shows (with
// each entry's source named) and those sources, for the recording.
type Retrieved struct {
	Text    string   `json:"text,omitempty"`
	Sources []string `json:"sources,omitempty"`
}

// RetrieverFunc makes a function a Retriever.
type RetrieverFunc func(ctx context.Context, q Query) (Retrieved, error)

// Retrieve calls f.
func (f RetrieverFunc) Retrieve(ctx context.Context, q Query) (Retrieved, error) { return f(ctx, q) }

// Knowledge is what the agent's Retriever gave it, nil before its first
// prompt or without a Retriever.
func (pc *Context) Knowledge() *Retrieved { return pc.knowledge }

// retrieve asks the Retriever once. A failure costs the agent its
// knowledge, not its task: the step's errors say what went wrong.
func (pc *Context) retrieve(ctx context.Context) {
	if pc.retriever == nil || pc.knowledge != nil {
		return
	}
	q := Query{Agent: pc.agent.Name, Request: pc.request, Subtask: pc.subtask, App: pc.agent.App}
	got, err := pc.retriever.Retrieve(ctx, q)
	if err != nil {
		pc.errs = append(pc.errs, fmt.Errorf("knowledge: nothing retrieved, the agent goes on without: %w", err))
		got = Retrieved{}
	}
	got.Text = strings.TrimSpace(got.Text)
	pc.knowledge = &got
}

// knowledgeText is the text the agent's prompts show, "" for none.
func (pc *Context) knowledgeText() string {
	if pc.knowledge == nil {
		return ""
	}
	return pc.knowledge.Text
}
