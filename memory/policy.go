package memory

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
)

// Policy bounds how much of an agent's history each request carries, so
// that a long run's requests stay the same size instead of growing with
// every step:
//   - the Recent steps go in full (each result up to the agent's cap);
//   - up to Condensed steps before them go condensed: the calls as made,
//     each result cut to one line;
//   - the steps before those are folded into one summary turn (calls per
//     tool, how they ended, the last few), Block steps at a time, so that
//     the start of the request stays the same for Block steps and
//     providers' prompt caches keep hitting.
//
// MaxBytes, when positive, is the budget of a request's history in bytes
// (about 4 bytes a token; set it from the model's context size): over it,
// fewer steps go in full, down to one.
type Policy struct {
	Recent    int `yaml:"recent" json:"recent"`
	Condensed int `yaml:"condensed" json:"condensed"`
	Block     int `yaml:"block" json:"block"`
	// LineChars caps a condensed result's line and a condensed reply's text.
	LineChars int `yaml:"line_chars" json:"line_chars"`
	MaxBytes  int `yaml:"max_bytes" json:"max_bytes"`
}

// DefaultPolicy is used for the fields of a Policy left zero.
var DefaultPolicy = Policy{Recent: 8, Condensed: 24, Block: 16, LineChars: 200}

// WithDefaults fills zero fields from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy
	if p.Recent <= 0 {
		p.Recent = d.Recent
	}
	if p.Condensed < 0 {
		p.Condensed = 0
	} else if p.Condensed == 0 {
		p.Condensed = d.Condensed
	}
	if p.Block <= 0 {
		p.Block = d.Block
	}
	if p.LineChars <= 0 {
		p.LineChars = d.LineChars
	}
	return p
}

// Split says how n remembered steps are sent when recent of them go in
// full: the first folded are summarised, the next condensed are condensed,
// and the rest (at most recent) go in full. The fold grows a Block at a
// time.
func (p Policy) Split(n, recent int) (folded, condensed int) {
	p = p.WithDefaults()
	older := max(0, n-recent)
	if older > p.Condensed {
		folded = (older - p.Condensed + p.Block - 1) / p.Block * p.Block
		folded = min(folded, older)
	}
	return folded, older - folded
}

// Fold summarises steps for the start of a request: how many calls of
// each tool, how they ended, and the last few as one line each. It
// depends only on the steps, so the same steps give the same text.
func (p Policy) Fold(steps []Step) string {
	p = p.WithDefaults()
	if len(steps) == 0 {
		return ""
	}
	type tally struct{ calls, ok, failed int }
	tools := map[string]*tally{}
	for _, s := range steps {
		for i, c := range s.Commands {
			t := tools[c.ToolName]
			if t == nil {
				t = &tally{}
				tools[c.ToolName] = t
			}
			t.calls++
			if i < len(s.Results) && s.Results[i].OK() {
				t.ok++
			} else {
				t.failed++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Steps %d to %d are summarised here to keep this request short; you saw their results in full at the time.\n",
		steps[0].Step, steps[len(steps)-1].Step)
	if len(tools) == 0 {
		b.WriteString("They ran no tools.\n")
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		t := tools[name]
		fmt.Fprintf(&b, "- %s: %d calls, %d ok, %d failed\n", name, t.calls, t.ok, t.failed)
	}
	const lastFew = 5
	b.WriteString("The last of them:\n")
	for _, s := range steps[max(0, len(steps)-lastFew):] {
		for i, c := range s.Commands {
			res := "(no result)"
			if i < len(s.Results) {
				res = Line(resultText(s.Results[i]), p.LineChars)
			}
			fmt.Fprintf(&b, "- step %d: %s → %s\n", s.Step, Line(c.String(), p.LineChars), res)
		}
		if len(s.Commands) == 0 {
			fmt.Fprintf(&b, "- step %d: %s\n", s.Step, Line(s.Reply.Content, p.LineChars))
		}
	}
	return strings.TrimSpace(b.String())
}

// resultText is a result as the model reads it: its value (a JSON string
// unquoted), or its status and error.
func resultText(r command.Result) string {
	if !r.OK() {
		if r.Error != "" {
			return string(r.Status) + ": " + r.Error
		}
		return string(r.Status)
	}
	var s string
	if json.Unmarshal(r.Result, &s) == nil {
		return s
	}
	if len(r.Result) == 0 {
		return "success"
	}
	return string(r.Result)
}

// Line cuts s to one line of at most max bytes, saying how much it left
// out.
func Line(s string, max int) string {
	s = strings.TrimSpace(s)
	first, _, more := strings.Cut(s, "\n")
	if !more && len(first) <= max {
		return first
	}
	cut := min(len(first), max)
	for cut > 0 && cut < len(first) && first[cut]&0xC0 == 0x80 {
		cut--
	}
	left := len(s) - cut
	return fmt.Sprintf("%s … [%d more bytes, shown in full at the time]", first[:cut], left)
}
