package session_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/session"
)

// A budget reached stops the session between commands, FAIL, saying which
// budget and what was spent.
func TestBudgets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget config.Budget
		want   string
	}{
		{"model calls", config.Budget{ModelCalls: 2}, "the budget of 2 model calls is spent (used 2 model calls"},
		// Between the demo's first request (about 1,020 tokens) and its
		// first two (about 1,710): reached by the second call.
		{"tokens", config.Budget{Tokens: 1350}, "tokens is spent (used 2 model calls"},
		{"wall time", config.Budget{Wall: config.Duration(time.Nanosecond)}, "the budget of 1ns wall time is spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Budget = tc.budget
			calls := runDemoOutcome(t, cfg)
			if calls.out.Status != fsm.Fail || !strings.Contains(calls.out.Budget, tc.want) || !strings.HasPrefix(calls.out.Answer, "stopped: ") {
				t.Errorf("outcome %s %q budget %q", calls.out.Status, calls.out.Answer, calls.out.Budget)
			}
			if tc.name == "model calls" && calls.n != 2 {
				t.Errorf("%d model calls after a budget of 2", calls.n)
			}
		})
	}
	// A cost budget, the model priced at $1 per token.
	cfg := config.Default()
	cfg.Budget = config.Budget{CostUSD: 1000}
	r := runDemoOutcomePriced(t, cfg, map[string]price.Price{cfg.Model: {Prompt: 1e6, Completion: 1e6}})
	if r.out.Status != fsm.Fail || !strings.Contains(r.out.Budget, "the budget of $1000.0000 cost is spent") {
		t.Errorf("cost: %s %q", r.out.Status, r.out.Budget)
	}
	if c, ok := r.out.Cost.Known(); !ok || c < 1000 || r.out.Cost.Estimated {
		t.Errorf("the outcome's cost %+v, want at least $1000, known", r.out.Cost)
	}
}

// A budget that cannot be enforced is refused before anything runs,
// saying why and what to do: a cost budget for a model (or a fallback)
// without a price. Model calls, tokens and wall time always hold.
func TestBudgetThatCannotBeEnforcedIsRefused(t *testing.T) {
	for _, tc := range []struct {
		model     string
		fallbacks []string
		budget    config.Budget
		refused   string // the unpriced model named, "" when accepted
	}{
		{model: "anthropic:claude-3-opus-20240229", budget: config.Budget{CostUSD: 5}, refused: "anthropic:claude-3-opus-20240229"},
		{model: "openai-compatible:local", budget: config.Budget{CostUSD: 0.5}, refused: "openai-compatible:local"},
		{model: "openai:gpt-4o", fallbacks: []string{"vllm:qwen"}, budget: config.Budget{CostUSD: 1}, refused: "vllm:qwen"},
		{model: "anthropic:claude-sonnet-4-5", budget: config.Budget{CostUSD: 1}},
		{model: "ollama:qwen2.5", budget: config.Budget{CostUSD: 1}},
		{model: "openai-compatible:local", budget: config.Budget{Tokens: 1000, ModelCalls: 3, Wall: config.Duration(time.Minute)}},
	} {
		cfg := config.Default()
		cfg.Model, cfg.Budget = tc.model, tc.budget
		if tc.fallbacks != nil {
			cfg.Models = map[string]config.Model{tc.model: {Fallbacks: tc.fallbacks}}
		}
		_, err := session.New(cfg, session.Options{Dispatcher: noDevice{}, Model: scripted.New(scripted.Script{Replies: []scripted.Reply{{Text: "x"}}})})
		if check := session.Check(cfg, t.TempDir(), ""); fmt.Sprint(check) != fmt.Sprint(err) {
			t.Errorf("%s: session.Check says %v, session.New %v", tc.model, check, err)
		}
		if tc.refused == "" {
			if err != nil {
				t.Errorf("%s with %+v: %v", tc.model, tc.budget, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s with %+v was accepted", tc.model, tc.budget)
			continue
		}
		for _, want := range []string{"budget.cost_usd", "cannot be enforced", tc.refused + " has no price", "prices: {\"" + tc.refused + "\"", "remove budget.cost_usd"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant it to say %q", tc.model, err, want)
			}
		}
		// With its price in the config, the same budget holds.
		cfg.Prices = map[string]config.Price{tc.refused: {Prompt: 3, Completion: 15}}
		if _, err := session.New(cfg, session.Options{Dispatcher: noDevice{}, Model: scripted.New(scripted.Script{Replies: []scripted.Reply{{Text: "x"}}})}); err != nil {
			t.Errorf("%s priced: %v", tc.model, err)
		}
	}
}

// A server that sends no usage, in OpenAI's wire shapes (a compatible
// server, Ollama; whole and streamed), is counted by Saucer: the tokens
// budget holds, and every figure says it is an estimate.
func TestNoUsageIsCountedAndMarkedEstimated(t *testing.T) {
	for _, sh := range []shape{oaiJSON, oaiSSE, ollama, ollSSE} {
		t.Run(string(sh), func(t *testing.T) {
			srv := &faultServer{sh: sh, acts: []act{withoutUsage(reply("tool_calls", finishCall("all done")))}}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			cfg, err := config.FromYAML([]byte("model: " + sh.spec() + "\nproviders:\n" + sh.providerYAML(hs.URL, "") +
				"prices: {\"openai:gpt-4o\": {prompt: 2.5, completion: 10}}\nmodels: {\"" + sh.spec() + "\": {mode: tools}}\n"))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				calls []agent.Event
				steps []agent.Event
			)
			out := runWire(t, cfg, sh, func(e agent.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Kind {
				case agent.EventModelCall:
					calls = append(calls, e)
				case agent.EventStep:
					steps = append(steps, e)
				}
			})
			if !out.OK() || len(calls) != 1 || len(steps) != 1 {
				t.Fatalf("%s %q after %d model calls, %d steps", out.Status, out.Answer, len(calls), len(steps))
			}
			u := calls[0].Response.Usage
			want := tokens.Request(sh.spec(), calls[0].Request)
			if !u.Estimated || u.PromptTokens != want || u.CompletionTokens == 0 || out.Usage != u {
				t.Errorf("usage %+v (outcome %+v), want %d prompt tokens counted by Saucer, estimated", u, out.Usage, want)
			}
			// Priced as estimated: Ollama at $0, gpt-4o at its price.
			wantUSD := 0.0
			if !sh.ollama() {
				wantUSD = (2.5*float64(u.PromptTokens) + 10*float64(u.CompletionTokens)) / 1e6
			}
			if c := out.Cost; c.Unknown || !c.Estimated || math.Abs(c.USD-wantUSD) > 1e-12 || !strings.HasPrefix(c.String(), "~$") {
				t.Errorf("cost %+v %q, want ~$%.6f", c, c, wantUSD)
			}
			if steps[0].Cost != out.Cost || calls[0].Cost != out.Cost {
				t.Errorf("the events' costs %+v, %+v, want %+v", calls[0].Cost, steps[0].Cost, out.Cost)
			}
		})
	}
	// The count is what a tokens budget counts.
	srv := &faultServer{sh: oaiJSON, acts: []act{withoutUsage(reply("tool_calls", assignCall())), withoutUsage(reply("tool_calls", finishCall("x")))}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cfg, err := config.FromYAML([]byte("model: openai:gpt-4o\nproviders:\n" + oaiJSON.providerYAML(hs.URL, "") + "budget: {tokens: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := runWire(t, cfg, oaiJSON, nil)
	if out.Status != fsm.Fail || !strings.Contains(out.Budget, "the budget of 100 tokens is spent (used 1 model calls, ~") ||
		!strings.Contains(out.Budget, "tokens (estimated), ~$") {
		t.Errorf("%s, budget %q", out.Status, out.Budget)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("the server saw %d requests after the budget was spent by the first", n)
	}
}

// A model without a price has an unknown cost, never $0: Anthropic over
// its own wire (through langchaingo), priced and not.
func TestCostUnknownWithoutPrice(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"anthropic:claude-sonnet-4-5", fmt.Sprintf("$%.4f", (3*100.0+15*9)/1e6)},
		{"anthropic:claude-3-haiku-20240307", "cost unknown"},
	} {
		srv := &faultServer{sh: antJSON, acts: []act{reply("tool_calls", finishCall("all done"))}}
		hs := httptest.NewServer(srv)
		cfg, err := config.FromYAML([]byte("model: " + tc.model + "\nproviders:\n" + antJSON.providerYAML(hs.URL, "")))
		if err != nil {
			t.Fatal(err)
		}
		var steps []agent.Event
		out := runWire(t, cfg, antJSON, func(e agent.Event) {
			if e.Kind == agent.EventStep {
				steps = append(steps, e)
			}
		})
		hs.Close()
		if !out.OK() || out.Usage.Estimated || out.Usage.PromptTokens != 100 {
			t.Errorf("%s: %s, usage %+v", tc.model, out.Status, out.Usage)
		}
		if got := out.Cost.String(); got != tc.want || len(steps) != 1 || steps[0].Cost.String() != tc.want {
			t.Errorf("%s: cost %q (step %v), want %q", tc.model, got, steps, tc.want)
		}
		if tc.want == "cost unknown" && out.Cost.USDPointer() != nil {
			t.Errorf("%s: an unknown cost has a dollar figure", tc.model)
		}
	}
}

// A fallback's reply is priced at the fallback's price.
func TestFallbackPricedByTheModelThatAnswered(t *testing.T) {
	down := scripted.New(scripted.Script{Replies: []scripted.Reply{{Error: "server"}}})
	mini, err := scripted.Parse([]byte(`replies: [{tool_calls: [{name: finish_task, arguments: {result: done}}], usage: {prompt_tokens: 1000000, completion_tokens: 0}}]`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"openai:gpt-4o": {Fallbacks: []string{"openai:gpt-4o-mini"}}}
	model := &llm.Fallback{Models: []llm.Named{{Spec: "openai:gpt-4o", Model: down}, {Spec: "openai:gpt-4o-mini", Model: scripted.New(*mini)}}}
	out := runLocal(t, cfg, t.TempDir(), session.Options{Model: model}, "anything")
	if !out.OK() || out.Cost.String() != "$0.1500" {
		t.Errorf("%s %v, cost %s, want gpt-4o-mini's $0.15 for a million prompt tokens", out.Status, out.Err, out.Cost)
	}
}

// withoutUsage is act with the usage taken out of what it sends: a server
// that reports none.
func withoutUsage(a act) act {
	return func(w http.ResponseWriter, r *http.Request, sh shape) {
		rec := httptest.NewRecorder()
		a(rec, r, sh)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		body := usageField.ReplaceAllString(rec.Body.String(), "")
		body = strings.ReplaceAll(body, `"choices":[],`, `"choices":[{"index":0,"delta":{}}],`)
		io.WriteString(w, body)
	}
}

var usageField = regexp.MustCompile(`,"usage":\{[^}]*\}`)

// runWire runs a session against a loopback model server, on a device in
// a temp dir.
func runWire(t *testing.T, cfg *config.Config, sh shape, observe func(agent.Event)) *agent.Outcome {
	t.Helper()
	o := session.Options{OnChunk: onChunk(sh)}
	if observe != nil {
		o.Observers = []func(agent.Event){observe}
	}
	return runLocal(t, cfg, t.TempDir(), o, "do it")
}

// noDevice is a device that runs nothing.
type noDevice struct{}

func (noDevice) Execute(_ context.Context, cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	for i := range cmds {
		out[i] = command.Failed("", "no device")
	}
	return out
}
