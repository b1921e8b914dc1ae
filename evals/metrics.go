package evals

import (
	"github.com/saucerhq/saucer/llm/price"
)

// Price is what a model costs, in USD per million tokens (see package
// llm/price, which holds the built-in table).
type Price = price.Price

// Prices maps model specs, or patterns where * matches anything, to
// prices.
type Prices = price.Table

// BuiltinPrices is the built-in price table (llm/price/prices.yaml).
func BuiltinPrices() Prices { return price.Builtin() }

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
