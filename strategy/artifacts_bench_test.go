package strategy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
)

// BenchmarkRequestAfterHugeResult is an app agent's next five requests
// (built and encoded as a provider sends them) after one step printed
// 3.4 MB: with the result kept as an artifact (max_result_chars 16000)
// against the same history sent whole (max_result_chars 0, as every
// request did before artifacts when unbounded). req-bytes is what one
// request sends.
func BenchmarkRequestAfterHugeResult(b *testing.B) {
	var seq strings.Builder
	for i := 1; i <= 500000; i++ {
		seq.WriteString(strconv.Itoa(i))
		seq.WriteByte('\n')
	}
	out, _ := json.Marshal(map[string]any{"stdout": seq.String(), "stderr": "", "exit_code": 0})
	set, err := prompts.Load("")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		limit int
	}{{"artifact", 16000}, {"whole", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				mem := &memory.Memory{}
				call := llm.ToolCall{ID: "c1", Name: "execute_command", Arguments: `{"command":"seq 1 500000"}`}
				mem.Add(memory.Step{Agent: "app:shell#1", Step: 1, Status: "CONTINUE", Reply: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
					Commands: []command.Command{{ToolName: "execute_command"}}, CallIDs: []string{"c1"},
					Results: []command.Result{{Status: command.Success, Result: out}}})
				pc := NewContext(Setup{Agent: Agent{Name: "app:shell#1", Role: fsm.App, App: "shell"}, Mode: ModeTools, Prompts: set,
					Memory: mem, Limits: Limits{MaxResultChars: bc.limit}, MaxSteps: 20, Artifacts: &memory.Artifacts{Threshold: bc.limit}})
				for range 5 {
					msgs, err := Conversation(pc)
					if err != nil {
						b.Fatal(err)
					}
					body, _ := json.Marshal(llm.Request{Messages: msgs})
					size = len(body)
				}
			}
			b.ReportMetric(float64(size), "req-bytes")
		})
	}
}
