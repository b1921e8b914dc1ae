package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/backoff"
	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/trajectory"
)

// printer writes a live line per step.
type printer struct {
	w io.Writer
	// red hides secrets. Text is redacted before it is shortened: a cut
	// through a secret would leave a start that no pattern recognises.
	red *trajectory.Redactor
	// held is the end of the streamed text that could still be the start
	// of a secret: it is written once the next chunk shows where it ends.
	held string
	// decided is the state each agent's current decision asked for.
	decided map[string]fsm.State
	// last is the agent whose line was printed last: when another agent's
	// lines came between a decision and its results, the results get a
	// header of their own.
	last string
	// streaming is the agent whose reply text is being streamed, if any.
	streaming string
	// estimated is set once the run has said that token figures are
	// Saucer's own count.
	estimated bool
	// shown is when each running command's progress was last printed, by
	// call id; now is the clock (a test's own).
	shown map[string]time.Time
	now   func() time.Time
}

// progressEvery is the least time between two printed progress lines of
// one command: a shell command reports its output four times a second.
const progressEvery = 2 * time.Second

// newPrinter prints to w with red's secrets hidden, in what it shortens
// and in everything it writes.
func newPrinter(w io.Writer, red *trajectory.Redactor) *printer {
	return &printer{w: redacting{w, red}, red: red, shown: map[string]time.Time{}, now: time.Now}
}

// tokenText shows a token count, "~" marking Saucer's own count.
func tokenText(u llm.Usage, n int) string {
	if u.Estimated {
		return fmt.Sprintf("~%d", n)
	}
	return fmt.Sprint(n)
}

// estimateNote says, the first time, why figures are marked "~".
func (p *printer) estimateNote(b *strings.Builder, u llm.Usage) {
	if u.Estimated && !p.estimated {
		p.estimated = true
		b.WriteString("    the model's server reported no token usage: Saucer counts the tokens itself (" + tokens.Encoding +
			"), so tokens and cost marked ~ are estimates\n")
	}
}

// chunk shows a model's reply text as it arrives (saucer run on a
// terminal). What the step does is decided from the complete reply.
// Secrets arrive cut into many chunks, so a word is written only once it
// is complete, and redacted whole (a "Bearer" waits for its token).
func (p *printer) chunk(agentName string, c llm.Chunk) {
	if c.Text == "" {
		return
	}
	if p.streaming != agentName {
		p.endStream()
		fmt.Fprintf(p.w, "  %s … ", agentName)
		p.streaming = agentName
	}
	text := p.held + strings.ReplaceAll(c.Text, "\n", " ")
	cut := heldFrom(text)
	p.held = text[cut:]
	if cut > 0 {
		io.WriteString(p.w, p.red.String(text[:cut]))
	}
}

// heldFrom is where the part of streamed text that may be an unfinished
// secret begins: its last word, with the word before when that is
// "Bearer".
func heldFrom(text string) int {
	cut := strings.LastIndexAny(text, " \t") + 1
	if before := strings.TrimRight(text[:cut], " \t"); strings.HasSuffix(strings.ToLower(before), "bearer") {
		cut = strings.LastIndexAny(before, " \t") + 1
	}
	return cut
}

// endStream ends a streamed line before anything else is printed.
func (p *printer) endStream() {
	if p.streaming != "" {
		io.WriteString(p.w, p.red.String(p.held)+"\n")
		p.streaming, p.held = "", ""
	}
}

// short is s redacted, on one line, cut to max bytes.
func (p *printer) short(s string, max int) string {
	return oneLine(p.red.String(s), max)
}

func (p *printer) event(e agent.Event) {
	switch e.Kind {
	case agent.EventModelCall, agent.EventDispatch, agent.EventTransition, agent.EventProgress:
	default:
		p.endStream()
	}
	switch e.Kind {
	case agent.EventAgentStart:
		if e.Subtask != "" {
			fmt.Fprintf(p.w, "→ %s: %s\n", e.Agent, e.Subtask)
		}
	case agent.EventDecision:
		p.decision(e)
	case agent.EventStep:
		p.step(e)
	case agent.EventRetry:
		io.WriteString(p.w, retryLine(e))
	case agent.EventFallback:
		fmt.Fprintf(p.w, "    %v\n", e.Err)
	case agent.EventProgress:
		p.progress(e)
	case agent.EventAgentEnd:
		p.last = e.Agent
		if e.Note != nil {
			fmt.Fprintf(p.w, "← %s %s: %s\n", e.Agent, e.Note.Status, p.short(e.Note.Result, 160))
		}
	}
}

// progress shows how a running command is doing: its latest output line
// (or progress out of total), every progressEvery at most, and the end of
// a command left running in the background. A running command's line
// waits while a reply is being streamed, not to cut it.
func (p *printer) progress(e agent.Event) {
	pr := e.Progress
	if pr == nil {
		return
	}
	if pr.State.Terminal() {
		p.endStream()
		delete(p.shown, pr.CallID)
		fmt.Fprintf(p.w, "    %s (call %s, %s) ended in the background: %s\n", pr.Tool, pr.CallID, e.Agent, pr.State)
		return
	}
	now := p.now()
	if p.streaming != "" || now.Sub(p.shown[pr.CallID]) < progressEvery {
		return
	}
	p.shown[pr.CallID] = now
	what := pr.Message
	if i := strings.LastIndexByte(strings.TrimRight(what, "\n"), '\n'); i >= 0 {
		what = what[i+1:] // the latest line of output
	}
	switch {
	case pr.Total > 0:
		what = fmt.Sprintf("%g/%g %s", pr.Progress, pr.Total, what)
	case what == "":
		what = fmt.Sprintf("%g", pr.Progress)
	}
	fmt.Fprintf(p.w, "    … %s %s: %s\n", pr.Tool, (time.Duration(pr.ElapsedMS) * time.Millisecond).Round(time.Second), p.short(what, 120))
}

// decision prints the step's first line as soon as the model has decided:
// agent, step, the state it asked for, and its thought.
func (p *printer) decision(e agent.Event) {
	if p.decided == nil {
		p.decided = map[string]fsm.State{}
	}
	p.decided[e.Agent] = e.To
	p.last = e.Agent
	line := fmt.Sprintf("[%s step %d] %s", e.Agent, e.Step, e.To)
	if t := e.Decision.Thought; t != "" {
		line += "  " + p.short(t, 120)
	}
	fmt.Fprintln(p.w, line)
}

// step prints what the step ran and what it cost, once it is over.
func (p *printer) step(e agent.Event) {
	var b strings.Builder
	switch {
	case e.Decision == nil:
		// No decision was announced (the model call failed).
		fmt.Fprintf(&b, "[%s step %d] %s\n", e.Agent, e.Step, e.To)
	case p.last != e.Agent:
		fmt.Fprintf(&b, "[%s step %d] results:\n", e.Agent, e.Step)
	}
	p.last = e.Agent
	for i, c := range e.Commands {
		res := "not run"
		if i < len(e.Results) {
			res = p.resultLine(e.Results[i])
		}
		fmt.Fprintf(&b, "    %s → %s\n", p.short(c.String(), 120), res)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "    error: %v\n", e.Err)
	}
	for _, err := range e.Errors {
		fmt.Fprintf(&b, "    warning: %v\n", err)
	}
	p.estimateNote(&b, e.Usage)
	fmt.Fprintf(&b, "    tokens %s+%s%s, %s", tokenText(e.Usage, e.Usage.PromptTokens), tokenText(e.Usage, e.Usage.CompletionTokens), cachedShare(e.Usage), e.Cost)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " in %d model calls", e.Attempts)
	}
	fmt.Fprintf(&b, ", %s", e.Duration.Round(time.Millisecond))
	if e.Decision != nil && e.To != p.decided[e.Agent] {
		fmt.Fprintf(&b, ", now %s", e.To)
	}
	b.WriteString("\n")
	io.WriteString(p.w, b.String())
}

// cachedShare says how much of the prompt the provider had cached, when it
// says so.
func cachedShare(u llm.Usage) string {
	if u.CachedTokens <= 0 || u.PromptTokens <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d%% cached)", 100*u.CachedTokens/u.PromptTokens)
}

// retryLine tells the user why and how long the run waits.
func retryLine(e agent.Event) string {
	return fmt.Sprintf("    %s, %s (%v)\n", llm.WaitReason(e.Err), backoff.Say(e.Duration), e.Err)
}

func (p *printer) resultLine(r command.Result) string {
	switch {
	case r.Status == command.Success:
		return "ok " + p.short(string(r.Result), 100)
	case r.Running():
		return "still running in the background (call " + r.CallID + ")"
	default:
		return string(r.Status) + ": " + p.short(r.Error, 140)
	}
}

func (p *printer) outcome(o *agent.Outcome) {
	var note strings.Builder
	p.estimateNote(&note, o.Usage)
	io.WriteString(p.w, note.String())
	fmt.Fprintf(p.w, "%s after %d steps (tokens %s prompt%s, %s completion, %s)\n", o.Status, o.Steps, tokenText(o.Usage, o.Usage.PromptTokens),
		cachedShare(o.Usage), tokenText(o.Usage, o.Usage.CompletionTokens), o.Cost)
	if o.Budget != "" {
		fmt.Fprintf(p.w, "stopped: %s\n", o.Budget)
	}
	if o.Answer != "" {
		fmt.Fprintf(p.w, "%s\n", o.Answer)
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
