package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
)

// printer writes a live line per step.
type printer struct {
	w io.Writer
}

func (p *printer) event(e agent.Event) {
	switch e.Kind {
	case agent.EventAgentStart:
		if e.Subtask != "" {
			fmt.Fprintf(p.w, "→ %s: %s\n", e.Agent, e.Subtask)
		}
	case agent.EventStep:
		p.step(e)
	case agent.EventAgentEnd:
		if e.Note != nil {
			fmt.Fprintf(p.w, "← %s %s: %s\n", e.Agent, e.Note.Status, oneLine(e.Note.Result, 160))
		}
	}
}

func (p *printer) step(e agent.Event) {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s step %d] %s", e.Agent, e.Step, e.To)
	if e.Decision != nil && e.Decision.Thought != "" {
		fmt.Fprintf(&b, "  %s", oneLine(e.Decision.Thought, 120))
	}
	fmt.Fprintf(&b, "  (tokens %d+%d", e.Usage.PromptTokens, e.Usage.CompletionTokens)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, ", %d model calls", e.Attempts)
	}
	fmt.Fprintf(&b, ", %s)\n", e.Duration.Round(time.Millisecond))
	for i, c := range e.Commands {
		res := "not run"
		if i < len(e.Results) {
			res = resultLine(e.Results[i])
		}
		fmt.Fprintf(&b, "    %s → %s\n", oneLine(c.String(), 120), res)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "    error: %v\n", e.Err)
	}
	for _, err := range e.Errors {
		fmt.Fprintf(&b, "    warning: %v\n", err)
	}
	io.WriteString(p.w, b.String())
}

func resultLine(r command.Result) string {
	switch r.Status {
	case command.Success:
		return "ok " + oneLine(string(r.Result), 100)
	default:
		return string(r.Status) + ": " + oneLine(r.Error, 140)
	}
}

func (p *printer) outcome(o *agent.Outcome) {
	fmt.Fprintf(p.w, "%s after %d steps (tokens %d prompt, %d completion)\n", o.Status, o.Steps, o.Usage.PromptTokens, o.Usage.CompletionTokens)
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
