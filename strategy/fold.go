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

// foldState is what the last fold of an agent's history left: the first
// anchor steps go as they were sent, then the summary turn of steps
// anchor to upTo, then the steps from upTo on.
type foldState struct {
	anchor, upTo int
	summary      llm.Message
}

// foldKeep is how many of the newest steps a fold leaves as they are: the
// newest result, which the model has not seen yet.
const foldKeep = 1

// foldCached is the share of a request, in bytes, that a fold keeps as the
// request before it had it (the prompt, the tools and the anchor): a
// little over the 80% that a prompt cache should hold, as bytes and
// tokens do not quite go together.
const foldCached = 0.85

// appendOnly is the history under the append-only presets, after the
// intro: each step's turns as first sent, with the folded steps replaced
// by the summary.
func appendOnly(pc *Context) []llm.Message {
	msgs := slices.Clone(pc.intro)
	f := pc.folded
	n := pc.memory.Len()
	if f == nil {
		return appendSteps(pc, msgs, 0, n)
	}
	msgs = appendSteps(pc, msgs, 0, f.anchor)
	msgs = append(msgs, f.summary)
	return appendSteps(pc, msgs, f.upTo, n)
}

func appendSteps(pc *Context, msgs []llm.Message, from, to int) []llm.Message {
	for i := from; i < to; i++ {
		msgs = append(msgs, stepTurns(pc, i, headForm).msgs...)
	}
	return msgs
}

// stepsBytes is the size of steps from to to in the history.
func stepsBytes(pc *Context, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		n += stepTurns(pc, i, headForm).bytes
	}
	return n
}

// fold folds the history when it has grown past the policy's FoldBytes
// (or MaxBytes, when that is less): the steps after the anchor and
// before the newest go into one summary turn. The anchor is chosen at the
// first fold, as short as it can be while the prompt, the tools and the
// anchor, which the request before had too, make foldCached of the
// request; later folds keep it, so that each repeats it, unless it no
// longer fits in MaxBytes.
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
	hist := stepsBytes(pc, 0, n)
	if f != nil {
		hist = stepsBytes(pc, 0, f.anchor) + len(f.summary.Content) + stepsBytes(pc, f.upTo, n)
	}
	upTo := n - foldKeep
	if hist <= limit || upTo <= 0 || (f != nil && upTo <= f.upTo) {
		return nil
	}
	steps := pc.memory.Steps()
	fixed := historyBytes(pc.intro) + toolBytes(pc)
	rest := historyBytes([]llm.Message{status}) + stepsBytes(pc, upTo, n)
	anchor := -1
	if f != nil && stepsBytes(pc, 0, f.anchor)+rest <= limit {
		anchor = f.anchor
	}
	if anchor < 0 {
		// The shortest anchor that the cache covers, and short enough to
		// leave room for the steps to come when there is a bound. A
		// summary's size hardly depends on how many steps it folds.
		summary := len(pol.FoldSummary(steps[:upTo], nil))
		if pol.Summary == memory.SummaryModel {
			summary = max(summary, modelSummaryBytes)
		}
		kept := fixed
		for a := 0; a < upTo; a++ {
			if float64(kept) >= foldCached*float64(kept+summary+rest) {
				anchor = a
				break
			}
			kept += stepTurns(pc, a, headForm).bytes
		}
		if anchor < 0 {
			anchor = upTo - 1
		}
		if pol.MaxBytes > 0 {
			for anchor > 0 && stepsBytes(pc, 0, anchor)+rest > pol.MaxBytes/2 {
				anchor--
			}
		}
	}
	if anchor >= upTo {
		return nil
	}
	text, err := summarize(ctx, pc, pol, steps[anchor:upTo])
	if err != nil {
		return err
	}
	pc.folded = &foldState{anchor: anchor, upTo: upTo, summary: llm.User(text)}
	return nil
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
