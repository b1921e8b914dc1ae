package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/trajectory"
)

// LearnOptions adjust Learn; nil means experience entries summarised
// without a model.
type LearnOptions struct {
	// Kind is Experience (the default) or Demonstration: a run a person
	// drove, to be shown as an example to follow.
	Kind Kind
	// Verdict, when set, is what checks said of the run (an eval trial's):
	// a run whose checks failed is learned as failed, what not to do,
	// whatever its agents said.
	Verdict *Verdict
	// Summariser, when set, writes each entry's text instead of the
	// built-in extraction (which it is given as a start). What it writes
	// is redacted like everything else.
	Summariser Summariser
}

// Verdict is what an eval's checks said of a run.
type Verdict struct {
	Success bool
	// Failed names the checks that failed.
	Failed []string
}

// failedChecks is what a failed verdict adds to an entry's outcome line,
// "" when there is none.
func (v *Verdict) failedChecks() string {
	if v == nil || v.Success {
		return ""
	}
	if len(v.Failed) == 0 {
		return "; the run's checks failed"
	}
	return "; the run's checks failed: " + strings.Join(v.Failed, ", ")
}

// Summariser writes an entry's text from its recording, a model say.
// Learn needs none: its own summary is drawn from the events.
type Summariser interface {
	Summarise(ctx context.Context, tr *trajectory.Trajectory, draft Entry) (string, error)
}

// SkipError says why a recording taught nothing.
type SkipError struct{ Dir, Reason string }

func (e *SkipError) Error() string { return "knowledge: skipped " + e.Dir + ": " + e.Reason }

// Limits of what an entry keeps of a recording.
const (
	maxSteps    = 20  // steps listed in one entry
	maxFailed   = 5   // failed steps listed (the rest are counted)
	maxArgChars = 600 // a command's arguments: a one-liner that worked is the lesson, kept whole
	maxOutChars = 160 // a result's output
	maxAnswer   = 600 // an answer or a note's result
)

// Learn turns one recorded run into entries: one for the whole run (the
// request, the host's plan, the steps that mattered, the outcome and the
// answer) and one for each app agent's subtask (its tool sequence and
// steps). A failed run's entries are marked Failed: what not to do. A
// recording that did not end (cut short, cancelled) is a *SkipError.
//
// Every string kept passes red (nil: the built-in patterns only) before
// it is shortened, and the finished title and text pass it again.
func Learn(ctx context.Context, tr *trajectory.Trajectory, red *trajectory.Redactor, opts *LearnOptions) ([]Entry, error) {
	if opts == nil {
		opts = &LearnOptions{}
	}
	kind := opts.Kind
	if kind == "" {
		kind = Experience
	}
	if kind == Help {
		return nil, errors.New("knowledge: Learn makes experience or demonstration entries; help comes from documents (HelpFromFile, HelpFromCommand)")
	}
	if red == nil {
		var err error
		if red, err = trajectory.NewRedactor(nil, trajectory.DefaultPatterns()); err != nil {
			return nil, err
		}
	}
	if len(tr.Events) == 0 || tr.Session() == nil {
		return nil, &SkipError{tr.Dir, "the recording has no session_start"}
	}
	sess, end := tr.Session(), tr.End()
	switch {
	case end == nil:
		return nil, &SkipError{tr.Dir, "the run did not end (" + tr.Stops() + ")"}
	case end.Cancelled:
		return nil, &SkipError{tr.Dir, "the run was cancelled: it shows neither a way that works nor one that fails"}
	case strings.TrimSpace(sess.Task) == "":
		return nil, &SkipError{tr.Dir, "the recording has no request"}
	}
	x := &extract{red: red}
	run := x.read(tr)

	// The checks' word, where there is one, outweighs the agents': an
	// answer they finished with can still be wrong.
	judged := opts.Verdict.failedChecks()
	outcome := Succeeded
	if end.Status != "FINISH" || judged != "" {
		outcome = Failed
	}
	src := Source{Recording: tr.Dir, Session: x.s(sess.ID), Agent: "host", Events: [2]int{tr.Events[0].Seq, tr.Events[len(tr.Events)-1].Seq}}
	var apps []string
	for _, a := range run.agents {
		if !contains(apps, a.app) {
			apps = append(apps, a.app)
		}
	}
	sort.Strings(apps)

	var b strings.Builder
	fmt.Fprintf(&b, "Request: %s\n", x.s(sess.Task))
	fmt.Fprintf(&b, "Outcome: %s (%s%s)", outcome, end.Status, judged)
	if end.Error != "" {
		fmt.Fprintf(&b, ": %s", x.cut(end.Error, maxAnswer))
	}
	b.WriteString("\n")
	if len(run.plan) > 0 {
		b.WriteString("Plan:\n")
		for i, p := range run.plan {
			fmt.Fprintf(&b, "%d. %s: %s", i+1, p.app, p.subtask)
			if p.status != "" {
				fmt.Fprintf(&b, " → %s", p.status)
				if p.result != "" {
					fmt.Fprintf(&b, ": %s", p.result)
				}
			}
			b.WriteString("\n")
		}
	}
	var all []step
	for _, a := range run.agents {
		all = append(all, a.steps...)
	}
	writeSteps(&b, all, true)
	if end.Answer != "" {
		fmt.Fprintf(&b, "Answer: %s\n", x.cut(end.Answer, maxAnswer))
	}
	whole := Entry{
		ID: idOf(kind, tr.Dir, sess.ID, "host"), Kind: kind, Apps: apps,
		Title: x.s(sess.Task), Text: b.String(), Outcome: outcome, Source: src,
	}
	entries := []Entry{whole}

	for _, a := range run.agents {
		var b strings.Builder
		fmt.Fprintf(&b, "Subtask for %s: %s\n", a.app, a.subtask)
		fmt.Fprintf(&b, "Part of the request: %s\n", x.s(sess.Task))
		if len(a.steps) > 0 {
			var seq []string
			for _, st := range a.steps {
				for _, c := range st.cmds {
					seq = append(seq, c.tool)
				}
			}
			if len(seq) > 0 {
				fmt.Fprintf(&b, "Tools in order: %s\n", strings.Join(seq, " → "))
			}
		}
		writeSteps(&b, a.steps, false)
		o := Succeeded
		if a.status != "FINISH" || judged != "" {
			o = Failed
		}
		fmt.Fprintf(&b, "Outcome: %s (%s%s)", o, a.status, judged)
		if a.result != "" {
			fmt.Fprintf(&b, ": %s", a.result)
		}
		b.WriteString("\n")
		var steps []int
		for _, st := range a.steps {
			steps = append(steps, st.n)
		}
		entries = append(entries, Entry{
			ID: idOf(kind, tr.Dir, sess.ID, a.name), Kind: kind, App: a.app,
			Title: a.subtask, Text: b.String(), Outcome: o,
			Source: Source{Recording: tr.Dir, Session: src.Session, Agent: a.name, Events: [2]int{a.first, a.last}, Steps: steps},
		})
	}

	for i := range entries {
		if opts.Summariser != nil {
			text, err := opts.Summariser.Summarise(ctx, tr, entries[i])
			if err != nil {
				return nil, fmt.Errorf("knowledge: summarising %s: %w", tr.Dir, err)
			}
			entries[i].Text = text
		}
		// Again, whole: what the parts were cut from was redacted, and a
		// summariser's text is not trusted either.
		e := &entries[i]
		e.Title, e.Text = red.String(e.Title), red.String(e.Text)
		e.Source.Recording = red.String(e.Source.Recording)
	}
	return entries, nil
}

// LearnDir reads the recording in dir (a run directory, or its
// trajectory.jsonl) and learns from it.
func LearnDir(ctx context.Context, dir string, red *trajectory.Redactor, opts *LearnOptions) ([]Entry, error) {
	if filepath.Base(dir) == trajectory.EventsFile {
		dir = filepath.Dir(dir)
	}
	tr, err := trajectory.Read(dir)
	if err != nil {
		return nil, err
	}
	return Learn(ctx, tr, red, opts)
}

// extract holds what Learn draws from a recording, redacted.
type extract struct{ red *trajectory.Redactor }

// s redacts a string from the recording.
func (x *extract) s(v string) string { return x.red.String(v) }

// cut redacts, then shortens to n bytes on one line.
func (x *extract) cut(v string, n int) string { return cutChars(oneLine(x.s(v)), n) }

type planned struct{ app, subtask, status, result string }

type cmd struct {
	tool, args, result string
	failed             bool
}

type step struct {
	app  string
	n    int
	cmds []cmd
}

type appRun struct {
	name, app, subtask, status, result string
	first, last                        int
	steps                              []step
}

type runRead struct {
	plan   []planned
	agents []*appRun
}

func (x *extract) read(tr *trajectory.Trajectory) runRead {
	var r runRead
	byName := map[string]*appRun{}
	for _, e := range tr.Events {
		switch {
		case e.Agent == "host" && e.Type == trajectory.TypeStep:
			for i, c := range e.Commands {
				if c.ToolName != "assign_subtask" {
					continue
				}
				p := planned{app: x.s(str(c.Parameters["app"])), subtask: x.cut(str(c.Parameters["subtask"]), maxAnswer)}
				if i < len(e.Results) {
					var note struct{ Status, Result string }
					json.Unmarshal(e.Results[i].Result, &note)
					p.status, p.result = note.Status, x.cut(note.Result, maxAnswer)
				}
				r.plan = append(r.plan, p)
			}
		case e.Role != "app":
		case e.Type == trajectory.TypeAgentStart:
			a := &appRun{name: e.Agent, app: x.s(e.App), subtask: x.cut(e.Subtask, maxAnswer), first: e.Seq, last: e.Seq}
			byName[e.Agent] = a
			r.agents = append(r.agents, a)
		case byName[e.Agent] == nil:
		case e.Type == trajectory.TypeStep:
			a := byName[e.Agent]
			a.last = e.Seq
			st := step{app: a.app, n: e.Step}
			for i, c := range e.Commands {
				var res command.Result
				if i < len(e.Results) {
					res = e.Results[i]
				}
				st.cmds = append(st.cmds, x.command(c, res))
			}
			if len(st.cmds) > 0 {
				a.steps = append(a.steps, st)
			}
		case e.Type == trajectory.TypeAgentEnd:
			a := byName[e.Agent]
			a.last = e.Seq
			if e.Note != nil {
				a.status, a.result = e.Note.Status, x.cut(e.Note.Result, maxAnswer)
			} else if e.Error != "" {
				a.status, a.result = "ERROR", x.cut(e.Error, maxAnswer)
			}
		}
	}
	return r
}

// command describes one command and how it went.
func (x *extract) command(c command.Command, res command.Result) cmd {
	out := cmd{tool: x.s(c.ToolName)}
	if v, ok := c.Parameters["command"].(string); ok && len(c.Parameters) <= 2 {
		out.args = "`" + x.cut(v, maxArgChars) + "`"
	} else if len(c.Parameters) > 0 {
		out.args = x.cut(compactArgs(c.Parameters, x), maxArgChars)
	}
	if res.Status != command.Success {
		out.failed = true
		msg := res.Error
		if msg == "" {
			msg = string(res.Status)
		}
		out.result = x.cut(msg, maxOutChars)
		return out
	}
	var shell struct {
		Stdout, Stderr string
		ExitCode       *int `json:"exit_code"`
	}
	if json.Unmarshal(res.Result, &shell) == nil && shell.ExitCode != nil {
		if *shell.ExitCode != 0 {
			out.failed = true
			out.result = fmt.Sprintf("exit %d: %s", *shell.ExitCode, x.cut(firstLines(shell.Stderr+"\n"+shell.Stdout), maxOutChars))
			return out
		}
		out.result = x.cut(firstLines(shell.Stdout), maxOutChars)
		return out
	}
	var text string
	if json.Unmarshal(res.Result, &text) != nil {
		text = string(res.Result)
	}
	out.result = x.cut(text, maxOutChars)
	return out
}

// compactArgs writes arguments as key=value pairs, each value redacted
// before it is shortened.
func compactArgs(p map[string]any, x *extract) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var v string
		if s, ok := p[k].(string); ok {
			v = s
		} else {
			b, _ := json.Marshal(p[k])
			v = string(b)
		}
		parts = append(parts, k+"="+x.cut(v, 80))
	}
	return strings.Join(parts, " ")
}

// writeSteps lists the steps that worked and sums up those that failed.
func writeSteps(b *strings.Builder, steps []step, withApp bool) {
	var ok, failed []string
	for _, st := range steps {
		for _, c := range st.cmds {
			line := c.tool
			if withApp && st.app != "" {
				line = st.app + "." + line
			}
			if c.args != "" {
				line += " " + c.args
			}
			if c.result != "" {
				line += " → " + c.result
			}
			if c.failed {
				failed = append(failed, line)
			} else {
				ok = append(ok, line)
			}
		}
	}
	if len(ok) > 0 {
		b.WriteString("Steps that worked:\n")
		for i, l := range ok {
			if i == maxSteps {
				fmt.Fprintf(b, "- (%d more)\n", len(ok)-maxSteps)
				break
			}
			b.WriteString("- " + l + "\n")
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(b, "Failed attempts (%d; avoid):\n", len(failed))
		for i, l := range failed {
			if i == maxFailed {
				fmt.Fprintf(b, "- (%d more)\n", len(failed)-maxFailed)
				break
			}
			b.WriteString("- " + l + "\n")
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// firstLines keeps the first three non-empty lines.
func firstLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == 3 {
				break
			}
		}
	}
	return strings.Join(out, " | ")
}

// cutChars shortens s to at most n bytes and a mark, on a rune boundary.
func cutChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
