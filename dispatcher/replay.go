package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/trajectory"
)

// ReplayOptions configure a Replay dispatcher. The zero value is strict.
type ReplayOptions struct {
	// Lenient answers each command with the result recorded for the same
	// command anywhere in the session (the first not yet used, else any),
	// and fails commands the recording never ran. It is for trying another
	// model on a recorded device, where the order of commands may change.
	// Strict replay expects the recorded batches in the recorded order.
	Lenient bool
	// Redactor is the one the recording was made with: parameters are
	// compared after the same redaction.
	Redactor *trajectory.Redactor
	// AtEnd, when set, marks a recording that stops before its agents
	// would have stopped by themselves (a budget, an interrupt, a
	// recording cut short): a batch after the last recorded one is the end
	// of the replay, not a divergence. AtEnd is called and the batch's
	// commands are skipped.
	AtEnd func()
	// Skip, when set, leaves out the recorded dispatches it reports true
	// for (an eval trial's checks, when only its agents replay).
	Skip func(*trajectory.Event) bool
}

// Replay answers commands with the results of a recorded session: the
// recorded device. Safe for concurrent use.
//
// Strict replay takes the recorded dispatches in order; observations made
// in parallel in one step may come in any order among themselves. A batch
// that is not the next recorded one is a divergence: its commands fail
// with a message naming the recorded commands, and Divergences reports it
// with a diff.
type Replay struct {
	opts    ReplayOptions
	mu      sync.Mutex
	batches []*trajectory.Event // in the caller's slice, not copied
	used    []bool
	// usedCmd marks single recorded commands taken by lenient replay.
	usedCmd map[[2]int]bool
	// wantParams are the recorded commands' parameters as compared,
	// encoded the first time each is compared.
	wantParams map[*command.Command]string
	cursor     int
	divs       []ReplayDivergence
	calls      int
}

var _ Dispatcher = (*Replay)(nil)

// NewReplay returns a dispatcher that answers from the recorded dispatch
// events (trajectory.TypeDispatch, in order; other events are ignored).
// It keeps pointers into events, which it never changes: the caller must
// not change them either while it replays.
func NewReplay(events []trajectory.Event, opts ReplayOptions) *Replay {
	r := &Replay{opts: opts}
	replayed := func(e *trajectory.Event) bool {
		return e.Type == trajectory.TypeDispatch && (opts.Skip == nil || !opts.Skip(e))
	}
	n := 0
	for i := range events {
		if replayed(&events[i]) {
			n++
		}
	}
	r.batches = make([]*trajectory.Event, 0, n)
	for i := range events {
		if replayed(&events[i]) {
			r.batches = append(r.batches, &events[i])
		}
	}
	r.used = make([]bool, len(r.batches))
	return r
}

// ReplayDivergence is a batch of commands the recording did not run there.
type ReplayDivergence struct {
	// Batch is the number of the Execute call, from 1.
	Batch  int
	Reason string
	// Diff is a line diff of the recorded commands ("-") and the ones sent
	// ("+").
	Diff string
}

func (d ReplayDivergence) String() string {
	return fmt.Sprintf("dispatch %d: %s\n%s", d.Batch, d.Reason, d.Diff)
}

// Divergences returns the divergences so far.
func (r *Replay) Divergences() []ReplayDivergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ReplayDivergence(nil), r.divs...)
}

// Remaining is the number of recorded batches not yet replayed.
func (r *Replay) Remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.used {
		if !u {
			n++
		}
	}
	return n
}

// Execute answers cmds from the recording, one Result per Command.
func (r *Replay) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.opts.Lenient {
		return r.lenient(cmds)
	}
	// The group the next batch may come from: the cursor's batch, and when
	// it is an observation, the observations of the same step after it.
	for i := r.cursor; i < len(r.batches); i++ {
		if r.used[i] {
			continue
		}
		if i > r.cursor && !sameGroup(r.batches[r.cursor], r.batches[i]) {
			break
		}
		if r.sameCommands(r.batches[i].Commands, cmds) || (r.batches[i].Agent == checkAgent && r.sameChecks(r.batches[i].Commands, cmds)) {
			r.used[i] = true
			for r.cursor < len(r.batches) && r.used[r.cursor] {
				r.cursor++
			}
			return answer(r.batches[i], cmds)
		}
		if !isObservation(r.batches[r.cursor]) {
			break
		}
	}
	if r.cursor >= len(r.batches) && r.opts.AtEnd != nil {
		r.opts.AtEnd()
		out := make([]command.Result, len(cmds))
		for i, c := range cmds {
			out[i] = command.SkippedResult(c.CallID, "replay: the recording ends here")
			out[i].Namespace = c.Namespace
		}
		return out
	}
	d := ReplayDivergence{Batch: r.calls, Diff: trajectory.TextDiff("", trajectory.Pretty(cmds))}
	if r.cursor < len(r.batches) {
		want := r.batches[r.cursor]
		d.Reason = fmt.Sprintf("the recording ran other commands here (%s, step %d)", want.Agent, want.Step)
		d.Diff = trajectory.TextDiff(trajectory.Pretty(want.Commands), trajectory.Pretty(cmds))
	} else {
		d.Reason = fmt.Sprintf("the recording has %d dispatches and no more", len(r.batches))
	}
	r.divs = append(r.divs, d)
	out := make([]command.Result, len(cmds))
	for i, c := range cmds {
		out[i] = command.Failed(c.CallID, "replay: "+d.Reason+"; this command was not in the recording: "+c.String())
		out[i].Namespace = c.Namespace
	}
	return out
}

// lenient answers each command on its own, from anywhere in the recording.
func (r *Replay) lenient(cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	for i, c := range cmds {
		found := [2]int{-1, -1}
		for pass := 0; pass < 2 && found[0] < 0; pass++ {
			for b, e := range r.batches {
				for j := range e.Commands {
					if j < len(e.Results) && (pass == 1 || !r.usedCmd[[2]int{b, j}]) && r.sameCommand(&e.Commands[j], &c) {
						found = [2]int{b, j}
						break
					}
				}
				if found[0] >= 0 {
					break
				}
			}
		}
		if found[0] < 0 {
			reason := "the recorded device never ran " + c.String()
			r.divs = append(r.divs, ReplayDivergence{Batch: r.calls, Reason: reason, Diff: trajectory.TextDiff("", trajectory.Pretty(c))})
			out[i] = command.Failed(c.CallID, "replay: "+reason+"; only recorded commands can be answered")
			out[i].Namespace = c.Namespace
			continue
		}
		if r.usedCmd == nil {
			r.usedCmd = map[[2]int]bool{}
		}
		r.usedCmd[found] = true
		r.used[found[0]] = true
		res := r.batches[found[0]].Results[found[1]]
		if c.CallID != "" {
			res.CallID = c.CallID
		}
		out[i] = res
	}
	return out
}

func answer(e *trajectory.Event, cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	for i := range cmds {
		if i < len(e.Results) {
			out[i] = e.Results[i]
		} else {
			out[i] = command.SkippedResult("", "replay: the recording has no result for this command")
		}
		if cmds[i].CallID != "" {
			out[i].CallID = cmds[i].CallID
		}
	}
	return out
}

func isObservation(e *trajectory.Event) bool { return e.Phase == "DATA_COLLECTION" }

func sameGroup(a, b *trajectory.Event) bool {
	return isObservation(a) && isObservation(b) && a.Agent == b.Agent && a.Step == b.Step
}

// checkAgent is the agent of an eval check's dispatches in a recording.
const checkAgent = "check"

// checkParams are a check command's parameters without how it ran: a
// live trial runs a check's command in a shell of its own (fresh) and for
// what is left of the trial (timeout, which depends on the clock); a
// replayed trial asks the same command line of the recorded device.
func checkParams(c *command.Command) string {
	p := make(map[string]any, len(c.Parameters))
	for k, v := range c.Parameters {
		if k != "fresh" && k != "timeout" {
			p[k] = v
		}
	}
	return params(p)
}

// sameChecks compares a check's commands as checkParams sees them. The
// shapes are made anew at each comparison, not cached by the recorded
// command as sameCommand's parameters are: checks are few.
func (r *Replay) sameChecks(want, got []command.Command) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		w, g := &want[i], &got[i]
		if w.ToolName != g.ToolName || w.Namespace != g.Namespace || w.ToolType != g.ToolType {
			return false
		}
		wp, gp := checkParams(w), checkParams(g)
		if wp != gp && wp != r.opts.Redactor.String(gp) {
			return false
		}
	}
	return true
}

func (r *Replay) sameCommands(want, got []command.Command) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !r.sameCommand(&want[i], &got[i]) {
			return false
		}
	}
	return true
}

// sameCommand compares what a command asks, not its call id. Parameters
// are compared as JSON, so 3 and 3.0 (a YAML int and a JSON number) agree.
// want is a recorded command.
func (r *Replay) sameCommand(want, got *command.Command) bool {
	if want.ToolName != got.ToolName || want.Namespace != got.Namespace || want.ToolType != got.ToolType {
		return false
	}
	if sameJSON(want.Parameters, got.Parameters) {
		return true
	}
	w, ok := r.wantParams[want]
	if !ok {
		w = params(want.Parameters)
		if r.wantParams == nil {
			r.wantParams = map[*command.Command]string{}
		}
		r.wantParams[want] = w
	}
	g := params(got.Parameters)
	return w == g || w == r.opts.Redactor.String(g)
}

func params(p map[string]any) string {
	if len(p) == 0 {
		return "{}"
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Sprint(p)
	}
	return string(b)
}

// sameJSON reports whether two parameter maps are certainly the same JSON,
// without encoding them: the same keys with values of the same types that
// are equal. false means "not known to be": the caller compares the
// encodings (3 and 3.0 encode alike; so may two strings that are not
// valid UTF-8).
func sameJSON(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !sameValue(av, bv) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		b, ok := b.(string)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b) // -0 encodes apart from 0
	case int:
		b, ok := b.(int)
		return ok && a == b
	case map[string]any:
		b, ok := b.(map[string]any)
		return ok && a != nil && b != nil && sameJSON(a, b)
	case []any:
		b, ok := b.([]any)
		if !ok || a == nil || b == nil || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return false
}
