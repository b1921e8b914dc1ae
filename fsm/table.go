// Package fsm holds the agents' states and the transitions between them: a
// transition table per role, declared as data and checked by tests, a Machine
// that walks it (on looplab/fsm) and a Mermaid picture of it.
//
// The agent loop decides the next state (from the model's reply) and calls
// Machine.Go; the machine only says whether that move is allowed and keeps
// the history. No callbacks are registered on the underlying looplab machine:
// the agent's work never runs inside a transition, and nothing fires an event
// from a callback (looplab/fsm deadlocks when that happens).
package fsm

import (
	"fmt"
	"slices"
	"strings"
)

// State is an agent's status, as the model reports it (CONTINUE, FINISH, ...).
type State string

// The states of Saucer's agents. Not every role uses every state: see States.
const (
	// Continue: the agent takes another step.
	Continue State = "CONTINUE"
	// Assign: the host agent hands a subtask to an app agent.
	Assign State = "ASSIGN"
	// Finish: the task (or subtask) is done. Terminal.
	Finish State = "FINISH"
	// Fail: the agent gave up on the task. Terminal.
	Fail State = "FAIL"
	// Error: something outside the task broke (device, model). Terminal.
	Error State = "ERROR"
	// Pending: the agent waits for something, for example the user's answer.
	Pending State = "PENDING"
	// Confirm: the agent asks the user to confirm a sensitive action.
	Confirm State = "CONFIRM"
)

// allStates is every state of any role, in the order ParseState lists them.
var allStates = []State{Continue, Assign, Finish, Fail, Error, Pending, Confirm}

// Start is the state every machine begins in.
const Start = Continue

// Terminal reports whether s is a final state (FINISH, FAIL or ERROR): no
// transition leaves it.
func (s State) Terminal() bool {
	return s == Finish || s == Fail || s == Error
}

// ParseState reads a state name as a model writes it: surrounding space and
// letter case are ignored ("finish", " Finish " and "FINISH" are all Finish).
func ParseState(s string) (State, error) {
	want := State(strings.ToUpper(strings.TrimSpace(s)))
	if slices.Contains(allStates, want) {
		return want, nil
	}
	return "", fmt.Errorf("fsm: unknown state %q: valid states are %s", s, join(allStates))
}

// Role says which agent a machine belongs to; each role has its own states
// and transitions.
type Role string

const (
	// Host is the agent that splits the task and assigns subtasks.
	Host Role = "host"
	// App is the agent that carries out one subtask in one application.
	App Role = "app"
	// Constellation is the agent that plans one request as a graph of
	// tasks on several devices and edits the graph as the tasks end.
	Constellation Role = "constellation"
)

// String names the role as it appears in messages ("host agent").
func (r Role) String() string { return string(r) + " agent" }

// edges is one row of a transition table: a source state and the states it
// may go to, in the order the diagram draws them.
type edges struct {
	from State
	to   []State
}

// tables is the single source of truth for transitions. Rows are in the
// role's state order (see States); terminal states have empty rows. Every
// non-terminal state may go to FAIL and ERROR so an agent can always stop.
// The tables hold only what replies can bring about (a test walks every
// state through real sessions): the host assigns, finishes, fails or asks
// the user (PENDING, back to CONTINUE with the answer); an app agent
// continues, finishes, fails, asks (PENDING) or has actions approved first
// (CONFIRM, then CONTINUE or FINISH as its reply said).
var tables = map[Role][]edges{
	Host: {
		{Continue, []State{Assign, Finish, Fail, Error, Pending}},
		{Assign, []State{Assign, Finish, Fail, Error, Pending}},
		{Finish, nil},
		{Fail, nil},
		{Error, nil},
		{Pending, []State{Continue, Fail, Error}},
	},
	App: {
		{Continue, []State{Continue, Finish, Fail, Error, Pending, Confirm}},
		{Finish, nil},
		{Fail, nil},
		{Error, nil},
		{Pending, []State{Continue, Fail, Error}},
		{Confirm, []State{Continue, Finish, Fail, Error}},
	},
	// The constellation agent takes one step when the request comes (it
	// creates the graph) and one after each batch of node endings (it
	// edits the graph): CONTINUE while the graph has work, FINISH once it
	// answers the request, FAIL when it gives up on it.
	Constellation: {
		{Continue, []State{Continue, Finish, Fail, Error}},
		{Finish, nil},
		{Fail, nil},
		{Error, nil},
	},
}

// States returns the states of role r in a fixed order (nil for an unknown
// role). The slice is a copy.
func States(r Role) []State {
	rows := tables[r]
	if rows == nil {
		return nil
	}
	out := make([]State, len(rows))
	for i, row := range rows {
		out[i] = row.from
	}
	return out
}

// Table returns role r's transitions: for each state, the states it may go
// to, in table order. Terminal states map to an empty slice. It returns a
// fresh copy (nil for an unknown role), so callers may change it freely.
func Table(r Role) map[State][]State {
	rows := tables[r]
	if rows == nil {
		return nil
	}
	out := make(map[State][]State, len(rows))
	for _, row := range rows {
		out[row.from] = append([]State{}, row.to...)
	}
	return out
}

// allowed returns the targets of from for role r and whether from is a state
// of that role.
func allowed(r Role, from State) ([]State, bool) {
	for _, row := range tables[r] {
		if row.from == from {
			return row.to, true
		}
	}
	return nil, false
}

// Allowed reports whether role r may go from one state to another.
func Allowed(r Role, from, to State) bool {
	targets, _ := allowed(r, from)
	return slices.Contains(targets, to)
}

func join(states []State) string {
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}
