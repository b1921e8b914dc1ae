package evals

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/llm/replay"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/telemetry"
	"github.com/saucerhq/saucer/trajectory"
)

// Options configure a suite run.
type Options struct {
	// Results is the results directory. A run there resumes: finished
	// trials are kept and only the others run; a directory made with
	// another suite or other options is refused.
	Results string
	// Jobs is how many trials run at once. 0 means one per CPU
	// (GOMAXPROCS) when every trial replays a recording with the replay
	// model, which is computation alone and shares nothing, else 1.
	Jobs int
	// Timeout bounds each trial that sets no timeout of its own.
	Timeout time.Duration
	// Model, when set, replaces every case's model. The model of a trial
	// is, first found: Model, the case's, the suite's, the config's (whose
	// model: SAUCER_MODEL overrides when config.Load read it). The
	// config's models.X.fallbacks stand behind it, as in every session.
	Model string
	// Trials, when positive, replaces every case's trial count.
	Trials int
	// Labels, when set, run only the cases that carry all of them.
	Labels []string
	// Shard, when set, runs only its share of the (labelled) cases; Merge
	// joins the shards' results directories.
	Shard Shard
	// Sandbox runs every live case in a fresh sandbox, whatever the suite
	// says.
	Sandbox bool
	// Config is the base configuration (nil: the built-in defaults).
	Config *config.Config
	// Extra servers are served on every live trial's device beside the
	// configured ones, as local.DeviceOptions.Extra does for a session: a
	// program's own in-process tools, which its cases' agents and state
	// checks can call. All trials share them (and -j runs trials at
	// once): a tool that keeps state keeps it across trials.
	Extra []client.Server
	// Redactor removes secrets from the trials' recordings.
	Redactor *trajectory.Redactor
	// Trace, when set, traces every trial: a session span per trial,
	// labelled with its suite, case and number.
	Trace *telemetry.Exporter
	// OpenModel, when set, opens a model by spec in place of the provider
	// registry (models only the caller knows); nil opens them with the
	// config's provider settings. Trial and judge models are opened by
	// session.OpenModelBy, so their fallbacks are opened by it too. Each
	// trial opens its own (scripted models count their replies).
	OpenModel func(spec string) (llm.Model, error)
	// Progress is told after each trial, one call at a time and in order.
	Progress func(Progress)
	// Constellations runs the cases that target a constellation. The
	// constellation package provides it (evals sits below it); without
	// one such a case is an infra_error that says so.
	Constellations ConstellationRunner
	// Session is the base of every trial's session: a strategy registry,
	// pipeline edits, middleware, prompts, observers, a confirmer, an
	// Abort that cancels live trials' commands in progress. The runner
	// sets the model, the device and its own observers.
	Session session.Options
}

// Progress is where a run stands.
type Progress struct {
	Done, Total    int
	Passed, Failed int
	// Resumed counts trials kept from an earlier run.
	Resumed int
	Elapsed time.Duration
	// ETA is the estimated time left, from this run's pace; 0 when unknown.
	ETA  time.Duration
	Last *TrialResult
}

// Failure categories of the failure taxonomy.
const (
	FailMaxSteps      = "max_steps"
	FailTimeout       = "timeout"
	FailTokenLimit    = "token_limit"
	FailParseError    = "parse_error"
	FailModelError    = "model_error"
	FailToolError     = "tool_error"
	FailAgentGaveUp   = "agent_gave_up"
	FailCheckerFailed = "checker_failed"
	FailExpectedFail  = "expected_fail_but_finished"
	FailDivergence    = "replay_divergence"
	FailInfra         = "infra_error"
)

// TrialResult is one trial of one case.
type TrialResult struct {
	Case    string `json:"case"`
	Trial   int    `json:"trial"`
	Model   string `json:"model"`
	Status  string `json:"status"`
	Answer  string `json:"answer"`
	Success bool   `json:"success"`
	// Failure is the failure's category (see the Fail* constants) and
	// Detail what happened.
	Failure string        `json:"failure,omitempty"`
	Detail  string        `json:"detail,omitempty"`
	Checks  []CheckResult `json:"checks,omitempty"`
	Calls   []Call        `json:"calls,omitempty"`
	// Knowledge names the sources of what the trial's agents were given
	// from the knowledge store (Options.Session.Retriever), in order.
	Knowledge []string `json:"knowledge,omitempty"`
	Steps     int      `json:"steps"`
	// AppSteps counts app-agent steps, OKSteps those whose commands all
	// succeeded.
	AppSteps   int       `json:"app_steps"`
	OKSteps    int       `json:"ok_steps"`
	ModelCalls int       `json:"model_calls"`
	Usage      llm.Usage `json:"usage"`
	// CostUSD is nil when the model's price is unknown. CostEstimated
	// says it was priced from Saucer's own token count (the provider
	// reported no usage; Usage.Estimated is set too).
	CostUSD       *float64 `json:"cost_usd"`
	CostEstimated bool     `json:"cost_estimated,omitempty"`
	WallMS        float64  `json:"wall_ms"`
	// PhaseMS is wall time per phase: the agents' processing phases plus
	// SETUP and CHECK.
	PhaseMS map[string]float64 `json:"phase_ms,omitempty"`
	// Trajectory is the trial's recording, relative to the results dir;
	// or, when IsRecording is set, the recording the trial replayed
	// (an absolute path).
	Trajectory string `json:"trajectory"`
	// IsRecording says the trial replayed its recording exactly (the
	// recorded model and device, every call and command as recorded, the
	// same end), so its trajectory is that recording and nothing of its
	// own was written.
	IsRecording bool `json:"trajectory_is_recording,omitempty"`
}

// TrajectoryPath is where the trial's trajectory is, for a results
// directory at resultsDir: the recording it replayed exactly, or its own.
func (t *TrialResult) TrajectoryPath(resultsDir string) string {
	p := filepath.FromSlash(t.Trajectory)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(resultsDir, p)
}

// runFile records what a results directory was made with.
type runFile struct {
	Suite       string    `json:"suite"`
	Fingerprint string    `json:"fingerprint"`
	Options     runOpts   `json:"options"`
	Started     time.Time `json:"started"`
	// Shard is set when the directory holds one shard of a run.
	Shard *shardInfo `json:"shard,omitempty"`
}

type runOpts struct {
	Model   string   `json:"model,omitempty"`
	Trials  int      `json:"trials,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	Timeout string   `json:"timeout,omitempty"`
	Config  string   `json:"config"`
	// Extra names the extra servers' namespaces.
	Extra []string `json:"extra,omitempty"`
}

var (
	errTimeout     = errors.New("the trial's time limit was reached")
	errTokenLimit  = errors.New("the trial's token limit was reached")
	errInterrupted = errors.New("interrupted")
)

// Run runs the suite's cases and writes the results directory: each
// trial's result (TrialsFile) and trajectory (or, for a trial that
// replayed its recording exactly, none: it names the recording), and
// report.json. It returns the
// report even when interrupted (with the trials done so far) along with
// ctx's error.
func Run(ctx context.Context, s *Suite, opts Options) (*Report, error) {
	if opts.Results == "" {
		return nil, errors.New("evals: no results directory")
	}
	if opts.Config == nil {
		opts.Config = config.Default()
	}
	cfg, err := s.config(opts.Config)
	if err != nil {
		return nil, err
	}
	opts.Config = cfg
	r := &runner{s: s, opts: opts, recordings: map[string]*trajectory.Trajectory{}}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	defer r.closeLog()
	if opts.Jobs <= 0 {
		opts.Jobs = r.defaultJobs()
	}
	type job struct {
		c     Case
		trial int
	}
	var jobs []job
	results := map[string][]*TrialResult{}
	prog := Progress{}
	s = r.selected()
	for _, c := range s.Cases {
		n := r.trials(c)
		results[c.ID] = make([]*TrialResult, n)
		for t := 1; t <= n; t++ {
			prog.Total++
			if tr, err := r.load(c.ID, t); err == nil {
				results[c.ID][t-1] = tr
				prog.Done++
				prog.Resumed++
				if tr.Success {
					prog.Passed++
				} else {
					prog.Failed++
				}
				continue
			}
			jobs = append(jobs, job{c, t})
		}
	}
	start := time.Now()
	var mu sync.Mutex
	queue := make(chan job)
	var wg sync.WaitGroup
	var firstErr error
	for w := 0; w < opts.Jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				tr, err := r.runTrial(ctx, j.c, j.trial)
				mu.Lock()
				if err != nil {
					if !errors.Is(err, errInterrupted) && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				results[j.c.ID][j.trial-1] = tr
				prog.Done++
				if tr.Success {
					prog.Passed++
				} else {
					prog.Failed++
				}
				prog.Elapsed = time.Since(start)
				if ran := prog.Done - prog.Resumed; ran > 0 {
					prog.ETA = time.Duration(float64(prog.Elapsed) / float64(ran) * float64(prog.Total-prog.Done))
				}
				prog.Last = tr
				// Told under the lock: calls never overlap and never go
				// back in time, so a progress bar needs no lock of its own.
				if opts.Progress != nil {
					opts.Progress(prog)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case queue <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	rep := BuildReport(s, results, r.prices())
	if err := WriteJSON(filepath.Join(opts.Results, "report.json"), rep); err != nil {
		return rep, err
	}
	if ctx.Err() != nil {
		return rep, fmt.Errorf("evals: interrupted after %d of %d trials; run again with the same results directory to resume: %w", prog.Done, prog.Total, context.Cause(ctx))
	}
	return rep, firstErr
}

type runner struct {
	s          *Suite
	opts       Options
	mu         sync.Mutex
	recordings map[string]*trajectory.Trajectory
	// yamls are the configs of trials on recorded devices as recorded:
	// the same for every trial of a recording with the same limits and
	// model, and encoding YAML costs more than the replay.
	yamls           map[yamlKey][]byte
	defaultRedactor *trajectory.Redactor
	// finished are the trials in TrialsFile when the run began (resuming);
	// log is that file, open for appending (logMu orders the lines).
	finished map[trialKey]*TrialResult
	resuming bool
	// torn says TrialsFile ends in a line cut short: the next line
	// starts on a line of its own.
	torn  bool
	logMu sync.Mutex
	log   *os.File
}

type trialKey struct {
	id    string
	trial int
}

// TrialsFile, in a results directory, holds each finished trial's result,
// one JSON object a line, appended as the trial ends: running again
// resumes from it. One file for all trials, rather than a folder and a
// file each, because creating those cost more than a replayed trial.
const TrialsFile = "trials.jsonl"

// readTrials reads a results directory's TrialsFile. A line cut short (a
// crash while appending it) is ignored: its trial runs again. torn says
// the file ends in one.
func readTrials(dir string) (_ map[trialKey]*TrialResult, torn bool, _ error) {
	b, err := os.ReadFile(filepath.Join(dir, TrialsFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[trialKey]*TrialResult{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("evals: %w", err)
	}
	out := map[trialKey]*TrialResult{}
	for line := range bytes.Lines(b) {
		var tr TrialResult
		if json.Unmarshal(line, &tr) != nil || tr.Case == "" || tr.Trial < 1 {
			continue
		}
		out[trialKey{tr.Case, tr.Trial}] = &tr
	}
	return out, len(b) > 0 && b[len(b)-1] != '\n', nil
}

// appendTrial adds a finished trial to TrialsFile, in one write.
func (r *runner) appendTrial(res *TrialResult) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if r.log == nil {
		f, err := os.OpenFile(filepath.Join(r.opts.Results, TrialsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("evals: %w", err)
		}
		r.log = f
		if r.torn {
			b = append([]byte{'\n'}, b...)
			r.torn = false
		}
	}
	if _, err := r.log.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("evals: %w", err)
	}
	return nil
}

func (r *runner) closeLog() {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if r.log != nil {
		r.log.Close()
		r.log = nil
	}
}

// redactor is the trials' recordings' redactor: Options.Redactor, else
// the default patterns, compiled once for the run rather than by every
// trial's recording.
func (r *runner) redactor() *trajectory.Redactor {
	if r.opts.Redactor != nil {
		return r.opts.Redactor
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.defaultRedactor == nil {
		r.defaultRedactor, _ = trajectory.NewRedactor(nil, trajectory.DefaultPatterns())
	}
	return r.defaultRedactor
}

type yamlKey struct {
	recording, spec string
	steps, rounds   int
}

// configYAML is cfg as a trial's recording keeps it. A trial on a
// recorded device runs with the recording's config and the case's limits
// and model, so the text is encoded once for each of those.
func (r *runner) configYAML(cfg *config.Config, recording string, lim Limits, spec string) ([]byte, error) {
	if recording == "" {
		return cfg.YAML()
	}
	k := yamlKey{r.s.path(recording), spec, lim.MaxSteps, lim.MaxRounds}
	r.mu.Lock()
	y, ok := r.yamls[k]
	r.mu.Unlock()
	if ok {
		return y, nil
	}
	y, err := cfg.YAML()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.yamls == nil {
		r.yamls = map[yamlKey][]byte{}
	}
	r.yamls[k] = y
	r.mu.Unlock()
	return y, nil
}

// defaultJobs is Options.Jobs when it is 0: one per CPU for a suite that
// only replays recordings, else one at a time (live trials share the
// machine, and often a model's rate limit).
func (r *runner) defaultJobs() int {
	for _, c := range r.selected().Cases {
		if c.Device.Recording == "" || r.modelOf(c) != ReplayModel {
			return 1
		}
	}
	return runtime.GOMAXPROCS(0)
}

// selected is the suite with only the cases that carry opts.Labels and,
// of those, the shard's share.
func (r *runner) selected() *Suite {
	s := r.labelled()
	if r.opts.Shard.Count == 0 {
		return s
	}
	cp := *s
	cp.Cases = nil
	for k, c := range s.Cases {
		if r.opts.Shard.Has(k) {
			cp.Cases = append(cp.Cases, c)
		}
	}
	return &cp
}

// labelled is the suite with only the cases that carry opts.Labels.
func (r *runner) labelled() *Suite {
	if len(r.opts.Labels) == 0 {
		return r.s
	}
	cp := *r.s
	cp.Cases = nil
	for _, c := range r.s.Cases {
		all := true
		for _, l := range r.opts.Labels {
			found := false
			for _, cl := range c.Labels {
				found = found || cl == l
			}
			all = all && found
		}
		if all {
			cp.Cases = append(cp.Cases, c)
		}
	}
	return &cp
}

func (r *runner) trials(c Case) int {
	if r.opts.Trials > 0 {
		return r.opts.Trials
	}
	return r.s.limits(c).Trials
}

func (r *runner) prices() Prices { return BuiltinPrices().With(r.s.Prices) }

// prepare creates the results directory, or checks that the one there was
// made with this suite and these options.
func (r *runner) prepare() error {
	cfgYAML, err := r.opts.Config.YAML()
	if err != nil {
		return err
	}
	ro := runOpts{Model: r.opts.Model, Trials: r.opts.Trials, Labels: r.opts.Labels, Config: string(cfgYAML)}
	for _, x := range r.opts.Extra {
		ro.Extra = append(ro.Extra, x.Namespace)
	}
	if r.opts.Timeout > 0 {
		ro.Timeout = r.opts.Timeout.String()
	}
	b, _ := json.Marshal(ro)
	h := sha256.Sum256(append([]byte(r.s.hash+"\n"), b...))
	fp := hex.EncodeToString(h[:])
	// The shard is not part of the fingerprint: the shards of one run
	// share it, and Merge checks that they do.
	var shard *shardInfo
	if r.opts.Shard.Count > 0 {
		shard = &shardInfo{Shard: r.opts.Shard.String(), Cases: []string{}}
		for _, c := range r.labelled().Cases {
			shard.Cases = append(shard.Cases, c.ID)
		}
	}
	p := filepath.Join(r.opts.Results, "run.json")
	if data, err := os.ReadFile(p); err == nil {
		var prev runFile
		if err := json.Unmarshal(data, &prev); err != nil {
			return fmt.Errorf("evals: %s is damaged: %w", p, err)
		}
		if prev.Fingerprint != fp {
			return fmt.Errorf("evals: %s holds results of another suite or other options (the suite file, --model, --trials, --timeout, the config or the extra servers changed); use a new results directory, or delete this one to start over", r.opts.Results)
		}
		if (prev.Shard == nil) != (shard == nil) || prev.Shard != nil && prev.Shard.Shard != shard.Shard {
			return fmt.Errorf("evals: %s holds the results of %s, not of %s; use a results directory per shard", r.opts.Results, prev.Shard, shard)
		}
		r.resuming = true
		r.finished, r.torn, err = readTrials(r.opts.Results)
		return err
	}
	if err := os.MkdirAll(r.opts.Results, 0o755); err != nil {
		return fmt.Errorf("evals: %w", err)
	}
	return WriteJSON(p, runFile{Suite: r.s.Name, Fingerprint: fp, Options: ro, Started: time.Now().UTC(), Shard: shard})
}

func (r *runner) trialDir(id string, trial int) string {
	return filepath.Join(r.opts.Results, "cases", id, fmt.Sprintf("trial-%d", trial))
}

// load is a trial finished before this run began: in TrialsFile, or in
// its own result.json in a directory written before TrialsFile was.
func (r *runner) load(id string, trial int) (*TrialResult, error) {
	if !r.resuming {
		return nil, os.ErrNotExist
	}
	if tr, ok := r.finished[trialKey{id, trial}]; ok {
		return tr, nil
	}
	b, err := os.ReadFile(filepath.Join(r.trialDir(id, trial), "result.json"))
	if err != nil {
		return nil, err
	}
	var tr TrialResult
	return &tr, json.Unmarshal(b, &tr)
}

func (r *runner) recording(dir string) (*trajectory.Trajectory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.recordings[dir]; ok {
		return t, nil
	}
	t, err := trajectory.Read(dir)
	if err != nil {
		return nil, err
	}
	r.recordings[dir] = t
	return t, nil
}

// trial is one trial being run.
type trial struct {
	res    *TrialResult
	rec    *record.Recorder
	device dispatcher.Dispatcher
	// live is a live device's client: its scripts and checks run on it
	// with the trial's timeout (0: the agents' command_timeout and the
	// shell's own).
	live      dispatcher.Executor
	timeout   time.Duration
	divergers []func() []string
	// sameAsRecording, for a trial that replays a recording with its
	// recorded model, reports whether the trial did exactly what the
	// recording (at the absolute path recording) holds: then its
	// trajectory is that recording. Such a trial's recorder holds its
	// events in memory until it is known whether they are needed.
	sameAsRecording func(c Case, out *agent.Outcome) bool
	recording       string
	close           func()
	trace           *telemetry.Tracer // nil unless Options.Trace
	// knowledge, for a trial that replays a recorded model, is what the
	// recording's agents were given (Options.Session.Retriever otherwise).
	knowledge strategy.Retriever
}

// runTrial runs one trial and saves its result. It returns errInterrupted
// (and saves nothing) when ctx ends first.
func (r *runner) runTrial(ctx context.Context, c Case, n int) (*TrialResult, error) {
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	dir := r.trialDir(c.ID, n)
	if err := os.RemoveAll(dir); err != nil { // an interrupted attempt's leftovers
		return nil, err
	}
	// dir is made when there is something to write in it.
	start := time.Now()
	lim := r.s.limits(c)
	spec := r.modelOf(c)
	res := &TrialResult{Case: c.ID, Trial: n, Model: spec, PhaseMS: map[string]float64{}, Trajectory: filepath.ToSlash(filepath.Join("cases", c.ID, fmt.Sprintf("trial-%d", n), "trajectory"))}
	if rec := c.Device.Recording; rec != "" {
		if file, err := ConstellationRecording(r.s.path(rec)); err != nil || file != "" {
			return r.replayConstellation(ctx, c, file, err, res, start)
		}
	}
	if c.Constellation != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return r.runConstellation(ctx, c, n, dir, res, start)
	}
	t := &trial{res: res}
	sess, col, err := r.setup(ctx, c, n, spec, lim, t, filepath.Join(dir, "trajectory"))
	if t.close != nil {
		defer t.close()
	}
	res.PhaseMS["SETUP"] = trajectory.MS(time.Since(start))
	var out *agent.Outcome
	defer func() {
		if t.trace != nil {
			o := out
			if o == nil {
				o = &agent.Outcome{Status: fsm.Error, Answer: res.Detail}
			}
			t.trace.End(context.WithoutCancel(ctx), o)
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			return nil, errInterrupted
		}
		res.Status, res.Failure, res.Detail = string(fsm.Error), FailInfra, err.Error()
	} else {
		timeout := lim.Timeout.D()
		if timeout <= 0 {
			timeout = r.opts.Timeout
		}
		tctx, cancel := context.WithCancelCause(ctx)
		col.cancel = cancel
		if timeout > 0 {
			var stop context.CancelFunc
			tctx, stop = context.WithTimeoutCause(tctx, timeout, errTimeout)
			defer stop()
		}
		out = sess.Run(tctx, c.Task)
		cause := context.Cause(tctx)
		cancel(nil)
		if ctx.Err() != nil {
			if t.rec != nil {
				t.rec.Finish(out)
			}
			return nil, errInterrupted
		}
		res.Status, res.Answer, res.Steps, res.Usage = string(out.Status), out.Answer, out.Steps, out.Usage
		res.AppSteps, res.OKSteps, res.ModelCalls, res.Calls = col.appSteps, col.okSteps, col.modelCalls, col.calls
		res.Knowledge = col.knowledge
		for ph, ms := range col.phaseMS {
			res.PhaseMS[ph] = ms
		}
		cost := r.prices().Cost(spec, out.Usage)
		res.CostUSD, res.CostEstimated = cost.USDPointer(), cost.Estimated
		// Checks run once the agent has stopped, on the same device.
		checkStart := time.Now()
		env := &checkEnv{device: t.device, live: t.live, timeout: t.timeout, answer: out.Answer, status: string(out.Status), task: c.Task, calls: col.calls,
			openJudge: func(s string) (llm.Model, error) { return r.openModel(r.s.model(s)) }, judge: r.s.Judge,
			record: func(e trajectory.Event) { t.rec.Write(e) }}
		for i, ch := range c.Checks {
			res.Checks = append(res.Checks, env.run(ctx, i, ch))
		}
		res.PhaseMS["CHECK"] = trajectory.MS(time.Since(checkStart))
		var divs []string
		for _, d := range t.divergers {
			divs = append(divs, d()...)
		}
		classify(res, c, out, cause, divs)
		if err := t.rec.Finish(out); err != nil {
			return nil, fmt.Errorf("evals: case %s trial %d: recording: %w", c.ID, n, err)
		}
		if t.sameAsRecording != nil && len(divs) == 0 && t.sameAsRecording(c, out) {
			res.Trajectory, res.IsRecording = t.recording, true
		} else if err := t.save(dir); err != nil {
			return nil, fmt.Errorf("evals: case %s trial %d: recording: %w", c.ID, n, err)
		}
	}
	if out == nil && t.rec != nil {
		t.rec.Finish(&agent.Outcome{Status: fsm.Error, Answer: res.Detail})
		if err := t.save(dir); err != nil {
			return nil, fmt.Errorf("evals: case %s trial %d: recording: %w", c.ID, n, err)
		}
	}
	res.WallMS = trajectory.MS(time.Since(start))
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	if err := r.appendTrial(res); err != nil {
		return nil, err
	}
	return res, nil
}

// save writes a held recording (a trial that replays a recording) into
// the trial's directory; one recorded directly is already there.
func (t *trial) save(dir string) error {
	if t.rec == nil || t.sameAsRecording == nil {
		return nil
	}
	return t.rec.Save(filepath.Join(dir, "trajectory"))
}

// scripts is the dispatcher of a live trial's setup and start scripts:
// each may take as long as the trial's time limit, not just the agents'
// command_timeout.
func (t *trial) scripts() dispatcher.Dispatcher {
	if t.live == nil || t.timeout <= 0 {
		return t.device
	}
	return dispatcher.NewLocal(t.live, dispatcher.LocalOptions{Timeout: t.timeout})
}

// setup prepares the trial's device, model, recording and session.
func (r *runner) setup(ctx context.Context, c Case, n int, spec string, lim Limits, t *trial, trajDir string) (*session.Session, *collector, error) {
	cfg := *r.opts.Config
	var model llm.Model
	var apps map[string]string
	format := c.Format()
	if rec := c.Device.Recording; rec != "" {
		tr, err := r.recording(r.s.path(rec))
		if err != nil {
			return nil, nil, err
		}
		if spec == ReplayModel {
			// The recorded replies answer the recorded prompts: the
			// format the recorded session was given, whatever the case's.
			format = tr.Session().AnswerFormat
		}
		rc, err := ReplayConfig(tr)
		if err != nil {
			return nil, nil, err
		}
		cfg = *rc
		rd := dispatcher.NewReplay(tr.Events, dispatcher.ReplayOptions{Lenient: spec != ReplayModel, Redactor: r.opts.Redactor})
		t.device, apps = rd, tr.Session().Apps
		t.divergers = append(t.divergers, func() []string {
			var out []string
			for _, d := range rd.Divergences() {
				out = append(out, "device "+d.String())
			}
			return out
		})
		if spec == ReplayModel {
			rm := replay.New(callsOf(tr), replay.Options{Redactor: r.opts.Redactor})
			model = rm
			t.knowledge = RecordedKnowledge(tr)
			abs, err := filepath.Abs(r.s.path(rec))
			if err != nil {
				return nil, nil, err
			}
			t.recording = filepath.ToSlash(abs)
			t.sameAsRecording = func(c Case, out *agent.Outcome) bool {
				// Every recorded call and command made (the checks' too),
				// none other, and the recorded end; a judge's call is the
				// trial's own.
				end := tr.End()
				return rm.Remaining() == 0 && rd.Remaining() == 0 && len(rm.Divergences()) == 0 && len(rd.Divergences()) == 0 &&
					end != nil && endDiffers(end, out) == "" && !slices.ContainsFunc(c.Checks, func(ch Check) bool { return ch.Judge != nil })
			}
			t.divergers = append(t.divergers, func() []string {
				var out []string
				for _, d := range rm.Divergences() {
					out = append(out, d.String())
				}
				return out
			})
		}
	} else {
		if r.opts.Sandbox || r.s.sandboxed(c) {
			cfg.Device = config.DeviceSandbox
		}
		if cfg.Device != config.DeviceSandbox && slices.Contains(c.Labels, NeedsRoot) {
			return nil, nil, fmt.Errorf("case %s is labelled %s: it runs only in a sandbox (sandbox: true in the suite or case, or saucer eval --sandbox), never on this machine", c.ID, NeedsRoot)
		}
		dir, err := trialDir(c.ID, n)
		if err != nil {
			return nil, nil, err
		}
		for p, content := range c.Device.Files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				return nil, nil, err
			}
		}
		if c.Device.PersistentShell || c.Device.Start != "" {
			cfg.Tools.Shell.Persistent = true
		}
		t.timeout = lim.Timeout.D()
		if t.timeout <= 0 {
			t.timeout = r.opts.Timeout
		}
		// The case's time limit governs its scripts and checks: the shell
		// and the device client must not cut them sooner.
		cfg.Tools.Shell.MaxTimeout = max(cfg.Tools.Shell.MaxTimeout, config.Duration(t.timeout))
		cfg.MCP.CallTimeout = max(cfg.MCP.CallTimeout, config.Duration(t.timeout))
		dev, err := local.NewDevice(ctx, &cfg, dir, local.DeviceOptions{Extra: r.opts.Extra})
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		t.close = func() { dev.Close(); os.RemoveAll(dir) }
		// Session.Abort (a second Ctrl-C) reaches commands in progress.
		live := session.Abortable(dev, r.opts.Session.Abort)
		t.device = dispatcher.NewLocal(live, dispatcher.LocalOptions{Timeout: cfg.Agent.CommandTimeout.D()})
		apps = map[string]string{}
		for _, ns := range dev.Namespaces() {
			apps[ns.Name] = ns.Description
		}
		t.live = live
		scripts := t.scripts()
		for i, sc := range c.Device.Setup {
			cmd := scriptCommand(sc.Script, nil, t.timeout)
			run := scripts
			if sc.Tool != "" {
				// Through the device, as the agent's calls go: a desktop
				// tool's windows are the agent's desktop's.
				cmd, run = command.Command{ToolName: sc.Tool, Namespace: sc.Namespace, Parameters: sc.Arguments, ToolType: command.Action}, t.device
			}
			res := run.Execute(ctx, []command.Command{cmd})
			if err := setupFailed(res[0]); err != "" {
				kind := "script"
				if sc.Tool != "" {
					kind = "step"
				}
				return nil, nil, fmt.Errorf("setup %s %d (%s) %s", kind, i+1, sc.label(), err)
			}
		}
		if c.Device.Start != "" {
			// In the agent's own shell: what it leaves is where the agent begins.
			cmd := shellCommand(c.Device.Start, nil, t.timeout, false)
			if res := scripts.Execute(ctx, []command.Command{cmd}); !res[0].OK() {
				return nil, nil, fmt.Errorf("start script failed: %s", res[0].Error)
			}
			// A start script may cd: the agents are told where the shell
			// is, not where the device began.
			res := scripts.Execute(ctx, []command.Command{shellCommand("pwd", nil, t.timeout, false)})
			var out struct{ Stdout string }
			if res[0].OK() && json.Unmarshal(res[0].Result, &out) == nil && strings.HasPrefix(strings.TrimSpace(out.Stdout), "/") {
				t.device = startDir{next: t.device, dir: strings.TrimSpace(out.Stdout)}
			}
		}
	}
	if model == nil {
		var err error
		if model, err = r.openModel(spec); err != nil {
			return nil, nil, err
		}
	}
	if lim.MaxSteps > 0 {
		cfg.Agent.MaxSteps = lim.MaxSteps
	}
	if lim.MaxRounds > 0 {
		cfg.Agent.MaxRounds = lim.MaxRounds
	}
	if spec != ReplayModel {
		cfg.Model = spec
	}
	y, err := r.configYAML(&cfg, c.Device.Recording, lim, spec)
	if err != nil {
		return nil, nil, err
	}
	meta := trajectory.Session{Task: c.Task, AnswerFormat: format, Model: cfg.Model, Mode: string(cfg.ModeFor(cfg.Model)), Config: string(y), Apps: apps,
		Labels: map[string]string{"suite": r.s.Name, "case": c.ID, "trial": fmt.Sprint(n)}}
	if spec == ReplayModel {
		if tr, err := r.recording(r.s.path(c.Device.Recording)); err == nil {
			meta.Mode = tr.Session().Mode
		}
	}
	topts := trajectory.Options{Redactor: r.redactor(), ArtifactThreshold: cfg.Record.ArtifactThreshold}
	var rec *record.Recorder
	if t.sameAsRecording != nil {
		rec = record.Hold(meta, topts)
	} else if rec, err = record.Start(trajDir, meta, topts); err != nil {
		return nil, nil, err
	}
	t.rec = rec
	col := &collector{maxTokens: lim.MaxTokens, phaseMS: map[string]float64{}}
	so := r.opts.Session
	so.Model, so.Mode, so.Dispatcher, so.Device, so.Apps = model, modeOf(meta.Mode), t.device, nil, apps
	so.AnswerFormat = format
	if t.knowledge != nil {
		so.Retriever = t.knowledge
	}
	if len(r.s.Prices) > 0 {
		// The suite's prices price the session too (its events, a budget).
		so.Prices = price.Table(so.Prices).With(r.s.Prices)
	}
	if so.Asker == nil && so.Confirmer == nil {
		p := &casePerson{p: c.Person}
		so.Asker, so.Confirmer = p, p
	}
	so.Observers = append(slices.Clip(so.Observers), rec.Observe, col.observe)
	if r.opts.Trace != nil {
		t.trace = r.opts.Trace.Start(c.Task, cfg.Model, meta.Labels)
		so.Observers = append(so.Observers, t.trace.Observe)
	}
	sess, err := session.New(&cfg, so)
	if err != nil {
		return nil, nil, err
	}
	return sess, col, nil
}

// modelOf is the spec of case c's model: --model (Options.Model), the
// case's, the suite's, else the config's.
func (r *runner) modelOf(c Case) string {
	spec := cmp.Or(r.opts.Model, c.Model, r.s.Model)
	if spec == "" {
		return r.opts.Config.Model // not the suite's to resolve
	}
	return r.s.model(spec)
}

// openModel opens a model as every session does (session.OpenModelBy):
// with the run's config's provider settings and its fallbacks for that
// model. (A recorded device's config is not used: its keys are redacted.)
func (r *runner) openModel(spec string) (llm.Model, error) {
	cfg := *r.opts.Config
	cfg.Model = spec
	return session.OpenModelBy(&cfg, r.opts.OpenModel)
}

// collector gathers a trial's numbers from its agent events and enforces
// its token limit.
type collector struct {
	maxTokens                     int
	cancel                        context.CancelCauseFunc
	tokens                        int
	appSteps, okSteps, modelCalls int
	phaseMS                       map[string]float64
	calls                         []Call
	knowledge                     []string
}

func (c *collector) observe(e agent.Event) {
	switch e.Kind {
	case agent.EventModelCall:
		c.modelCalls++
		if e.Response != nil {
			c.tokens += e.Response.Usage.PromptTokens + e.Response.Usage.CompletionTokens
		}
		if c.maxTokens > 0 && c.tokens > c.maxTokens && c.cancel != nil {
			c.cancel(errTokenLimit)
		}
	case agent.EventStep:
		for ph, d := range e.Timings {
			c.phaseMS[string(ph)] += trajectory.MS(d)
		}
		if e.Knowledge != nil {
			c.knowledge = append(c.knowledge, e.Knowledge.Sources...)
		}
		if e.Role != fsm.App {
			return
		}
		c.appSteps++
		ok := e.Err == nil
		for _, res := range e.Results {
			if res.Status != command.Success {
				ok = false
			}
		}
		if ok {
			c.okSteps++
		}
		for _, cmd := range e.Commands {
			c.calls = append(c.calls, Call{Tool: cmd.ToolName, Namespace: cmd.Namespace, Arguments: cmd.Parameters})
		}
	}
}

// classify decides success and the failure category.
func classify(res *TrialResult, c Case, out *agent.Outcome, cause error, divergences []string) {
	checksOK := true
	var failed []string
	for _, ch := range res.Checks {
		if !ch.Pass {
			checksOK = false
			failed = append(failed, ch.Name+": "+ch.Detail)
		}
	}
	ended := out.Status
	switch {
	case len(divergences) > 0 && res.Model == ReplayModel:
		res.Failure, res.Detail = FailDivergence, strings.Join(divergences, "\n")
	case errors.Is(cause, errTimeout):
		res.Failure, res.Detail = FailTimeout, out.Answer
	case errors.Is(cause, errTokenLimit):
		res.Failure, res.Detail = FailTokenLimit, fmt.Sprintf("%s (%d tokens used)", out.Answer, out.Usage.PromptTokens+out.Usage.CompletionTokens)
	case c.ExpectFail && ended == fsm.Finish:
		res.Failure, res.Detail = FailExpectedFail, "the task is infeasible, but the agent answered: "+out.Answer
	case c.ExpectFail && ended == fsm.Fail && !out.Cancelled:
		// The right answer to an infeasible task; the checks decide.
	case ended == fsm.Error && strings.Contains(out.Answer, "asking the model"):
		res.Failure, res.Detail = FailModelError, out.Answer
	case ended == fsm.Error:
		res.Failure, res.Detail = FailInfra, out.Answer
	case strings.Contains(out.Answer, "reached the limit of"):
		res.Failure, res.Detail = FailMaxSteps, out.Answer
	case strings.Contains(out.Answer, "could not be used after"):
		res.Failure, res.Detail = FailParseError, out.Answer
	case ended == fsm.Fail && res.AppSteps > res.OKSteps:
		res.Failure, res.Detail = FailToolError, out.Answer
	case ended == fsm.Fail:
		res.Failure, res.Detail = FailAgentGaveUp, out.Answer
	}
	if res.Failure == "" && !checksOK {
		res.Failure, res.Detail = FailCheckerFailed, strings.Join(failed, "; ")
	}
	res.Success = res.Failure == ""
}

func modeOf(s string) strategy.Mode { return strategy.Mode(s) }

// setupFailed says how a setup script failed, or "".
func setupFailed(res command.Result) string {
	var out struct {
		ExitCode int    `json:"exit_code"`
		Stderr   string `json:"stderr"`
	}
	if !res.OK() {
		return "failed: " + res.Error
	}
	if json.Unmarshal(res.Result, &out) == nil && out.ExitCode != 0 {
		return fmt.Sprintf("exited %d: %s", out.ExitCode, cutText(out.Stderr, 300))
	}
	return ""
}

// WriteJSON writes v as indented JSON, atomically (a temporary file
// renamed), so an interrupted run never leaves half a file.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// trialDir makes a fresh working folder for one live trial. Its name has
// the same length on every run (a fixed-width random part, where
// os.MkdirTemp's varies), so that what the device reports, and so the
// prompt's size, is the same from run to run: a resumed run must score
// like an uninterrupted one.
func trialDir(caseID string, trial int) (string, error) {
	for {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("saucer-eval-%s-%d-%08x", caseID, trial, rand.Uint32()))
		err := os.Mkdir(dir, 0o700)
		if !errors.Is(err, fs.ErrExist) {
			return dir, err
		}
	}
}

// runConstellation runs a trial of a case that targets a constellation:
// the runner of Options.Constellations runs it on devices built from the
// trial's config, then each device's checks run on that device and the
// case's own checks on how it ended.
func (r *runner) runConstellation(ctx context.Context, c Case, n int, dir string, res *TrialResult, start time.Time) (*TrialResult, error) {
	res.Model = "scripted"
	res.Trajectory = filepath.ToSlash(filepath.Join("cases", c.ID, fmt.Sprintf("trial-%d", n), "constellation.jsonl"))
	timeout := r.timeout(c)
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if timeout > 0 {
		var stop context.CancelFunc
		tctx, stop = context.WithTimeoutCause(tctx, timeout, errTimeout)
		defer stop()
	}
	cfg := *r.opts.Config
	if r.opts.Sandbox || r.s.sandboxed(c) {
		cfg.Device = config.DeviceSandbox
	}
	// The case's time limit governs its devices' checks: the shell and
	// the device client must not cut them sooner.
	cfg.Tools.Shell.MaxTimeout = max(cfg.Tools.Shell.MaxTimeout, config.Duration(timeout))
	cfg.MCP.CallTimeout = max(cfg.MCP.CallTimeout, config.Duration(timeout))
	var ct *ConstellationTrial
	var err error
	switch {
	case cfg.Device != config.DeviceSandbox && slices.Contains(c.Labels, NeedsRoot):
		err = fmt.Errorf("case %s is labelled %s: its devices run only in sandboxes (sandbox: true in the suite or case, or saucer eval --sandbox), never on this machine", c.ID, NeedsRoot)
	case r.opts.Constellations == nil:
		err = errors.New("this case targets a constellation, and the runner has no Options.Constellations: run it with saucer eval")
	default:
		ct, err = r.opts.Constellations.RunConstellation(tctx, ConstellationRun{Case: c, Dir: dir, Config: &cfg, Extra: r.opts.Extra})
	}
	if ct != nil && ct.Close != nil {
		defer ct.Close()
	}
	res.PhaseMS["RUN"] = trajectory.MS(time.Since(start))
	cause := context.Cause(tctx)
	switch {
	case ctx.Err() != nil:
		return nil, errInterrupted
	case err != nil && errors.Is(cause, errTimeout):
		res.Status, res.Failure, res.Detail = string(fsm.Error), FailTimeout, err.Error()
	case err != nil:
		res.Status, res.Failure, res.Detail = string(fsm.Error), FailInfra, err.Error()
	default:
		r.judgeConstellation(ctx, c, ct, res, timeout, cause, "the recording does not replay: ")
	}
	res.WallMS = trajectory.MS(time.Since(start))
	if err := r.appendTrial(res); err != nil {
		return nil, err
	}
	return res, nil
}

// timeout is the time limit of one trial of c: its own, else the run's.
func (r *runner) timeout(c Case) time.Duration {
	if t := r.s.limits(c).Timeout.D(); t > 0 {
		return t
	}
	return r.opts.Timeout
}

// replayConstellation runs a trial of a case whose recorded device is a
// constellation's recording (file, or err when its path was ambiguous):
// the recording is replayed offline and the case's checks judge the
// graph it ends with.
func (r *runner) replayConstellation(ctx context.Context, c Case, file string, err error, res *TrialResult, start time.Time) (*TrialResult, error) {
	res.Model = ReplayModel
	var ct *ConstellationTrial
	switch {
	case err != nil:
	case r.opts.Constellations == nil:
		err = errors.New("this case replays a constellation's recording, and the runner has no Options.Constellations: run it with saucer eval")
	default:
		abs, aerr := filepath.Abs(file)
		if aerr != nil {
			err = aerr
			break
		}
		res.Trajectory = filepath.ToSlash(abs)
		ct, err = r.opts.Constellations.ReplayConstellation(ctx, abs)
	}
	if ct != nil && ct.Close != nil {
		defer ct.Close()
	}
	res.PhaseMS["RUN"] = trajectory.MS(time.Since(start))
	switch {
	case ctx.Err() != nil:
		return nil, errInterrupted
	case err != nil:
		res.Status, res.Failure, res.Detail = string(fsm.Error), FailInfra, err.Error()
	default:
		r.judgeConstellation(ctx, c, ct, res, r.timeout(c), nil, "the replay diverged from the recording: ")
		// Nothing of the trial's own was written: its trajectory is the
		// recording it replayed.
		res.IsRecording = ct.Replay == ""
	}
	res.WallMS = trajectory.MS(time.Since(start))
	if err := r.appendTrial(res); err != nil {
		return nil, err
	}
	return res, nil
}

// judgeConstellation runs the checks of a constellation trial that ran
// (each device's on that device, then the case's own on how it ended) and
// decides its success and failure category. diverged introduces a replay
// that parts from the recording.
func (r *runner) judgeConstellation(ctx context.Context, c Case, ct *ConstellationTrial, res *TrialResult, timeout time.Duration, cause error, diverged string) {
	res.Status, res.Answer, res.ModelCalls, res.Steps = string(fsm.Fail), ct.Answer, ct.ModelCalls, ct.Nodes
	if ct.Completed {
		res.Status = string(fsm.Finish)
	}
	checkStart := time.Now()
	if k := c.Constellation; k != nil {
		for _, d := range k.Devices {
			exec := ct.Devices[d.ID]
			env := &checkEnv{live: exec, timeout: timeout, answer: ct.Answer, status: res.Status, task: c.Task,
				record: func(trajectory.Event) {}}
			if exec != nil {
				env.device = dispatcher.NewLocal(exec, dispatcher.LocalOptions{Timeout: timeout})
			}
			for i, ch := range d.Checks {
				var cr CheckResult
				if exec == nil && ch.State != nil {
					cr = CheckResult{Name: ch.Label(i), Kind: ch.Kind(), Detail: "the device is not there to check"}
				} else {
					cr = env.run(ctx, i, ch)
				}
				cr.Name = d.ID + ": " + cr.Name
				res.Checks = append(res.Checks, cr)
			}
		}
	}
	graph := ct.Graph
	if graph == nil {
		graph = []ConstellationNode{} // a constellation with no node
	}
	env := &checkEnv{timeout: timeout, answer: ct.Answer, status: res.Status, task: c.Task, graph: graph,
		openJudge: func(s string) (llm.Model, error) { return r.openModel(r.s.model(s)) }, judge: r.s.Judge,
		record: func(trajectory.Event) {}}
	for i, ch := range c.Checks {
		if ch.State != nil || ch.ToolCalls != nil {
			res.Checks = append(res.Checks, CheckResult{Name: ch.Label(i), Kind: ch.Kind(),
				Detail: "a constellation has no device of its own to check: put state checks under a device (constellation.devices[].checks); a replayed recording has none"})
			continue
		}
		res.Checks = append(res.Checks, env.run(ctx, i, ch))
	}
	res.PhaseMS["CHECK"] = trajectory.MS(time.Since(checkStart))
	var failed []string
	for _, ch := range res.Checks {
		if !ch.Pass {
			failed = append(failed, ch.Name+": "+ch.Detail)
		}
	}
	switch {
	case ct.Replay != "":
		res.Failure, res.Detail = FailDivergence, diverged+ct.Replay
	case errors.Is(cause, errTimeout):
		res.Failure, res.Detail = FailTimeout, ct.Status+": "+ct.Answer
	case c.ExpectFail && ct.Completed:
		res.Failure, res.Detail = FailExpectedFail, "the task is infeasible, but the constellation completed: "+ct.Answer
	case c.ExpectFail && ct.Status == "failed":
		// The right end for an infeasible task; the checks decide.
	case !ct.Completed:
		res.Failure, res.Detail = FailAgentGaveUp, "the constellation ended "+ct.Status+": "+ct.Answer
	}
	if res.Failure == "" && len(failed) > 0 {
		res.Failure, res.Detail = FailCheckerFailed, strings.Join(failed, "; ")
	}
	res.Success = res.Failure == ""
}

// startDir is a trial's device whose shell a start script left in dir:
// its device info names dir as the working directory, where the agent's
// shell is, instead of the folder the device began in.
type startDir struct {
	next dispatcher.Dispatcher
	dir  string
}

func (d startDir) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	out := d.next.Execute(ctx, cmds)
	for i, c := range cmds {
		if c.ToolName != command.GetDeviceInfo || i >= len(out) || !out[i].OK() {
			continue
		}
		var info command.DeviceInfo
		if json.Unmarshal(out[i].Result, &info) != nil {
			continue
		}
		info.WorkDir = d.dir
		if b, err := json.Marshal(info); err == nil {
			out[i].Result = b
		}
	}
	return out
}
