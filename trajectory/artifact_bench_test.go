package trajectory

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
)

// BenchmarkRecurringResult writes a command's 1 MB result twice, as a run
// does (its dispatch, then its step), against two different results of
// the same size: the recurring one is redacted once, so it costs about
// half.
func BenchmarkRecurringResult(b *testing.B) {
	result := func(seed int) json.RawMessage {
		var s strings.Builder
		for i := seed; s.Len() < 1<<20; i++ {
			s.WriteString(strconv.Itoa(i))
			s.WriteByte('\n')
		}
		raw, _ := json.Marshal(map[string]any{"stdout": s.String(), "exit_code": 0})
		return raw
	}
	one, other := result(1), result(2)
	for _, bc := range []struct {
		name        string
		first, then json.RawMessage
	}{{"recurring", one, one}, {"different", one, other}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				w, err := Create(b.TempDir(), Options{})
				if err != nil {
					b.Fatal(err)
				}
				cmds := []command.Command{{ToolName: "execute_command"}}
				w.Write(Event{Type: TypeSessionStart, Session: &Session{Task: "t"}})
				w.Write(Event{Type: TypeDispatch, Agent: "a", Commands: cmds, Results: []command.Result{{Status: command.Success, Result: bc.first}}})
				w.Write(Event{Type: TypeStep, Agent: "a", Step: 1, Commands: cmds, Results: []command.Result{{Status: command.Success, Result: bc.then}}})
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
