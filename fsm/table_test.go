package fsm

import (
	"slices"
	"strings"
	"testing"
)

var roles = []Role{Host, App, Constellation}

// TestTableIsValid checks the transition tables themselves, so a careless
// edit of the data fails here rather than in an agent run.
func TestTableIsValid(t *testing.T) {
	for _, r := range roles {
		t.Run(string(r), func(t *testing.T) {
			states := States(r)
			table := Table(r)
			if len(table) != len(states) {
				t.Fatalf("table has %d rows, role has %d states", len(table), len(states))
			}
			if !slices.Contains(states, Start) {
				t.Fatalf("start state %s is not a %s state", Start, r)
			}
			for _, from := range states {
				targets, ok := table[from]
				if !ok {
					t.Errorf("state %s has no row", from)
					continue
				}
				if from.Terminal() != (len(targets) == 0) {
					t.Errorf("%s: terminal=%v but has %d exits", from, from.Terminal(), len(targets))
				}
				seen := map[State]bool{}
				for _, to := range targets {
					if !slices.Contains(states, to) {
						t.Errorf("%s -> %s: target is not a %s state", from, to, r)
					}
					if seen[to] {
						t.Errorf("%s -> %s listed twice", from, to)
					}
					seen[to] = true
				}
				if !from.Terminal() && (!seen[Fail] || !seen[Error]) {
					t.Errorf("%s cannot go to FAIL and ERROR: %v", from, targets)
				}
			}

			reach := reachable(table, Start)
			for _, s := range states {
				if !reach[s] {
					t.Errorf("%s is not reachable from %s", s, Start)
				}
				canEnd := false
				for end := range reachable(table, s) {
					canEnd = canEnd || end.Terminal()
				}
				if !canEnd {
					t.Errorf("%s cannot reach a terminal state", s)
				}
			}
		})
	}
}

// reachable returns the states reachable from start (start included).
func reachable(table map[State][]State, start State) map[State]bool {
	seen := map[State]bool{start: true}
	queue := []State{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, to := range table[s] {
			if !seen[to] {
				seen[to] = true
				queue = append(queue, to)
			}
		}
	}
	return seen
}

func TestRoleStates(t *testing.T) {
	tests := []struct {
		role Role
		want []State
	}{
		{Host, []State{Continue, Assign, Finish, Fail, Error, Pending}},
		{App, []State{Continue, Finish, Fail, Error, Pending, Confirm}},
		{Constellation, []State{Continue, Finish, Fail, Error}},
		{Role("nobody"), nil},
	}
	for _, tt := range tests {
		if got := States(tt.role); !slices.Equal(got, tt.want) {
			t.Errorf("States(%s) = %v, want %v", tt.role, got, tt.want)
		}
	}
}

func TestTableReturnsCopy(t *testing.T) {
	table := Table(Host)
	table[Continue][0] = Confirm
	table[Finish] = []State{Continue}
	if Table(Host)[Continue][0] != Assign || len(Table(Host)[Finish]) != 0 {
		t.Fatal("changing the returned table changed the package's table")
	}
	if Table(Role("nobody")) != nil {
		t.Fatal("Table of an unknown role is not nil")
	}
}

func TestTerminal(t *testing.T) {
	for _, s := range allStates {
		want := s == Finish || s == Fail || s == Error
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, s.Terminal(), want)
		}
	}
}

func TestParseState(t *testing.T) {
	tests := []struct {
		in   string
		want State
	}{
		{"FINISH", Finish},
		{"finish", Finish},
		{"  Continue\n", Continue},
		{"confirm", Confirm},
		{"assign", Assign},
	}
	for _, tt := range tests {
		got, err := ParseState(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseState(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "DONE", "FINISHED", "con tinue"} {
		_, err := ParseState(bad)
		if err == nil {
			t.Errorf("ParseState(%q) succeeded", bad)
			continue
		}
		msg := err.Error()
		for _, s := range allStates {
			if !strings.Contains(msg, string(s)) {
				t.Errorf("ParseState(%q) error %q does not list %s", bad, msg, s)
			}
		}
	}
}
