package prompts_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/prompts"
)

// bigText is n bytes of a file's content as a model writes it into a
// reply: lines of prose and code, with braces, quotes and apostrophes.
func bigText(n int) string {
	line := `    if (x) { return "it's {done}"; } // check [1, 2]` + "\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// bigReplies are replies of about n bytes in the shapes models send them,
// each needing the parser's repairs: a json-mode reply written as a
// Python dict with the content raw (newlines unescaped) after prose with
// stray braces, and tool-call arguments with raw newlines and a trailing
// comma.
func bigReplies(n int) (jsonMode, arguments string) {
	content := bigText(n)
	escaped := strings.ReplaceAll(content, `'`, `\'`)
	jsonMode = "I will write the file {path} now; see {the plan}.\n```json\n" +
		`{'thought': 'write it', 'status': 'CONTINUE', 'actions': [{'function': 'write_file', 'arguments': {'path': 'main.c', 'content': '` + escaped + `'},},], 'plan': ['build it',],}` +
		"\n```"
	arguments = `{"path": "main.c", "content": "` + strings.ReplaceAll(content, `"`, `\"`) + `",}`
	return
}

// BenchmarkBigReply parses json-mode replies and tool-call arguments of 1
// and 5 MB. It reports the process's CPU time per MB (cpu-ms/MB), which
// the load of other processes on the machine does not change as it does
// wall time: linear parsing costs the same per MB at both sizes.
//
//	go test ./prompts -run '^$' -bench BigReply -benchtime 5x
func BenchmarkBigReply(b *testing.B) {
	for _, mb := range []int{1, 5} {
		jsonMode, args := bigReplies(mb << 20)
		b.Run(fmt.Sprintf("json/%dMB", mb), func(b *testing.B) {
			b.SetBytes(int64(len(jsonMode)))
			defer cpuPerMB(b, len(jsonMode))()
			for b.Loop() {
				r, err := prompts.ParseReply(jsonMode, nil)
				if err != nil || len(r.Actions) != 1 {
					b.Fatalf("%v", err)
				}
			}
		})
		b.Run(fmt.Sprintf("arguments/%dMB", mb), func(b *testing.B) {
			b.SetBytes(int64(len(args)))
			defer cpuPerMB(b, len(args))()
			for b.Loop() {
				if _, err := prompts.ParseArguments(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuPerMB reports, when the returned func runs, the CPU time the process
// spent per MB of input per iteration (user and system, all threads: the
// garbage collector's work counts).
func cpuPerMB(b *testing.B, size int) func() {
	start := cputime.Process()
	return func() {
		per := float64(cputime.Process()-start) / float64(time.Millisecond) / float64(b.N)
		b.ReportMetric(per/(float64(size)/(1<<20)), "cpu-ms/MB")
	}
}
