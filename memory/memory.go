// Package memory holds what agents remember: each agent's own step history
// (Memory) and the Blackboard the host and app agents share.
package memory

import (
	"iter"
	"sync"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

// Step is one finished agent step as the agent remembers it.
type Step struct {
	Agent string `json:"agent"`
	Round int    `json:"round"`
	Step  int    `json:"step"`
	// Reply is the assistant turn that produced the step's actions, kept as
	// the model wrote it so the next prompt repeats it exactly (which keeps
	// provider prompt caches warm).
	Reply    llm.Message       `json:"reply"`
	Thought  string            `json:"thought,omitempty"`
	Status   string            `json:"status"`
	Commands []command.Command `json:"commands,omitempty"`
	// CallIDs[i] is the model's tool-call id for Commands[i] (tools mode).
	CallIDs []string         `json:"call_ids,omitempty"`
	Results []command.Result `json:"results,omitempty"`
	// Notes are extra user turns that belong after this step (a user's
	// answer to a PENDING question, a confirmation decision).
	Notes    []string      `json:"notes,omitempty"`
	Usage    llm.Usage     `json:"usage"`
	Duration time.Duration `json:"duration"`
}

// Memory is one agent's history. It is not safe for concurrent use: an
// agent works one step at a time.
type Memory struct {
	steps []Step
}

// Add appends a step.
func (m *Memory) Add(s Step) {
	if m.steps == nil {
		m.steps = make([]Step, 0, 4) // most agents take a few steps: grown once
	}
	m.steps = append(m.steps, s)
}

// Steps returns the remembered steps, oldest first. Callers must not modify
// the returned slice.
func (m *Memory) Steps() []Step { return m.steps }

// Len is the number of remembered steps.
func (m *Memory) Len() int { return len(m.steps) }

// Last returns the newest step, if any.
func (m *Memory) Last() (Step, bool) {
	if len(m.steps) == 0 {
		return Step{}, false
	}
	return m.steps[len(m.steps)-1], true
}

// Note is a finished subtask's outcome, as written on the blackboard.
type Note struct {
	Subtask string `json:"subtask"`
	App     string `json:"app"`
	Status  string `json:"status"`
	Result  string `json:"result"`
}

// Blackboard is shared by the host agent and its app agents: the outcomes
// of finished subtasks and free key/value facts. Safe for concurrent use.
type Blackboard struct {
	mu     sync.RWMutex
	notes  []Note
	values map[string]string
}

// AddNote records a subtask's outcome.
func (b *Blackboard) AddNote(n Note) {
	b.mu.Lock()
	b.notes = append(b.notes, n)
	b.mu.Unlock()
}

// Notes returns a copy of the notes, oldest first.
func (b *Blackboard) Notes() []Note {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return append([]Note(nil), b.notes...)
}

// All yields the notes, oldest first, without copying them; notes added
// meanwhile wait until it is done, so yield must not add one.
func (b *Blackboard) All() iter.Seq[Note] {
	return func(yield func(Note) bool) {
		b.mu.RLock()
		defer b.mu.RUnlock()
		for _, n := range b.notes {
			if !yield(n) {
				return
			}
		}
	}
}

// Len is the number of notes.
func (b *Blackboard) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.notes)
}

// Set stores a fact under key.
func (b *Blackboard) Set(key, value string) {
	b.mu.Lock()
	if b.values == nil {
		b.values = map[string]string{}
	}
	b.values[key] = value
	b.mu.Unlock()
}

// Get returns the fact stored under key.
func (b *Blackboard) Get(key string) (string, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	v, ok := b.values[key]
	return v, ok
}

// AddNote appends a user turn to the newest step (a user's answer to a
// question the agent asked, for example).
func (m *Memory) AddNote(note string) {
	if len(m.steps) == 0 {
		return
	}
	m.steps[len(m.steps)-1].Notes = append(m.steps[len(m.steps)-1].Notes, note)
}
