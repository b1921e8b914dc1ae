package trajectory

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Normalize returns a copy of the events with everything that differs
// between two runs of the same session blanked out: times, durations,
// latencies, the session id and the progress reports (which of them are
// recorded, and where, depends on timing). Two normalized trajectories are
// equal exactly when the runs did the same thing.
func Normalize(events []Event) []Event {
	out := make([]Event, 0, len(events))
	for _, e := range events {
		if e.Type == TypeProgress {
			continue
		}
		e.Time = time.Time{}
		e.DurationMS = 0
		e.TimingsMS = nil
		if e.Call != nil {
			c := *e.Call
			c.LatencyMS = 0
			c.Fallbacks = nil // how the call was served, as its latency
			e.Call = &c
		}
		if e.Session != nil {
			s := *e.Session
			s.ID = ""
			e.Session = &s
		}
		if e.End != nil {
			end := *e.End
			end.DurationMS = 0
			e.End = &end
		}
		e.Seq = len(out) + 1 // numbered without the progress reports
		out = append(out, e)
	}
	return out
}

// Diff compares two trajectories after Normalize and describes the first
// difference, or returns "" when they are the same.
func Diff(a, b []Event) string {
	na, nb := Normalize(a), Normalize(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		ja, jb := Pretty(na[i]), Pretty(nb[i])
		if ja != jb {
			return fmt.Sprintf("event %d differs (%s vs %s):\n%s", i+1, na[i].Type, nb[i].Type, TextDiff(ja, jb))
		}
	}
	if len(na) != len(nb) {
		return fmt.Sprintf("the first has %d events, the second %d", len(na), len(nb))
	}
	return ""
}

// Pretty renders a value as indented JSON, the form TextDiff compares.
func Pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// TextDiff is a line diff of two texts: "-" lines only in want, "+" lines
// only in got, with up to 3 lines of context around each change. Long
// unchanged stretches are elided.
func TextDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Trim the common prefix and suffix; the middle gets an LCS diff.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	type op struct {
		kind byte
		text string
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > 4_000_000 {
		for _, l := range ma {
			ops = append(ops, op{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, op{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([][]int32, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, op{' ', ma[i]})
				i, j = i+1, j+1
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', ma[i]})
				i++
			default:
				ops = append(ops, op{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	// Keep changes and 3 lines of context around them.
	keep := make([]bool, len(ops))
	for i, o := range ops {
		if o.kind != ' ' {
			for k := max(0, i-3); k <= min(len(ops)-1, i+3); k++ {
				keep[k] = true
			}
		}
	}
	var sb strings.Builder
	skipped := false
	for i, o := range ops {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			sb.WriteString("  …\n")
			skipped = false
		}
		sb.WriteByte(o.kind)
		sb.WriteByte(' ')
		sb.WriteString(o.text)
		sb.WriteByte('\n')
	}
	if skipped {
		sb.WriteString("  …\n")
	}
	return sb.String()
}
