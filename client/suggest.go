package client

import (
	"cmp"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
)

// closest returns up to n tools whose names look like a misspelling of
// name: within a small edit distance, or one name containing the other
// ("read" for "read_file"). The nearest come first.
func closest(name string, tools []command.ToolInfo, n int) []command.ToolInfo {
	type scored struct {
		tool command.ToolInfo
		dist int
	}
	lower := strings.ToLower(name)
	limit := max(2, len(name)/3)
	var near []scored
	for _, t := range tools {
		other := strings.ToLower(t.Name)
		d := editDistance(lower, other)
		if d <= limit || (len(lower) >= 3 && strings.Contains(other, lower)) || (len(other) >= 3 && strings.Contains(lower, other)) {
			near = append(near, scored{t, d})
		}
	}
	slices.SortStableFunc(near, func(a, b scored) int { return cmp.Compare(a.dist, b.dist) })
	out := make([]command.ToolInfo, 0, min(n, len(near)))
	for _, s := range near[:min(n, len(near))] {
		out = append(out, s.tool)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
