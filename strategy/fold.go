package strategy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
)

// foldState is what the folds of an agent's history left: the first
// anchor steps go as they were sent, then one note for each fold, in
// order (the steps from the one before's upTo, or the anchor, to its
// own), then the steps from the last upTo on.
type foldState struct {
	anchor int
	notes  []foldNote
}

// foldNote is the summary turn of the steps before upTo that no earlier
// note holds.
type foldNote struct {
	upTo    int
	summary llm.Message
}

// upTo is the first step no note holds.
func (f *foldState) upTo() int { return f.notes[len(f.notes)-1].upTo }

// notesBytes is the size of the notes' turns.
func (f *foldState) notesBytes() int {
	n := 0
	for _, note := range f.notes {
		n += len(note.summary.Content)
	}
	return n
}

// foldKeep is how many of the newest steps a fold leaves as they are: the
// newest result, which the model has not seen yet.
const foldKeep = 1

// foldCached is the share of a request, in bytes, that the first fold
// keeps as the request before it had it (the prompt, the tools and the
// anchor), when the anchor can be that long: a little over the 80% that a
// prompt cache should hold, as bytes and tokens do not quite go together.
const foldCached = 0.85

// appendOnly is the history under the append-only presets, after the
// intro: each step's turns as first sent (the newest as not yet seen),
// with the folded steps replaced by their notes.
func appendOnly(pc *Context) []llm.Message {
	msgs := slices.Clone(pc.intro)
	f := pc.folded
	n := pc.memory.Len()
	if f == nil {
		return appendSteps(pc, msgs, 0, n)
	}
	msgs = appendSteps(pc, msgs, 0, f.anchor)
	for _, note := range f.notes {
		msgs = append(msgs, note.summary)
	}
	return appendSteps(pc, msgs, f.upTo(), n)
}

func appendSteps(pc *Context, msgs []llm.Message, from, to int) []llm.Message {
	for i := from; i < to; i++ {
		msgs = append(msgs, stepTurns(pc, i, formOf(pc, i)).msgs...)
	}
	return msgs
}

// formOf is the form step i goes in: the newest, which the model has not
// seen yet, as first read; the others as seen.
func formOf(pc *Context, i int) int {
	if i == pc.memory.Len()-1 {
		return newestForm
	}
	return headForm
}

// stepsBytes is the size of steps from to to in the history.
func stepsBytes(pc *Context, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		n += stepTurns(pc, i, formOf(pc, i)).bytes
	}
	return n
}

// fold folds the history the model has seen when it has grown past the
// policy's FoldBytes (or MaxBytes, when that is less): the steps since
// the last fold, but the newest, go into one note after the notes before,
// so that a fold rewrites the request only from there on. When the notes
// would take more than half the room, they are all folded again, with
// the steps, into one note: a larger rewrite, and a rare one.
//
// The anchor, the first steps, is chosen at the first fold: as short as
// it can be while the prompt, the tools and the anchor make foldCached of
// the request, and at most a quarter of the room (every request repeats
// it). Later folds keep it, unless it no longer fits in MaxBytes.
func fold(ctx context.Context, pc *Context, pol memory.Policy, status llm.Message) error {
	n := pc.memory.Len()
	f := pc.folded
	limit := pol.FoldBytes
	if pol.MaxBytes > 0 && (limit <= 0 || pol.MaxBytes < limit) {
		limit = pol.MaxBytes
	}
	if limit <= 0 {
		return nil
	}
	// What the model has seen: the newest results, which it has not, are
	// as long as they are (up to ShowBytes), whatever came before.
	upTo := n - foldKeep
	from, seen := 0, stepsBytes(pc, 0, upTo)
	if f != nil {
		from = f.upTo()
		seen = stepsBytes(pc, 0, f.anchor) + f.notesBytes() + stepsBytes(pc, from, upTo)
	}
	if seen <= limit || upTo <= from {
		return nil
	}
	steps := pc.memory.Steps()
	rest := historyBytes([]llm.Message{status}) + stepsBytes(pc, upTo, n)
	if f != nil && (pol.MaxBytes <= 0 || stepsBytes(pc, 0, f.anchor)+rest <= pol.MaxBytes) {
		if f.notesBytes()+len(pol.FoldSummary(steps[from:upTo], nil)) <= limit/2 {
			text, err := summarize(ctx, pc, pol, steps[from:upTo])
			if err != nil {
				return err
			}
			pc.folded = &foldState{anchor: f.anchor, notes: append(slices.Clip(f.notes), foldNote{upTo, llm.User(text)})}
			return nil
		}
		text, err := summarize(ctx, pc, pol, steps[f.anchor:upTo])
		if err != nil {
			return err
		}
		pc.folded = &foldState{anchor: f.anchor, notes: []foldNote{{upTo, llm.User(text)}}}
		return nil
	}
	anchor := chooseAnchor(pc, pol, steps[:upTo], limit, rest)
	if anchor >= upTo {
		return nil
	}
	text, err := summarize(ctx, pc, pol, steps[anchor:upTo])
	if err != nil {
		return err
	}
	pc.folded = &foldState{anchor: anchor, notes: []foldNote{{upTo, llm.User(text)}}}
	return nil
}

// chooseAnchor is the first fold's anchor over the seen steps (see fold);
// rest is the size of what follows the notes.
func chooseAnchor(pc *Context, pol memory.Policy, seen []memory.Step, limit, rest int) int {
	upTo := len(seen)
	fixed := historyBytes(pc.intro) + toolBytes(pc)
	// A summary's size hardly depends on how many steps it folds.
	summary := len(pol.FoldSummary(seen, nil))
	if pol.Summary == memory.SummaryModel {
		summary = max(summary, modelSummaryBytes)
	}
	anchor := upTo - 1
	kept := fixed
	for a := 0; a < upTo; a++ {
		if float64(kept) >= foldCached*float64(kept+summary+rest) {
			anchor = a
			break
		}
		kept += stepTurns(pc, a, formOf(pc, a)).bytes
	}
	for anchor > 0 && stepsBytes(pc, 0, anchor) > limit/4 {
		anchor--
	}
	if pol.MaxBytes > 0 {
		for anchor > 0 && stepsBytes(pc, 0, anchor)+rest > pol.MaxBytes/2 {
			anchor--
		}
	}
	return anchor
}

// toolBytes is the size of the tools offered with the request, which a
// provider's cache holds with the prompt.
func toolBytes(pc *Context) int {
	if pc.mode != ModeTools {
		return 0
	}
	_, n := llm.SharedPrefix(nil, &llm.Request{Tools: NativeTools(pc)})
	return n
}

// modelSummaryBytes is about the size of the summary the model is asked
// for (summarizeAsk: 200 words).
const modelSummaryBytes = 1500

// summarizeAsk is what the model is asked for when it writes the summary
// of folded steps (memory.SummaryModel).
const summarizeAsk = "To keep the requests short, steps %d to %d above are about to be replaced by a note. " +
	"Write that note now, in plain text and under 200 words: what you have done and found so far, " +
	"what is left to do, and any names, paths or values you will need again. Do not call a tool."

// summarize is the summary turn's text for folded steps: the model's, when
// the policy asks for it, else (or
// when the model's reply is no summary) the deterministic one. The model
// is asked with the request the agent would have sent, so that its cache
// holds, plus the ask; the call counts and is recorded like any other.
func summarize(ctx context.Context, pc *Context, pol memory.Policy, steps []memory.Step) (string, error) {
	if pol.Summary != memory.SummaryModel || pc.model == nil {
		return pol.FoldSummary(steps, pc.artifacts), nil
	}
	msgs := append(appendOnly(pc), llm.User(fmt.Sprintf(summarizeAsk, steps[0].Step, steps[len(steps)-1].Step)))
	req := &llm.Request{Messages: msgs, ToolChoice: "none"}
	if pc.mode == ModeTools {
		req.Tools = NativeTools(pc)
	}
	// The summary is not the agent's reply: it is not streamed.
	onChunk := pc.onChunk
	pc.onChunk = nil
	resp, err := complete(ctx, pc, req)
	pc.onChunk = onChunk
	if err != nil && !errors.Is(err, llm.ErrEmptyReply) {
		return "", fmt.Errorf("asking the model for the summary of steps %d to %d: %w", steps[0].Step, steps[len(steps)-1].Step, err)
	}
	text := ""
	if resp != nil && len(resp.Message.ToolCalls) == 0 {
		text = strings.TrimSpace(resp.Message.Content)
	}
	if text == "" {
		return pol.FoldSummary(steps, pc.artifacts), nil
	}
	if limit := pol.FoldBytes / 2; len(text) > limit {
		// A summary is no use longer than the steps it stands for.
		for limit > 0 && !utf8.RuneStart(text[limit]) {
			limit--
		}
		text = text[:limit] + " …"
	}
	return pol.ModelSummary(steps, text, pc.artifacts), nil
}
