// Package record writes a session's agent events into a trajectory: it is
// the agent.Options.Observer that turns agent.Event values into
// trajectory.Event lines, adding the session's start and end.
package record

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// Recorder writes one session. Its Observe method is an agent observer.
type Recorder struct {
	w *trajectory.Writer
	// held, for a Recorder made by Hold, is the session's events so far,
	// kept in memory (w is nil until Save).
	held     []trajectory.Event
	holding  bool
	heldOpts trajectory.Options
	start    time.Time
	mu       sync.Mutex
	calls    int
	err      error
	told     bool // OnError was told of err
	// switched holds the fallback switches of the model call in progress,
	// recorded with it.
	switched []string
	// OnError, when set before the session starts, is told of the first
	// write that fails (a full disk, say), once, from the writer's
	// goroutine: a run stops then rather than go on unrecorded.
	OnError func(error)
	// progress throttles the commands' progress reports, by call id.
	progress map[string]*progressSlot
	finished bool
	closed   bool // Finish has written session_end
	now      func() time.Time
}

// ProgressEvery is the least time between two recorded progress reports
// of one command; the command's last report is recorded too.
const ProgressEvery = time.Second

// progressSlot is a command's throttled progress: when its last report was
// recorded, and the latest one that was not (yet).
type progressSlot struct {
	last    time.Time
	pending *trajectory.Event
}

// Start creates the trajectory directory dir and writes session_start. An
// empty s.ID is filled from the directory's name; s.Format and s.Version
// are filled in.
func Start(dir string, s trajectory.Session, opts trajectory.Options) (*Recorder, error) {
	r := &Recorder{start: time.Now(), progress: map[string]*progressSlot{}, now: time.Now}
	// The background writer tells of a failed write as soon as it meets it.
	opts.OnError = func(err error) { r.failed(err) }
	w, err := trajectory.Create(dir, opts)
	if err != nil {
		return nil, err
	}
	r.w = w
	if s.ID == "" {
		s.ID = filepath.Base(dir)
	}
	s.Format = trajectory.Format
	if s.Version == "" {
		s.Version = Version()
	}
	if err := w.Write(trajectory.Event{Type: trajectory.TypeSessionStart, Session: &s}); err != nil {
		w.Close()
		return nil, err
	}
	return r, nil
}

// Hold starts recording a session in memory: nothing is written until
// Save, so a session whose recording turns out to say nothing new (an
// eval trial that replayed its recording exactly) costs no encoding, no
// directory and no file. s and opts are as for Start.
func Hold(s trajectory.Session, opts trajectory.Options) *Recorder {
	r := &Recorder{start: time.Now(), progress: map[string]*progressSlot{}, now: time.Now, holding: true, heldOpts: opts}
	s.Format = trajectory.Format
	if s.Version == "" {
		s.Version = Version()
	}
	r.held = append(r.held, trajectory.Event{Type: trajectory.TypeSessionStart, Session: &s, Time: r.start})
	return r
}

// Save writes a held session (Hold) into the new trajectory directory dir,
// as Start and the same events would have, and closes it. An empty
// session ID is filled from the directory's name. Call it after Finish.
func (r *Recorder) Save(dir string) error {
	r.mu.Lock()
	if !r.holding || r.w != nil {
		r.mu.Unlock()
		return errors.New("record: Save is for a held recording, once")
	}
	held := r.held
	r.held = nil
	r.mu.Unlock()
	w, err := trajectory.Create(dir, r.heldOpts)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.w = w
	r.mu.Unlock()
	start := *held[0].Session
	if start.ID == "" {
		start.ID = filepath.Base(dir)
	}
	held[0].Session = &start
	for _, e := range held {
		if err := w.Write(e); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// Dir is the trajectory's directory: "" while a held recording is not
// saved.
func (r *Recorder) Dir() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return ""
	}
	return r.w.Dir()
}

// Err is the first error writing the trajectory, if any. Observe cannot
// return one, so a run goes on and reports it at the end.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Sync has everything recorded so far reach the file (written, not
// fsynced) and returns the first error recording met. A run asks before
// each command (session.Options.Gate), so that no command runs once the
// recording has failed, nor before the model call and decision that chose
// it are in the file: the writer batches lines, and a full disk would
// otherwise be found only after the command ran. It costs one write when
// lines wait (a step's model call and decision, before its commands), and
// nothing when none do. A held recording (Hold) has nothing to sync.
func (r *Recorder) Sync() error {
	r.mu.Lock()
	w, err := r.w, r.err
	r.mu.Unlock()
	if err != nil || w == nil {
		return err
	}
	if err := w.Flush(); err != nil {
		r.failed(err)
		return err
	}
	return nil
}

// Write appends an event of the caller's own (a checker's commands, say).
// The event reaches the disk in the background: a write that fails is
// returned by a later Write, told to OnError and returned by Finish.
func (r *Recorder) Write(e trajectory.Event) error {
	r.mu.Lock()
	if r.holding && r.w == nil {
		defer r.mu.Unlock()
		if r.closed {
			return errors.New("trajectory: write after close")
		}
		if e.Time.IsZero() { // when it happened, not when it is saved
			e.Time = r.now()
		}
		r.held = append(r.held, e)
		return nil
	}
	r.mu.Unlock()
	err := r.w.Write(e)
	if err != nil {
		r.failed(err)
	}
	return err
}

// failed keeps the first error and tells OnError of it, once.
func (r *Recorder) failed(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	err, onErr := r.err, r.OnError
	tell := !r.told && onErr != nil
	r.told = r.told || tell
	r.mu.Unlock()
	if tell {
		onErr(err)
	}
}

// Observe records an agent event. Progress reports are throttled: at most
// one per ProgressEvery per command, plus its last (written before the
// dispatch that brings its result, or when a command left in the
// background reports its end). Events that come after Finish (a
// background command still reporting) are not recorded.
func (r *Recorder) Observe(e agent.Event) {
	if e.Kind == agent.EventProgress {
		r.observeProgress(e)
		return
	}
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	var last []trajectory.Event
	if e.Kind == agent.EventDispatch {
		last = r.lastProgressLocked(e.Results)
	}
	if e.Kind == agent.EventFallback && e.Err != nil {
		r.switched = append(r.switched, e.Err.Error())
	}
	var switched []string
	if e.Kind == agent.EventModelCall {
		r.calls++
		switched, r.switched = r.switched, nil
	}
	n := r.calls
	r.mu.Unlock()
	for _, p := range last {
		r.Write(p)
	}
	if te, ok := Convert(e, n); ok {
		if te.Call != nil && len(switched) > 0 {
			te.Call.Fallbacks = switched
		}
		r.Write(te)
	}
}

// observeProgress records a progress report, or keeps it for later.
func (r *Recorder) observeProgress(e agent.Event) {
	te, ok := Convert(e, 0)
	if !ok {
		return
	}
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	id := e.Progress.CallID
	slot := r.progress[id]
	if slot == nil {
		slot = &progressSlot{}
		r.progress[id] = slot
	}
	now := r.now()
	switch {
	case e.Progress.State.Terminal():
		delete(r.progress, id) // its last report
	case slot.last.IsZero() || now.Sub(slot.last) >= ProgressEvery:
		slot.last, slot.pending = now, nil
	default:
		slot.pending = &te
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	// Observers are told one event at a time (agent.Session), so this
	// write keeps its place.
	r.Write(te)
}

// lastProgressLocked takes the kept last reports of the commands whose
// results have come, to be written before the dispatch that brings them.
// A command left running in the background goes on. Called with r.mu
// held.
func (r *Recorder) lastProgressLocked(results []command.Result) []trajectory.Event {
	var out []trajectory.Event
	for _, res := range results {
		slot := r.progress[res.CallID]
		if slot == nil || res.Running() {
			continue
		}
		if slot.pending != nil {
			out = append(out, *slot.pending)
		}
		delete(r.progress, res.CallID)
	}
	return out
}

// Finish writes session_end from the outcome and closes the trajectory.
// It returns the first error met while recording.
func (r *Recorder) Finish(o *agent.Outcome) error {
	r.mu.Lock()
	ids := make([]string, 0, len(r.progress))
	for id := range r.progress {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var last []trajectory.Event
	for _, id := range ids {
		if p := r.progress[id].pending; p != nil {
			last = append(last, *p)
		}
	}
	r.progress, r.finished = map[string]*progressSlot{}, true
	r.mu.Unlock()
	for _, p := range last {
		r.Write(p)
	}
	end := &trajectory.End{Status: string(o.Status), Answer: o.Answer, Cancelled: o.Cancelled, Rounds: o.Rounds,
		Steps: o.Steps, Usage: o.Usage, DurationMS: trajectory.MS(time.Since(r.start)), Cost: o.Cost.String(), CostUSD: o.Cost.USDPointer()}
	if o.Err != nil {
		end.Error = o.Err.Error()
	}
	end.Budget = o.Budget
	r.Write(trajectory.Event{Type: trajectory.TypeSessionEnd, End: end})
	r.mu.Lock()
	w := r.w
	r.closed = true
	r.mu.Unlock()
	if w == nil { // held: Save writes it
		return nil
	}
	cerr := w.Close()
	if err := r.Err(); err != nil {
		return err
	}
	return cerr
}

// Convert turns an agent event into a trajectory event; n is the model
// call's number for model_call events. It reports false for events the
// format does not record.
func Convert(e agent.Event, n int) (trajectory.Event, bool) {
	te := trajectory.Event{Agent: e.Agent, Role: string(e.Role), App: e.App, Round: e.Round, Step: e.Step}
	switch e.Kind {
	case agent.EventAgentStart:
		te.Type, te.Subtask, te.Round, te.Step = trajectory.TypeAgentStart, e.Subtask, 0, 0
	case agent.EventModelCall:
		te.Type, te.Phase = trajectory.TypeModelCall, string(e.Phase)
		c := &trajectory.Call{N: n, Response: e.Response, LatencyMS: trajectory.MS(e.Duration)}
		if e.Request != nil {
			c.Request = *e.Request
		}
		if e.Err != nil {
			c.Error = CallError(e.Err)
		}
		te.Call = c
	case agent.EventDispatch:
		te.Type, te.Phase = trajectory.TypeDispatch, string(e.Phase)
		te.Commands, te.Results, te.DurationMS = nonNil(e.Commands), nonNil(e.Results), trajectory.MS(e.Duration)
	case agent.EventDecision:
		te.Type, te.Status, te.Decision = trajectory.TypeDecision, string(e.To), decision(e.Decision)
	case agent.EventStep:
		te.Type, te.Status, te.Decision = trajectory.TypeStep, string(e.To), decision(e.Decision)
		te.Commands, te.Results, te.Attempts = e.Commands, e.Results, e.Attempts
		u := e.Usage
		te.Usage = &u
		te.DurationMS = trajectory.MS(e.Duration)
		if len(e.Timings) > 0 {
			te.TimingsMS = make(map[string]float64, len(e.Timings))
			for ph, d := range e.Timings {
				te.TimingsMS[string(ph)] = trajectory.MS(d)
			}
		}
		if len(e.Observations) > 0 {
			te.Observations = make([]trajectory.Observation, 0, len(e.Observations))
		}
		for _, o := range e.Observations {
			te.Observations = append(te.Observations, trajectory.Observation{Name: o.Name, Content: o.Content})
		}
		for _, err := range e.Errors {
			te.Errors = append(te.Errors, err.Error())
		}
		if e.Err != nil {
			te.Error = e.Err.Error()
		}
		if k := e.Knowledge; k != nil {
			te.Knowledge = &trajectory.Knowledge{Text: k.Text, Sources: k.Sources}
		}
	case agent.EventTransition:
		te.Type, te.From, te.To = trajectory.TypeTransition, string(e.From), string(e.To)
	case agent.EventProgress:
		if e.Progress == nil {
			return te, false
		}
		p := *e.Progress
		te.Type, te.Progress = trajectory.TypeProgress, &p
	case agent.EventAgentEnd:
		te.Type, te.Subtask, te.Round, te.Step = trajectory.TypeAgentEnd, e.Subtask, 0, 0
		if e.Note != nil {
			te.Note = &trajectory.Note{Subtask: e.Note.Subtask, App: e.Note.App, Status: e.Note.Status, Result: e.Note.Result}
		}
		if e.Err != nil {
			te.Error = e.Err.Error()
		}
	default:
		return te, false
	}
	return te, true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func decision(d *strategy.Decision) *trajectory.Decision {
	if d == nil {
		return nil
	}
	td := &trajectory.Decision{Observation: d.Observation, Thought: d.Thought, Status: string(d.Status), Plan: d.Plan,
		Comment: d.Comment, Result: d.Result}
	if len(d.Actions) > 0 {
		td.Actions = make([]trajectory.Action, 0, len(d.Actions))
	}
	for _, a := range d.Actions {
		td.Actions = append(td.Actions, trajectory.Action{Function: a.Function, Arguments: a.Arguments, CallID: a.CallID, Invalid: a.Invalid})
	}
	return td
}

// CallError describes a failed model call; an *llm.Error keeps its kind.
func CallError(err error) *trajectory.CallError {
	kind := llm.KindUnknown
	var wait time.Duration
	var le *llm.Error
	if errors.As(err, &le) {
		kind, wait = le.Kind, le.RetryAfter
	}
	return &trajectory.CallError{Kind: trajectory.KindName(kind), Message: err.Error(), RetryAfterMS: trajectory.MS(wait)}
}

// NewID names a run: its start time and a random suffix, so that ids sort
// by time and never collide.
func NewID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Version is this build's module version and VCS revision, which also
// identify the built-in prompt templates.
func Version() string { return version() }

// version reads the build info once: every recorded session names it.
var version = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return v
})

// PromptsOf identifies the prompt templates of an override directory (""
// for the built-ins): the directory and a digest of its *.tmpl files.
func PromptsOf(dir string) (*trajectory.Prompts, error) {
	if dir == "" {
		return &trajectory.Prompts{}, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tmpl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("prompts: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(f), len(b))
		h.Write(b)
	}
	return &trajectory.Prompts{Dir: dir, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}, nil
}
