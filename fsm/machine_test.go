package fsm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestValidPaths(t *testing.T) {
	tests := []struct {
		name string
		role Role
		path []State
	}{
		{"host assigns then finishes", Host, []State{Assign, Assign, Finish}},
		{"host asks the user", Host, []State{Assign, Pending, Continue, Assign, Pending, Fail}},
		{"host errors", Host, []State{Assign, Error}},
		{"app works then finishes", App, []State{Continue, Continue, Confirm, Continue, Finish}},
		{"app waits for the user", App, []State{Pending, Continue, Confirm, Finish}},
		{"app asks then fails", App, []State{Pending, Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.role)
			if m.Current() != Continue || m.Terminal() {
				t.Fatalf("new machine: state %s terminal %v", m.Current(), m.Terminal())
			}
			for _, s := range tt.path {
				if !m.Can(s) {
					t.Fatalf("Can(%s) is false in %s", s, m.Current())
				}
				if err := m.Go(context.Background(), s); err != nil {
					t.Fatalf("Go(%s): %v", s, err)
				}
				if m.Current() != s {
					t.Fatalf("after Go(%s) the state is %s", s, m.Current())
				}
			}
			if !m.Terminal() {
				t.Fatalf("ended in %s, not terminal", m.Current())
			}
			want := append([]State{Continue}, tt.path...)
			if got := m.History(); !slices.Equal(got, want) {
				t.Fatalf("History() = %v, want %v", got, want)
			}
			if len(m.Next()) != 0 {
				t.Fatalf("Next() in terminal %s = %v", m.Current(), m.Next())
			}
		})
	}
}

func TestSelfTransition(t *testing.T) {
	for _, r := range []Role{App} { // the host never stays in CONTINUE
		m := New(r)
		for range 3 {
			if err := m.Go(context.Background(), Continue); err != nil {
				t.Fatalf("%s: CONTINUE -> CONTINUE: %v", r, err)
			}
		}
		if m.Current() != Continue {
			t.Fatalf("%s: state %s", r, m.Current())
		}
		// The machine is not stuck: a real move still works afterwards.
		if err := m.Go(context.Background(), Finish); err != nil {
			t.Fatalf("%s: CONTINUE -> FINISH after self-transitions: %v", r, err)
		}
		want := []State{Continue, Continue, Continue, Continue, Finish}
		if got := m.History(); !slices.Equal(got, want) {
			t.Fatalf("%s: History() = %v, want %v", r, got, want)
		}
	}
}

func TestInvalidTransitions(t *testing.T) {
	tests := []struct {
		name     string
		role     Role
		path     []State // valid moves first
		to       State
		contains []string
	}{
		{"app from a final state", App, []State{Finish}, Continue,
			[]string{"app agent: cannot go from FINISH to CONTINUE (FINISH is final)"}},
		{"host from a final state to itself", Host, []State{Fail}, Fail,
			[]string{"host agent: cannot go from FAIL to FAIL (FAIL is final)"}},
		{"host to a state it does not have", Host, []State{Pending}, Confirm,
			[]string{"host agent: cannot go from PENDING to CONFIRM", "CONFIRM is not a state of the host agent", "allowed: CONTINUE, FAIL, ERROR)"}},
		{"app to a state it does not have", App, nil, Assign,
			[]string{"app agent: cannot go from CONTINUE to ASSIGN", "ASSIGN is not a state of the app agent"}},
		{"host pending to pending", Host, []State{Pending}, Pending,
			[]string{"host agent: cannot go from PENDING to PENDING (allowed: CONTINUE, FAIL, ERROR)"}},
		{"app confirm to pending", App, []State{Confirm}, Pending,
			[]string{"app agent: cannot go from CONFIRM to PENDING (allowed: CONTINUE, FINISH, FAIL, ERROR)"}},
		{"unknown state", App, nil, State("DONE"),
			[]string{"cannot go from CONTINUE to DONE", "DONE is not a state of the app agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.role)
			for _, s := range tt.path {
				if err := m.Go(context.Background(), s); err != nil {
					t.Fatalf("setup Go(%s): %v", s, err)
				}
			}
			before := m.Current()
			history := m.History()
			if m.Can(tt.to) {
				t.Fatalf("Can(%s) is true in %s", tt.to, before)
			}
			err := m.Go(context.Background(), tt.to)
			var te *TransitionError
			if !errors.As(err, &te) {
				t.Fatalf("Go(%s) = %v (%T), want *TransitionError", tt.to, err, err)
			}
			if te.Role != tt.role || te.From != before || te.To != tt.to {
				t.Fatalf("TransitionError = %+v, want role %s from %s to %s", *te, tt.role, before, tt.to)
			}
			for _, want := range tt.contains {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if m.Current() != before || !slices.Equal(m.History(), history) {
				t.Fatalf("a refused move changed the machine: %s %v", m.Current(), m.History())
			}
		})
	}
}

// TestCancelledContext guards against looplab/fsm's trap: an Event with a
// cancelled context leaves it "in transition" and every later event fails.
func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := New(App)
	for _, s := range []State{Confirm, Continue, Continue, Finish} {
		if err := m.Go(ctx, s); err != nil {
			t.Fatalf("Go(cancelled ctx, %s): %v", s, err)
		}
		if m.Current() != s {
			t.Fatalf("after Go(%s) state is %s", s, m.Current())
		}
	}
}

func TestHistoryIsACopy(t *testing.T) {
	m := New(Host)
	if err := m.Go(context.Background(), Assign); err != nil {
		t.Fatal(err)
	}
	h := m.History()
	h[0] = Error
	if got := m.History(); !slices.Equal(got, []State{Continue, Assign}) {
		t.Fatalf("History() = %v after changing a returned copy", got)
	}
}

func TestNext(t *testing.T) {
	m := New(Host)
	if err := m.Go(context.Background(), Assign); err != nil {
		t.Fatal(err)
	}
	want := []State{Assign, Finish, Fail, Error, Pending}
	if got := m.Next(); !slices.Equal(got, want) {
		t.Fatalf("Next() in ASSIGN = %v, want %v", got, want)
	}
}

func TestConcurrentGo(t *testing.T) {
	m := New(App)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if err := m.Go(context.Background(), Continue); err != nil {
					t.Error(err)
					return
				}
				_ = m.History()
			}
		})
	}
	wg.Wait()
	if got := len(m.History()); got != 801 {
		t.Fatalf("history has %d entries, want 801", got)
	}
}

func TestNewUnknownRolePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New(unknown role) did not panic")
		}
	}()
	New(Role("robot"))
}

func TestTransitionErrorFromUnknownState(t *testing.T) {
	err := &TransitionError{Role: Host, From: Confirm, To: Continue}
	want := "host agent: cannot go from CONFIRM to CONTINUE (CONFIRM is not a state of the host agent; its states: CONTINUE, ASSIGN, FINISH, FAIL, ERROR, PENDING)"
	if err.Error() != want {
		t.Fatalf("Error() = %q\nwant      %q", err.Error(), want)
	}
}

// A machine that reached a final state gives its looplab machine back for
// the next one: that next machine starts in CONTINUE and walks its own
// path, while the finished one stays final and refuses every move.
func TestFinishedMachinesLendTheirLooplabMachine(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		done := New(App)
		for _, s := range []State{Confirm, Continue, Finish} {
			if err := done.Go(ctx, s); err != nil {
				t.Fatalf("round %d: Go(%s): %v", i, s, err)
			}
		}
		next := New(App)
		if next.Current() != Continue {
			t.Fatalf("round %d: a new machine starts in %s", i, next.Current())
		}
		if err := next.Go(ctx, Pending); err != nil {
			t.Fatalf("round %d: the new machine: %v", i, err)
		}
		var te *TransitionError
		if err := done.Go(ctx, Continue); !errors.As(err, &te) || done.Current() != Finish || !done.Terminal() {
			t.Fatalf("round %d: the finished machine moved: %v, now %s", i, err, done.Current())
		}
		if next.Current() != Pending || !slices.Equal(next.History(), []State{Continue, Pending}) {
			t.Fatalf("round %d: the new machine is in %s, history %v", i, next.Current(), next.History())
		}
		if err := next.Go(ctx, Fail); err != nil {
			t.Fatal(err)
		}
	}
}
