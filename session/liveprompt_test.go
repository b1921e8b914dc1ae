package session_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
)

var update = flag.Bool("update", false, "rewrite testdata/demo-requests.golden")

const demoTask = "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder"

// runDemo runs the README's demo task with its scripted model and returns
// every request the model got.
func runDemo(t testing.TB, cfg *config.Config) []llm.Request {
	t.Helper()
	model, err := scripted.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out := runLocal(t, cfg, t.TempDir(), session.Options{Model: model}, demoTask); !out.OK() {
		t.Fatalf("demo: %s %s", out.Status, out.Answer)
	}
	return model.Calls()
}

type demoRun struct {
	out *agent.Outcome
	n   int
}

func runDemoOutcome(t testing.TB, cfg *config.Config) demoRun {
	return runDemoOutcomePriced(t, cfg, nil)
}

// runDemoOutcomePriced runs the demo with prices over the config's and
// returns how it ended and how many model calls it made.
func runDemoOutcomePriced(t testing.TB, cfg *config.Config, prices map[string]price.Price) demoRun {
	t.Helper()
	model, err := scripted.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := runLocal(t, cfg, t.TempDir(), session.Options{Model: model, Prices: prices}, demoTask)
	return demoRun{out, model.Count()}
}

// agentOf tells whose request it is, from its first user turn.
func agentOf(r llm.Request) string {
	intro := r.Messages[1].Content
	if i := strings.Index(intro, "## Your subtask ("); i >= 0 {
		return strings.Fields(intro[i+len("## Your subtask ("):])[0]
	}
	return "host"
}

// TestLivePrompt: over the whole demo run, every request ends with what is
// true at that step (step and round of the budget, the last-step warning,
// notes the history no longer shows) and otherwise repeats the agent's
// previous request, so that a prompt cache holds most of it.
func TestLivePrompt(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.MaxSteps, cfg.Agent.MaxRounds = 2, 3 // so that the last step and round come
	calls := runDemo(t, cfg)

	var b strings.Builder
	last := map[string]llm.Request{}
	for i, r := range calls {
		who := agentOf(r)
		var roles []string
		for _, m := range r.Messages {
			roles = append(roles, string(m.Role))
		}
		fmt.Fprintf(&b, "=== call %d (%s): %s\n%s\n", i+1, who, strings.Join(roles, " "), r.Messages[len(r.Messages)-1].Content)
		if prev, ok := last[who]; ok {
			// Everything but the previous status turn is still there.
			shared, total := llm.SharedPrefix(&prev, &r)
			stable, _ := llm.SharedPrefix(&llm.Request{Tools: prev.Tools, Messages: prev.Messages[:len(prev.Messages)-1]}, &r)
			if share := float64(shared) / float64(total); share < 0.8 {
				t.Errorf("call %d (%s): %.0f%% of the request repeats the agent's previous one, want at least 80%%", i+1, who, 100*share)
			}
			if p := prev.Messages[:len(prev.Messages)-1]; stable < requestSize(llm.Request{Tools: prev.Tools, Messages: p}) {
				t.Errorf("call %d (%s): the previous request's stable part is not a prefix of this one", i+1, who)
			}
		}
		last[who] = r
	}
	got := b.String()
	for _, want := range []string{
		"=== call 1 (host): system user user\nRound 1 of 3.",
		"=== call 3 (files): system user assistant tool user\nStep 2 of 2. This is your last step",
		// The note is the result of the host's call, not repeated below.
		"=== call 4 (host): system user assistant tool user\nRound 2 of 3.",
		// The shell agent has the files agent's note in its first turn,
		// not again at every step.
		"=== call 5 (shell): system user user\nNothing has run yet.",
		"=== call 6 (shell): system user assistant tool user\nStep 2 of 2.",
		"Round 2 of 3.",
		"Round 3 of 3. This is the last round",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the requests lack %q", want)
		}
	}
	golden := filepath.Join("testdata", "demo-requests.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./session -run TestLivePrompt -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("what the model saw at each step differs from %s (rerun with -update if intended):\n%s", golden, got)
	}
}

func requestSize(r llm.Request) int {
	_, n := llm.SharedPrefix(nil, &r)
	return n
}

// BenchmarkDemoPrompt reports, for the demo task, the prompt bytes per
// request and the share of each request that repeats its agent's previous
// one (from the agent's second request on): the lowest and the mean.
func BenchmarkDemoPrompt(b *testing.B) {
	cfg := config.Default()
	var bytes, n, repeats int
	var minShare, sumShare float64 = 1, 0
	for range b.N {
		calls := runDemo(b, cfg)
		last := map[string]llm.Request{}
		for _, r := range calls {
			who := agentOf(r)
			_, total := llm.SharedPrefix(nil, &r)
			bytes += total
			n++
			if prev, ok := last[who]; ok {
				shared, _ := llm.SharedPrefix(&prev, &r)
				share := float64(shared) / float64(total)
				minShare = min(minShare, share)
				sumShare += share
				repeats++
			}
			last[who] = r
		}
	}
	b.ReportMetric(float64(bytes)/float64(n), "prompt-bytes/request")
	b.ReportMetric(100*minShare, "min-prefix-%")
	b.ReportMetric(100*sumShare/float64(repeats), "mean-prefix-%")
}
