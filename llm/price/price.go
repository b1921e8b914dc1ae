// Package price says what model calls cost: a table of prices by model
// spec (built in, with the config's and a suite's entries over it) and a
// Cost that knows when it is unknown or estimated, so that nothing shows
// $0.0000 for a model without a price.
package price

import (
	_ "embed"
	"fmt"
	"maps"
	"strings"
	"sync"

	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/llm"
)

//go:embed prices.yaml
var builtinYAML []byte

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Prompt     float64 `yaml:"prompt" json:"prompt"`
	Completion float64 `yaml:"completion" json:"completion"`
	// Cached is the price of prompt tokens served from the provider's
	// cache; unset means the prompt price.
	Cached *float64 `yaml:"cached,omitempty" json:"cached,omitempty"`
}

// Table maps model specs, or patterns where * matches anything, to
// prices.
type Table map[string]Price

// Builtin is the embedded price table (llm/price/prices.yaml), the
// caller's own copy.
func Builtin() Table { return maps.Clone(builtin()) }

// BuiltinWith is the embedded price table with more entries over it. With
// none it is the embedded table itself, shared and never to be changed:
// every session prices its calls, and most configs add no prices.
func BuiltinWith(more map[string]Price) Table {
	if len(more) == 0 {
		return builtin()
	}
	return builtin().With(more)
}

// builtin is prices.yaml parsed once: every session and every suite trial
// prices its calls, and parsing the YAML costs more than a replayed step.
var builtin = sync.OnceValue(func() Table {
	t := Table{}
	if err := yaml.Unmarshal(builtinYAML, &t); err != nil {
		panic("price: prices.yaml is broken: " + err.Error())
	}
	return t
})

// With returns the table with more entries over it.
func (t Table) With(more map[string]Price) Table {
	out := maps.Clone(t)
	if out == nil {
		out = Table{}
	}
	maps.Copy(out, more)
	return out
}

// Lookup finds model's price: an exact entry wins over patterns; among
// patterns the longest wins.
func (t Table) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	// The longest matching pattern, the first in byte order among equally
	// long ones: one pass, as every model call is priced.
	best, found := "", false
	for k := range t {
		if (!found || len(k) > len(best) || len(k) == len(best) && k < best) && wildcard(k, model) {
			best, found = k, true
		}
	}
	return t[best], found
}

// Cost prices usage for model: unknown when the table has no price for it,
// estimated when the usage is.
func (t Table) Cost(model string, u llm.Usage) Cost {
	p, ok := t.Lookup(model)
	if !ok {
		return Cost{Unknown: true, Estimated: u.Estimated}
	}
	return Cost{USD: p.Of(u), Estimated: u.Estimated}
}

// Of is what usage costs at this price.
func (p Price) Of(u llm.Usage) float64 {
	cached := p.Prompt
	if p.Cached != nil {
		cached = *p.Cached
	}
	fresh := u.PromptTokens - u.CachedTokens
	return (float64(fresh)*p.Prompt + float64(u.CachedTokens)*cached + float64(u.CompletionTokens)*p.Completion) / 1e6
}

// Cost is what some model calls cost. The zero value is a known $0 (no
// calls yet); adding an unknown cost makes the sum unknown, adding an
// estimated one makes it estimated.
type Cost struct {
	// USD is the cost in dollars; when Unknown, it is the priced part
	// only, and no total can be shown.
	USD float64 `json:"usd"`
	// Unknown is set when a model that had no price answered.
	Unknown bool `json:"unknown,omitempty"`
	// Estimated is set when tokens were counted by Saucer because the
	// provider reported none (llm.Usage.Estimated).
	Estimated bool `json:"estimated,omitempty"`
}

// Add returns the sum of two costs.
func (c Cost) Add(o Cost) Cost {
	return Cost{USD: c.USD + o.USD, Unknown: c.Unknown || o.Unknown, Estimated: c.Estimated || o.Estimated}
}

// Known returns the cost in dollars, and false when it is unknown.
func (c Cost) Known() (float64, bool) { return c.USD, !c.Unknown }

// String is the cost as a person reads it: "$0.0123", "~$0.0123
// (estimated)" or "cost unknown", never a made-up $0.0000.
func (c Cost) String() string {
	switch {
	case c.Unknown:
		return "cost unknown"
	case c.Estimated:
		return fmt.Sprintf("~$%.4f (estimated)", c.USD)
	}
	return fmt.Sprintf("$%.4f", c.USD)
}

// USDPointer is the cost in dollars, nil when unknown: the shape reports
// and APIs write (null for unknown, never 0).
func (c Cost) USDPointer() *float64 {
	if c.Unknown {
		return nil
	}
	v := c.USD
	return &v
}

// wildcard matches s against a pattern where * stands for any run of
// characters (slashes too: scripted:* matches scripted:/any/path.yaml).
func wildcard(pattern, s string) bool {
	head, rest, ok := strings.Cut(pattern, "*")
	if !ok {
		return pattern == s
	}
	if !strings.HasPrefix(s, head) {
		return false
	}
	s = s[len(head):]
	for {
		part, more, ok := strings.Cut(rest, "*")
		if !ok {
			return strings.HasSuffix(s, rest)
		}
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s, rest = s[i+len(part):], more
	}
}
