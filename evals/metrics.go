package evals

import (
	_ "embed"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/saucerhq/saucer/llm"
)

//go:embed prices.yaml
var builtinPrices []byte

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Prompt     float64 `yaml:"prompt" json:"prompt"`
	Completion float64 `yaml:"completion" json:"completion"`
	// Cached is the price of prompt tokens served from the provider's
	// cache; unset means the prompt price.
	Cached *float64 `yaml:"cached,omitempty" json:"cached,omitempty"`
}

// Prices maps model specs, or patterns where * matches anything, to
// prices.
type Prices map[string]Price

// BuiltinPrices is the embedded price table (evals/prices.yaml).
func BuiltinPrices() Prices {
	p := Prices{}
	if err := yaml.Unmarshal(builtinPrices, &p); err != nil {
		panic("evals: prices.yaml is broken: " + err.Error())
	}
	return p
}

// With returns the table with more entries over it.
func (p Prices) With(more map[string]Price) Prices {
	out := Prices{}
	for k, v := range p {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// Cost prices usage for a model; ok is false when the price is unknown.
// An exact entry wins over patterns; among patterns the longest wins.
func (p Prices) Cost(model string, u llm.Usage) (cost float64, ok bool) {
	pr, found := p[model]
	if !found {
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return len(keys[i]) > len(keys[j]) || len(keys[i]) == len(keys[j]) && keys[i] < keys[j]
		})
		for _, k := range keys {
			if wildcard(k, model) {
				pr, found = p[k], true
				break
			}
		}
	}
	if !found {
		return 0, false
	}
	cached := pr.Prompt
	if pr.Cached != nil {
		cached = *pr.Cached
	}
	fresh := u.PromptTokens - u.CachedTokens
	return (float64(fresh)*pr.Prompt + float64(u.CachedTokens)*cached + float64(u.CompletionTokens)*pr.Completion) / 1e6, true
}

// wildcard matches s against a pattern where * stands for any run of
// characters (slashes too: scripted:* matches scripted:/any/path.yaml).
func wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// PassAtK is the unbiased estimator of pass@k from n trials with c
// successes: the chance that at least one of k trials drawn without
// replacement succeeds, 1 - C(n-c, k) / C(n, k).
func PassAtK(n, c, k int) float64 {
	if k <= 0 || n < k {
		return 0
	}
	if n-c < k {
		return 1
	}
	// 1 - prod_{i=n-c+1}^{n} (1 - k/i), numerically stable.
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod
}

// PassHatK estimates pass^k, the chance that all of k trials drawn without
// replacement succeed: C(c, k) / C(n, k).
func PassHatK(n, c, k int) float64 {
	if k <= 0 || n < k || c < k {
		return 0
	}
	p := 1.0
	for i := 0; i < k; i++ {
		p *= float64(c-i) / float64(n-i)
	}
	return p
}
