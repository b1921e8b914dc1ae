package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
)

// Policy says what of an agent's history each request carries. Its
// presets (Preset) are made for providers' prompt caches, which hold the
// longest start a request shares with an earlier one:
//
//   - The newest step's results, which the model has not seen yet, go
//     whole up to ShowBytes (a longer one by its head and tail, the
//     middle an artifact the model reads with read_artifact).
//   - Once seen, a step stays in the history in one form, so each request
//     starts with nearly the whole of the one before: its results whole
//     within HeadLines lines and HeadBytes bytes, a longer one by its head
//     and tail within them, the middle an artifact.
//   - When the seen history passes FoldBytes, the steps since the last
//     fold (after the first few, the anchor, and before the newest) become
//     one note after the notes before, so that the request is rewritten
//     only from there on; when the notes crowd, they are folded again
//     into one. Then the history grows again for a few steps.
//
// The window preset is the policy of Saucer before presets, a sliding
// window that rewrites the request at every step: the Recent steps go in
// full, up to Condensed steps before them go condensed (each result cut
// to one line), and the steps before those are folded into one summary
// turn Block steps at a time. Recordings made then replay with it, and a
// config that sets recent, condensed or block without a preset gets it.
//
// MaxBytes, when positive, bounds a request's history in bytes (about 4
// bytes a token; set from the model's context size): over it the window
// sends fewer steps in full, and the presets fold whatever the fold costs
// the cache.
type Policy struct {
	// Preset is economy, balanced (the default), full or window; the
	// fields below left zero take the preset's values.
	Preset string `yaml:"preset" json:"preset"`
	// Summary says who writes the summary of folded steps: deterministic
	// (the default: the calls made and how they ended) or model (the
	// model is asked, in a call of its own, recorded like the others).
	Summary   string `yaml:"summary" json:"summary"`
	HeadLines int    `yaml:"head_lines" json:"head_lines"`
	HeadBytes int    `yaml:"head_bytes" json:"head_bytes"`
	// ShowBytes bounds the newest step's results, which the model reads
	// for the first time (0: the preset's).
	ShowBytes int `yaml:"show_bytes" json:"show_bytes"`
	FoldBytes int `yaml:"fold_bytes" json:"fold_bytes"`
	MaxBytes  int `yaml:"max_bytes" json:"max_bytes"`

	// The window preset's.
	Recent    int `yaml:"recent" json:"recent"`
	Condensed int `yaml:"condensed" json:"condensed"`
	Block     int `yaml:"block" json:"block"`
	// LineChars caps a condensed result's line and a condensed reply's
	// text, and a summary's lines.
	LineChars int `yaml:"line_chars" json:"line_chars"`
}

// The presets' names.
const (
	Economy  = "economy"
	Balanced = "balanced"
	Full     = "full"
	Window   = "window"
)

// Who writes the summary of folded steps.
const (
	SummaryDeterministic = "deterministic"
	SummaryModel         = "model"
)

// DefaultShowBytes is how much of the newest step's results the model
// reads whole under balanced and full: as much as the shell keeps of a
// stream, so that what a tool returns reaches the model uncut.
const DefaultShowBytes = 64 << 10

// Presets are the append-only presets' values. Each shows the newest
// results whole, as UFO's agents do; they differ in how much of a result
// stays in the history once seen, and so in cost. See docs/context.md
// for the figures on the long tasks.
var Presets = map[string]Policy{
	// A seen result keeps its first and last lines, 8 in all; the newest
	// is shown up to 16 KB.
	Economy: {Preset: Economy, HeadLines: 8, HeadBytes: 640, ShowBytes: 16 << 10, FoldBytes: 3 << 10},
	// A seen result stays whole up to 60 lines and 4 KB, else its
	// first and last lines within them.
	Balanced: {Preset: Balanced, HeadLines: 60, HeadBytes: 4 << 10, ShowBytes: DefaultShowBytes, FoldBytes: 4 << 10},
	// Every result whole (up to agent.max_result_chars once seen),
	// folded only near the model's context (max_bytes) or at 256 KB of
	// history.
	Full: {Preset: Full, ShowBytes: DefaultShowBytes, FoldBytes: 256 << 10},
}

// DefaultPolicy is used for the fields of a window Policy left zero.
var DefaultPolicy = Policy{Preset: Window, Recent: 8, Condensed: 24, Block: 16, LineChars: 200}

// IsWindow reports whether the policy is the sliding window.
func (p Policy) IsWindow() bool { return p.Preset == Window }

// WithDefaults fills the fields left zero from the preset, and the
// window's from DefaultPolicy. With no preset named, a policy that sets
// recent, condensed or block is the window (the config of a recording
// made before presets), any other balanced.
func (p Policy) WithDefaults() Policy {
	if p.Preset == "" {
		p.Preset = Balanced
		if p.Recent != 0 || p.Condensed != 0 || p.Block != 0 {
			p.Preset = Window
		}
	}
	if p.Summary == "" {
		p.Summary = SummaryDeterministic
	}
	if p.LineChars <= 0 {
		p.LineChars = DefaultPolicy.LineChars
	}
	if pre, ok := Presets[p.Preset]; ok {
		if p.HeadLines == 0 && p.HeadBytes == 0 {
			p.HeadLines, p.HeadBytes = pre.HeadLines, pre.HeadBytes
		}
		if p.FoldBytes <= 0 {
			p.FoldBytes = pre.FoldBytes
		}
		if p.ShowBytes <= 0 {
			p.ShowBytes = pre.ShowBytes
		}
		return p
	}
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
	return p
}

// Check says what is wrong with the policy's values, or nil.
func (p Policy) Check() error {
	if _, ok := Presets[p.Preset]; !ok && p.Preset != Window && p.Preset != "" {
		return fmt.Errorf("preset %q is not economy, balanced, full or window", p.Preset)
	}
	if p.Summary != "" && p.Summary != SummaryDeterministic && p.Summary != SummaryModel {
		return fmt.Errorf("summary %q is not deterministic or model", p.Summary)
	}
	if p.HeadLines < 0 || p.HeadBytes < 0 || p.ShowBytes < 0 || p.FoldBytes < 0 || p.MaxBytes < 0 {
		return errors.New("head_lines, head_bytes, show_bytes, fold_bytes and max_bytes must not be negative")
	}
	if p.Preset != Window && p.Preset != "" && (p.Recent != 0 || p.Condensed != 0 || p.Block != 0) {
		return fmt.Errorf("recent, condensed and block belong to the window preset, not %s: remove them, or set preset: window", p.Preset)
	}
	return nil
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
	tools := countCalls(steps)
	var b strings.Builder
	fmt.Fprintf(&b, "Steps %d to %d are summarised here to keep this request short; you saw their results in full at the time.\n",
		steps[0].Step, steps[len(steps)-1].Step)
	if len(tools) == 0 {
		b.WriteString("They ran no tools.\n")
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		t := tools[name]
		fmt.Fprintf(&b, "- %s: %d calls, %d ok, %d failed\n", name, t.calls, t.calls-t.failed, t.failed)
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
	return canonical(r.Result)
}

// canonical is a JSON result with its keys sorted, however the tool wrote
// them: a recording keeps results that way, so a summary (and the handle
// of its artifact) is the same live and replayed.
func canonical(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
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

// foldLast is how many of the folded steps a summary lists one by one.
const foldLast = 3

// FoldSummary is the deterministic summary of folded steps, for a
// request's summary turn: how many calls of each tool and how they ended,
// and the last few steps one line each, a result too long for its line
// named by its artifact handle (kept in a, so that the model can read it
// again). It depends only on the steps.
func (p Policy) FoldSummary(steps []Step, a *Artifacts) string {
	p = p.WithDefaults()
	if len(steps) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Steps %d to %d are folded into this note to keep the requests short; you saw each as it ran. ", steps[0].Step, steps[len(steps)-1].Step)
	b.WriteString(tally(steps))
	b.WriteString("\nThe last of them:\n")
	b.WriteString(lastLines(steps, a, p.LineChars))
	return strings.TrimSpace(b.String())
}

// ModelSummary is the summary turn that holds a summary the model wrote
// of folded steps, with the handles of their last results.
func (p Policy) ModelSummary(steps []Step, text string, a *Artifacts) string {
	p = p.WithDefaults()
	if len(steps) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Steps %d to %d are folded into this note, which you wrote:\n%s\nThe last of them:\n",
		steps[0].Step, steps[len(steps)-1].Step, strings.TrimSpace(text))
	b.WriteString(lastLines(steps, a, p.LineChars))
	return strings.TrimSpace(b.String())
}

// callCount is how many calls of a tool the steps made, and how many of
// them failed.
type callCount struct{ calls, failed int }

// countCalls counts the steps' calls by tool and how they ended: a call
// without a result, or whose result is not OK, failed.
func countCalls(steps []Step) map[string]*callCount {
	tools := map[string]*callCount{}
	for _, s := range steps {
		for i, c := range s.Commands {
			t := tools[c.ToolName]
			if t == nil {
				t = &callCount{}
				tools[c.ToolName] = t
			}
			t.calls++
			if i >= len(s.Results) || !s.Results[i].OK() {
				t.failed++
			}
		}
	}
	return tools
}

// tally is the steps' calls by tool and how they ended, in a sentence.
func tally(steps []Step) string {
	tools := countCalls(steps)
	if len(tools) == 0 {
		return "They ran no tools."
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		t := tools[name]
		parts = append(parts, fmt.Sprintf("%s %d (%d failed)", name, t.calls, t.failed))
	}
	return "Their calls: " + strings.Join(parts, ", ") + "."
}

// lastLines writes the last foldLast steps one line each.
func lastLines(steps []Step, a *Artifacts, width int) string {
	var b strings.Builder
	for _, s := range steps[max(0, len(steps)-foldLast):] {
		for i, c := range s.Commands {
			res := "(no result)"
			if i < len(s.Results) {
				res = resultLine(s.Results[i], a, width)
			}
			fmt.Fprintf(&b, "- step %d: %s → %s\n", s.Step, Line(c.String(), width), res)
		}
		if len(s.Commands) == 0 {
			fmt.Fprintf(&b, "- step %d: %s\n", s.Step, Line(s.Reply.Content, width))
		}
	}
	return b.String()
}

// resultLine is a result in a summary's line: short ones whole, long ones
// by their size and handle.
func resultLine(r command.Result, a *Artifacts, width int) string {
	text := resultText(r)
	if !strings.Contains(text, "\n") && len(text) <= width/2 {
		return text
	}
	status := "ok"
	if !r.OK() {
		status = string(r.Status)
	}
	if a == nil {
		return status + ": " + Line(text, width/2)
	}
	return fmt.Sprintf("%s, %d bytes, artifact %s", status, len(text), a.Keep(text))
}
