package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/looplab/fsm"
)

// Machine walks one agent through its role's transition table. It starts in
// CONTINUE. It is safe for concurrent use, though an agent normally drives
// its machine from one goroutine.
type Machine struct {
	role Role

	mu sync.Mutex // serialises Go so history matches the transitions
	// machine is the looplab machine this one walks, until it reaches a
	// final state: then no transition is left to make, and it goes back
	// to its role's pool for a later Machine.
	machine *fsm.FSM
	current State
	history []State
}

// New returns a machine for role r in the start state (CONTINUE). It panics
// if r is not Host, App or Constellation: the role is chosen in code, never read from input.
func New(r Role) *Machine {
	pool, ok := rolePools()[r]
	if !ok {
		panic(fmt.Sprintf("fsm: unknown role %q (use fsm.Host, fsm.App or fsm.Constellation)", string(r)))
	}
	return &Machine{
		role:    r,
		machine: pool.Get().(*fsm.FSM),
		current: Start,
		history: append(make([]State, 0, 4), Start), // room for a few moves
	}
}

// rolePools hold each role's looplab machines in the start state, for
// reuse: every agent of every session makes a machine, and building a
// looplab machine from the events costs more than the agent's moves.
var rolePools = sync.OnceValue(func() map[Role]*sync.Pool {
	out := map[Role]*sync.Pool{}
	for r, events := range roleEvents() {
		out[r] = &sync.Pool{New: func() any { return fsm.NewFSM(string(Start), events, nil) }}
	}
	return out
})

// roleEvents are each role's looplab events, built once from the tables:
// one event per target state ("to_FINISH"), whose sources are the table's
// states that may reach it. looplab only reads them.
var roleEvents = sync.OnceValue(func() map[Role]fsm.Events {
	out := map[Role]fsm.Events{}
	for r, rows := range tables {
		events := fsm.Events{}
		for _, target := range States(r) {
			var sources []string
			for _, row := range rows {
				for _, to := range row.to {
					if to == target {
						sources = append(sources, string(row.from))
					}
				}
			}
			if len(sources) > 0 {
				events = append(events, fsm.EventDesc{Name: eventName(target), Src: sources, Dst: string(target)})
			}
		}
		out[r] = events
	}
	return out
})

// eventName is the looplab event that moves a machine to state to.
func eventName(to State) string {
	if name, ok := eventNames[to]; ok {
		return name
	}
	return "to_" + string(to)
}

// eventNames are the events of the states of the tables, named once: an
// agent moves at every step.
var eventNames = func() map[State]string {
	out := map[State]string{}
	for _, rows := range tables {
		for _, row := range rows {
			for _, to := range row.to {
				out[to] = "to_" + string(to)
			}
		}
	}
	return out
}()

// Role is the role the machine was made for.
func (m *Machine) Role() Role { return m.role }

// Current is the state the machine is in.
func (m *Machine) Current() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// Terminal reports whether the machine has reached a final state.
func (m *Machine) Terminal() bool { return m.Current().Terminal() }

// Next returns the states the machine may go to from where it is, in table
// order (empty once terminal). Prompts can list them for the model.
func (m *Machine) Next() []State {
	targets, _ := allowed(m.role, m.Current())
	return append([]State{}, targets...)
}

// Can reports whether Go(ctx, to) would succeed now.
func (m *Machine) Can(to State) bool { return Allowed(m.role, m.Current(), to) }

// History returns the states visited, in order, starting with CONTINUE. A
// self-transition (CONTINUE to CONTINUE) is one more entry: the history has
// one entry per successful Go plus the start.
func (m *Machine) History() []State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]State{}, m.history...)
}

// Go moves the machine to state to, or returns a *TransitionError (and stays
// where it is) if the table does not allow that move. Staying in the same
// state is a success when the table allows it (CONTINUE to CONTINUE).
//
// A transition is instant and cannot be half done, so Go completes even when
// ctx is already cancelled: the caller's cancellation is for the agent's
// work, not for bookkeeping, and looplab/fsm would otherwise be left stuck
// "in transition" and refuse every later event.
func (m *Machine) Go(ctx context.Context, to State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	from := m.current
	if !Allowed(m.role, from, to) {
		return &TransitionError{Role: m.role, From: from, To: to}
	}
	if from == to {
		// Staying (CONTINUE to CONTINUE, most steps): looplab would only
		// say NoTransitionError, with no callbacks to run.
		m.history = append(m.history, to)
		return nil
	}
	if ctx.Done() != nil { // a context that cannot be cancelled is kept as it is
		ctx = context.WithoutCancel(ctx)
	}
	err := m.machine.Event(ctx, eventName(to))
	// looplab reports a move to the current state as NoTransitionError; the
	// table allowed it, so for us it is a successful step.
	var same fsm.NoTransitionError
	if err != nil && !errors.As(err, &same) {
		// Unreachable while New builds the events from the same table.
		return fmt.Errorf("fsm: %s: moving from %s to %s: %w", m.role, from, to, err)
	}
	m.current = to
	m.history = append(m.history, to)
	if to.Terminal() {
		// No transition leaves a final state: the looplab machine is done.
		m.machine.SetState(string(Start))
		rolePools()[m.role].Put(m.machine)
		m.machine = nil
	}
	return nil
}

// TransitionError is a move the role's table does not allow (including a
// move to a state the role does not have).
type TransitionError struct {
	Role     Role
	From, To State
}

func (e *TransitionError) Error() string {
	prefix := fmt.Sprintf("%s: cannot go from %s to %s", e.Role, e.From, e.To)
	targets, known := allowed(e.Role, e.From)
	switch {
	case !known:
		return fmt.Sprintf("%s (%s is not a state of the %s; its states: %s)", prefix, e.From, e.Role, join(States(e.Role)))
	case e.From.Terminal() || len(targets) == 0:
		return fmt.Sprintf("%s (%s is final)", prefix, e.From)
	}
	if _, ok := allowed(e.Role, e.To); !ok {
		return fmt.Sprintf("%s (%s is not a state of the %s; allowed: %s)", prefix, e.To, e.Role, join(targets))
	}
	return fmt.Sprintf("%s (allowed: %s)", prefix, join(targets))
}
