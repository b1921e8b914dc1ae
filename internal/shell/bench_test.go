package shell

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkCommand runs `echo hi` in a fresh shell per call (the baseline)
// and in the persistent shell, through the tool's handler.
func BenchmarkCommand(b *testing.B) {
	for _, persistent := range []bool{false, true} {
		name := "fresh"
		if persistent {
			name = "persistent"
		}
		b.Run(name, func(b *testing.B) {
			opts := Options{Dir: b.TempDir(), Persistent: persistent}
			r := &runner{opts: opts.withDefaults(), policy: &compiled{}}
			if persistent {
				r.session = &session{opts: r.opts, env: r.policy.environ()}
				defer r.session.Close()
			}
			for b.Loop() {
				out, err := r.execute(context.Background(), ExecuteInput{Command: "echo hi"})
				if err != nil || out.Stdout != "hi\n" {
					b.Fatalf("%+v %v", out, err)
				}
			}
		})
	}
}

// BenchmarkPolicyCheck judges typical command lines under an allow list
// (what every call pays before its command runs; compare with
// BenchmarkCommand/fresh, the cost of running one).
func BenchmarkPolicyCheck(b *testing.B) {
	pol, err := compilePolicy(Policy{
		Allow: []string{"ls *", "grep *", "cat *", "python3 *", "find *", "sort", "sort *", "echo *", "bash -c *"},
		Deny:  []string{"*rm -rf*", "sudo *"},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range []string{
		`ls -la | grep -v '^total' && cat notes.txt`,
		`find . -name '*.go' -newer go.mod | sort | python3 scripts/count.py --top 10; echo "done: $?"`,
		`bash -c 'for f in *.txt; do echo "$f"; done'`,
	} {
		b.Run(strings.Fields(line)[0], func(b *testing.B) {
			for b.Loop() {
				if why := pol.checkCommand(line); why != "" {
					b.Fatal(why)
				}
			}
		})
	}
}
