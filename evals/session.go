package evals

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/replay"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// ReplayOptions configure Replay. The zero value replays the whole session
// (recorded model and recorded device) strictly.
type ReplayOptions struct {
	// Model, when set, is asked instead of the recorded replies: only the
	// device is replayed (leniently), to try another model or prompts on
	// recorded observations.
	Model llm.Model
	// Config, when set, replaces the recorded config (prompts, limits,
	// strategies); nil means the recorded one.
	Config *config.Config
	// Redactor is the recording's redactor, for comparing live values.
	Redactor *trajectory.Redactor
	// RecordTo, when set, records the replay into that directory.
	RecordTo string
	// Observer is told of every event of the replayed session.
	Observer func(agent.Event)
	// Session is the base of the replayed session (strategies, middleware,
	// prompts), as for Options.Session.
	Session session.Options
}

// ReplayResult is how a replay went.
type ReplayResult struct {
	Outcome *agent.Outcome
	// ModelDivergences and DeviceDivergences are the requests and commands
	// that were not the recorded ones.
	ModelDivergences  []replay.Divergence
	DeviceDivergences []dispatcher.ReplayDivergence
	// UnusedCalls and UnusedDispatches are recorded calls and dispatches
	// the replay never made (it ended early).
	UnusedCalls, UnusedDispatches int
	// EndDiffers says how the replay ended otherwise than the recorded
	// session (status, answer, error), "" when it ended the same.
	EndDiffers string
	// Incomplete, for a recording that stops before its session ended (a
	// full disk, a crash, a torn last line), says where it stops: the
	// replay ran up to there. It is "" for a recording that ends.
	Incomplete string
	// Recorded is the directory the replay was recorded to, if any.
	Recorded string
}

// Diverged reports whether the replay did anything the recording did not,
// left recorded work undone, or ended otherwise.
func (r *ReplayResult) Diverged() bool {
	return len(r.ModelDivergences) > 0 || len(r.DeviceDivergences) > 0 || r.UnusedCalls > 0 || r.UnusedDispatches > 0 || r.EndDiffers != ""
}

// Report describes the divergences, or "" when there are none.
func (r *ReplayResult) Report() string {
	var s string
	if r.EndDiffers != "" {
		s += r.EndDiffers + "\n"
	}
	for _, d := range r.DeviceDivergences {
		s += "device " + d.String() + "\n"
	}
	for _, d := range r.ModelDivergences {
		s += d.String() + "\n"
	}
	if r.UnusedCalls > 0 || r.UnusedDispatches > 0 {
		s += fmt.Sprintf("the replay ended with %d recorded model calls and %d recorded dispatches unused\n", r.UnusedCalls, r.UnusedDispatches)
	}
	return s
}

// ReplayConfig is the config a recorded session ran with. The caller may
// change the copy it gets, but not the maps and slices it shares with other
// copies.
func ReplayConfig(t *trajectory.Trajectory) (*config.Config, error) {
	s := t.Session()
	cfg, err := parsedConfig(s.Config)
	if err != nil {
		return nil, fmt.Errorf("replay: the recorded config: %w", err)
	}
	if s.Model != "" {
		cfg.Model = s.Model
	}
	if s.Mode != "" {
		cfg.Mode, cfg.Models = s.Mode, nil
	}
	if cfg.Prompts != "" {
		if _, err := os.Stat(cfg.Prompts); err != nil {
			return nil, fmt.Errorf("replay: the session used the prompts in %s, which are not here: %w", cfg.Prompts, err)
		}
	}
	return cfg, nil
}

// Replay runs a recorded session again, offline: the device answers with
// the recorded results and, unless opts.Model is set, the model with the
// recorded replies, each request checked against the recorded one.
//
// A session stopped from outside (a budget, an interrupt) and a recording
// cut short (a full disk, a crash) replay up to where the recording stops;
// there the replay stops too. The first ends as the recording says it
// did; the second is reported Incomplete, with where it stops.
func Replay(ctx context.Context, t *trajectory.Trajectory, opts ReplayOptions) (*ReplayResult, error) {
	s := t.Session()
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = ReplayConfig(t); err != nil {
			return nil, err
		}
	}
	// A recorded rate limit is retried as it was, without the wait.
	cfg.Agent.RetryBackoff = config.Duration(time.Millisecond)
	end := t.End()
	stopped := opts.Model == nil && stoppedFromOutside(end)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var reached atomic.Bool
	var atEnd func()
	var stopAtEnd func(agent.Event)
	if stopped {
		// The recording's end stands for the budget that stopped it: the
		// replay stops where the recording does, not by its own clock:
		// once it has made the last recorded call and dispatch, as a
		// budget's observer stops a session after the call that spends
		// it. A call or a batch past them ends it too.
		cfg.Budget = config.Budget{}
		atEnd = func() {
			reached.Store(true)
			cancel(replay.ErrRecordingEnds)
		}
		calls, batches := workOf(t)
		var mu sync.Mutex
		stopAtEnd = func(e agent.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case agent.EventModelCall:
				calls--
			case agent.EventDispatch:
				batches--
			default:
				return
			}
			if calls == 0 && batches == 0 {
				atEnd()
			}
		}
	}
	model := opts.Model
	var rm *replay.Model
	if model == nil {
		rm = replay.New(callsOf(t), replay.Options{Redactor: opts.Redactor, AtEnd: atEnd, MaxRetryAfter: cfg.Agent.MaxRetryAfter.D()})
		model = rm
	}
	// An eval trial's recording ends with its checks' commands; a replay of
	// the session runs no checks. The device answers from the dispatches.
	dev := dispatcher.NewReplay(t.Events, dispatcher.ReplayOptions{Lenient: opts.Model != nil, Redactor: opts.Redactor, AtEnd: atEnd,
		Skip: isCheck})
	observer := opts.Observer
	var rec *record.Recorder
	if opts.RecordTo != "" {
		rs := *s
		rs.ID = ""
		var err error
		if rec, err = record.Start(opts.RecordTo, rs, trajectory.Options{Redactor: opts.Redactor}); err != nil {
			return nil, err
		}
		observer = session.Chain(observer, rec.Observe)
	}
	mode := strategy.Mode(s.Mode)
	if opts.Model != nil {
		mode = cfg.ModeFor(cfg.Model) // the live model's own mode
	}
	so := opts.Session
	so.Model, so.Mode, so.Dispatcher, so.Device, so.Apps = model, mode, dev, nil, s.Apps
	so.AnswerFormat = s.AnswerFormat    // as the recorded session was told
	so.Retriever = RecordedKnowledge(t) // and what it was given of the knowledge store
	if s.Device != nil {
		so.DeviceInfo = *s.Device // as the recorded session knew it
	}
	so.Observers = append(slices.Clip(so.Observers), observer)
	if stopAtEnd != nil {
		so.Observers = append(so.Observers, stopAtEnd)
	}
	sess, err := session.New(cfg, so)
	if err != nil {
		return nil, err
	}
	out := sess.Run(ctx, s.Task)
	res := &ReplayResult{Outcome: out, DeviceDivergences: dev.Divergences()}
	if opts.Model == nil {
		res.UnusedDispatches = dev.Remaining()
	}
	if rm != nil {
		res.ModelDivergences, res.UnusedCalls = rm.Divergences(), rm.Remaining()
	}
	switch {
	case reached.Load() && end == nil:
		res.Incomplete = t.Stops()
	case reached.Load():
		// Stopped where the recording was stopped, and for its reason.
		out.Status, out.Answer, out.Cancelled, out.Budget, out.Err = fsm.State(end.Status), end.Answer, end.Cancelled, end.Budget, nil
		if end.Error != "" {
			out.Err = errors.New(end.Error)
		}
	}
	if end != nil && opts.Model == nil {
		res.EndDiffers = endDiffers(end, out)
	}
	if rec != nil {
		res.Recorded = rec.Dir()
		if err := rec.Finish(out); err != nil {
			return res, err
		}
	}
	return res, nil
}

// stoppedFromOutside reports whether a recorded session did not end by
// itself: its recording stops short (no end), or an interrupt or a budget
// stopped it (recordings older than End.Budget say so in the answer).
func stoppedFromOutside(end *trajectory.End) bool {
	return end == nil || end.Cancelled || end.Budget != "" || strings.HasPrefix(end.Answer, "stopped: the budget of ")
}

// endDiffers says how a replay's outcome differs from the recorded end.
func endDiffers(end *trajectory.End, out *agent.Outcome) string {
	errText := ""
	if out.Err != nil {
		errText = out.Err.Error()
	}
	switch {
	case end.Status != string(out.Status):
		return fmt.Sprintf("the recording ended %s %q, the replay %s %q", end.Status, end.Answer, out.Status, out.Answer)
	case end.Answer != out.Answer:
		return fmt.Sprintf("the recording ended %s with the answer %q, the replay with %q", end.Status, end.Answer, out.Answer)
	case end.Error != errText:
		return fmt.Sprintf("the recording ended %s with the error %q, the replay with %q", end.Status, end.Error, errText)
	case end.Steps != out.Steps || end.Rounds != out.Rounds:
		return fmt.Sprintf("the recording ended %s after %d rounds and %d steps, the replay after %d and %d", end.Status, end.Rounds, end.Steps, out.Rounds, out.Steps)
	}
	return ""
}

// parsedConfig parses a recorded config once per process: a suite replays
// the same recording many times, and parsing YAML costs more than a replay.
func parsedConfig(text string) (*config.Config, error) {
	configMu.Lock()
	defer configMu.Unlock()
	if c, ok := configCache[text]; ok {
		cp := *c
		return &cp, nil
	}
	c := config.Default()
	if text != "" {
		var err error
		if c, err = config.FromYAML([]byte(text)); err != nil {
			return nil, err
		}
	}
	if len(configCache) >= 256 {
		clear(configCache)
	}
	configCache[text] = c
	cp := *c
	return &cp, nil
}

var (
	configMu    sync.Mutex
	configCache = map[string]*config.Config{}
)

// workOf counts the agents' recorded model calls and dispatches, as the
// replayed session's observers see them.
func workOf(t *trajectory.Trajectory) (calls, batches int) {
	for i := range t.Events {
		e := &t.Events[i] // not a copy: an event is large
		switch {
		case e.Type == trajectory.TypeModelCall && e.Agent != JudgeAgent:
			calls++
		case e.Type == trajectory.TypeDispatch && e.Agent != CheckAgent:
			batches++
		}
	}
	return calls, batches
}

// callsOf is the agents' recorded model calls, without a judge's.
func callsOf(t *trajectory.Trajectory) []trajectory.Call {
	calls, _ := workOf(t)
	out := make([]trajectory.Call, 0, calls)
	for i := range t.Events {
		e := &t.Events[i]
		if e.Type == trajectory.TypeModelCall && e.Agent != JudgeAgent {
			out = append(out, *e.Call)
		}
	}
	return out
}

func isCheck(e *trajectory.Event) bool { return e.Agent == CheckAgent || e.Agent == JudgeAgent }

// CheckAgent and JudgeAgent name, in a trial's trajectory, the commands of
// state checks and the calls of judge checks.
const (
	CheckAgent = "check"
	JudgeAgent = "judge"
)
