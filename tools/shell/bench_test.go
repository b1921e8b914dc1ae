package shell

import (
	"context"
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
