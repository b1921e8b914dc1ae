package price_test

import (
	"math"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
)

func usage(prompt, completion int) llm.Usage {
	return llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// A price is found exactly or by the longest pattern; a model without one
// has an unknown cost, which never reads as $0.
func TestCostKnownUnknownEstimated(t *testing.T) {
	p := price.Builtin()
	if c := p.Cost("scripted:/any/where/x.yaml", usage(1000, 100)); c.Unknown || c.USD != 0 || c.String() != "$0.0000" {
		t.Errorf("scripted: %+v %s", c, c)
	}
	c := p.Cost("openai:gpt-4o", usage(1_000_000, 1_000_000))
	if c.Unknown || math.Abs(c.USD-12.5) > 1e-9 || c.String() != "$12.5000" {
		t.Errorf("gpt-4o: %+v %s", c, c)
	}
	// gpt-4o-mini has its own entry; a dated gpt-4o-mini falls to no
	// pattern and is unknown rather than priced as gpt-4o.
	if c := p.Cost("openai:gpt-4o-mini", usage(1_000_000, 0)); math.Abs(c.USD-0.15) > 1e-9 {
		t.Errorf("gpt-4o-mini: %+v", c)
	}
	cached := usage(1_000_000, 0)
	cached.CachedTokens = 1_000_000
	if c := p.Cost("anthropic:claude-sonnet-4-5-20250929", cached); c.Unknown || math.Abs(c.USD-0.30) > 1e-9 {
		t.Errorf("claude-sonnet-4-5 cached: %+v", c)
	}
	u := p.Cost("openai-compatible:mystery", usage(10, 10))
	if !u.Unknown || u.String() != "cost unknown" || u.USDPointer() != nil {
		t.Errorf("an unpriced model: %+v %q", u, u)
	}
	est := usage(1_000_000, 0)
	est.Estimated = true
	e := p.Cost("openai:gpt-4o", est)
	if !e.Estimated || e.String() != "~$2.5000 (estimated)" {
		t.Errorf("estimated: %+v %q", e, e)
	}
	// Sums: unknown and estimated stick.
	sum := price.Cost{}.Add(c).Add(e)
	if sum.Unknown || !sum.Estimated || math.Abs(sum.USD-15) > 1e-9 {
		t.Errorf("sum %+v", sum)
	}
	if s := sum.Add(u); !s.Unknown || s.String() != "cost unknown" {
		t.Errorf("sum with an unknown part: %+v %q", s, s)
	}
	// The config's entries go over the built-in ones.
	more := p.With(map[string]price.Price{"openai-compatible:mystery": {Prompt: 1, Completion: 2}, "openai:gpt-4o": {Prompt: 5, Completion: 5}})
	if c := more.Cost("openai-compatible:mystery", usage(1_000_000, 1_000_000)); c.Unknown || math.Abs(c.USD-3) > 1e-9 {
		t.Errorf("configured: %+v", c)
	}
	if c := more.Cost("openai:gpt-4o", usage(1_000_000, 0)); math.Abs(c.USD-5) > 1e-9 {
		t.Errorf("override: %+v", c)
	}
	if _, ok := p.Lookup("openai-compatible:mystery"); ok {
		t.Error("With changed the table it was called on")
	}
}

// Among patterns the longest wins, and of two as long the first in byte
// order, whatever order the map gives; * matches any run, slashes too.
func TestLookupPrefersTheLongestPattern(t *testing.T) {
	tab := price.Table{
		"p:*":         {Prompt: 1},
		"p:big-*":     {Prompt: 2},
		"p:*-model":   {Prompt: 3},
		"p:b*g-*":     {Prompt: 4},
		"p:big-*-v*2": {Prompt: 5},
	}
	for model, want := range map[string]float64{
		"p:small":             1,
		"p:big-model":         3, // "p:*-model" is the longest of the four that match
		"p:big-x":             4, // "p:b*g-*" and "p:big-*" are as long; '*' comes before 'i'
		"p:big-a/b-v12":       5,
		"p:big-a/b-v1":        4,
		"q:big-model":         -1,
		"p:bog-model-but-not": 4,
	} {
		p, ok := tab.Lookup(model)
		if want < 0 {
			if ok {
				t.Errorf("%s: priced %+v, want no price", model, p)
			}
			continue
		}
		if !ok || p.Prompt != want {
			t.Errorf("%s: %+v %v, want the entry priced %v", model, p, ok, want)
		}
	}
}

// Each caller gets its own copy of the built-in table.
func TestBuiltinIsACopy(t *testing.T) {
	a := price.Builtin()
	a["openai:gpt-4o"] = price.Price{Prompt: 99}
	delete(a, "scripted:*")
	b := price.Builtin()
	if b["openai:gpt-4o"].Prompt == 99 {
		t.Error("a change to one Builtin table reached the next")
	}
	if _, ok := b["scripted:*"]; !ok {
		t.Error("a deletion from one Builtin table reached the next")
	}
}
