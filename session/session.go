// Package session is the one assembly: it builds a session of agents from a
// config plus options (model, dispatcher or device, strategy registry,
// middleware, prompts, observers, a person to confirm and answer). Every
// front end goes through it — `saucer run`, `serve`, `eval`, `eval steps`,
// `replay` — and so does a program that uses Saucer as a library, so an
// extension (a strategy, a prompt set, a model provider, a tool) works the
// same everywhere.
//
//	cfg := config.Default()
//	dev, err := local.Device(ctx, cfg, workdir)
//	...
//	sess, err := session.New(cfg, session.Options{Device: dev, Registry: reg})
//	...
//	outcome := sess.Run(ctx, "archive the logs")
//
// Example shows it whole; the programs in examples/ show each extension.
package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

// Options are what a session needs beyond the config. Only a device
// (Device or Dispatcher) is required; nil and zero fields take the config's
// values or the built-ins.
type Options struct {
	// Model answers the agents; nil opens the config's model (built-in or
	// registered provider, see provider.Register).
	Model llm.Model
	// Mode overrides how the model acts (tools or json); empty means the
	// config's mode for the model.
	Mode strategy.Mode

	// Device is an in-process device client; commands reach it through a
	// local dispatcher with the config's command timeout. Dispatcher, when
	// set, is used instead (a remote device, a recorded one).
	Device     *client.Client
	Dispatcher dispatcher.Dispatcher
	// Abort, when set, cancels the command in progress on Device as soon
	// as it ends. Run's context stops a session between commands (one that
	// has started runs to its end); Abort stops that command too (the
	// shell kills its processes), for a second Ctrl-C. It does not reach
	// a Dispatcher given here.
	Abort context.Context
	// Gate, when set, is asked before each command goes to Device (and
	// before each batch goes to a Dispatcher given here): an error keeps
	// the command from running, and it fails with that error. saucer run
	// asks its recording (record.Recorder.Sync), so that nothing runs once
	// the recording cannot be written.
	Gate func(context.Context) error
	// Apps describe the device's apps (tool namespaces) to the host agent;
	// nil takes them from Device.
	Apps map[string]string
	// DeviceInfo is what is known of the device before discovery (a remote
	// device's registration): a device that cannot be asked still has it.
	DeviceInfo command.DeviceInfo

	// Registry supplies strategies by name; nil means the built-ins.
	// Pipelines come from the config's agent section (whole pipelines,
	// edits, per-app pipelines); HostEdits and AppEdits are applied after
	// the config's, so a program can add its strategy without a config.
	Registry            *strategy.Registry
	HostEdits, AppEdits []strategy.Edit
	// Middleware wraps every strategy run, outermost first.
	Middleware []strategy.Middleware

	// Prompts is the prompt set; nil loads the config's prompts directory
	// over the built-in templates (see prompts.LoadFS for an embed.FS).
	Prompts *prompts.Set
	// AnswerFormat is the task's rule for its final answer, given with
	// the request: a short plain-language rule such as "a single integer,
	// digits only, no words". Both agents' first user turn states it,
	// after the request, and the host agent's finishing rule refers to it
	// (prompts.HostData.AnswerFormat). Empty: the prompts say nothing of
	// a format.
	AnswerFormat string

	// Observers are told of every event, in order.
	Observers []func(agent.Event)
	// Confirmer approves commands before they run; Asker answers the
	// agents' questions. Nil means nobody is there: confirmations are
	// declined and questions fail with a clear reason.
	Confirmer strategy.Confirmer
	Asker     agent.Asker
	// Retriever, when set, gives each agent what was learned before that
	// fits its work, for its first prompt: a knowledge store's
	// (knowledge.Store.Retriever), or a recording's in a replay. Nil: the
	// agents are given none.
	Retriever strategy.Retriever
	// OnChunk, when set, is told of model replies as they stream in.
	OnChunk func(agent string, c llm.Chunk)
	// Prices go over the config's (cfg.PriceTable: the built-in table
	// with the config's prices over it), by model spec or pattern: an eval
	// suite's prices, say. The events' costs, Outcome.Cost and the
	// budget's cost_usd are priced from them.
	Prices map[string]price.Price
}

// New builds a session from cfg and o.
func New(cfg *config.Config, o Options) (*Session, error) {
	if cfg == nil {
		return nil, errors.New("session: no config (config.Default() gives the built-in one)")
	}
	disp := o.Dispatcher
	if disp == nil {
		if o.Device == nil {
			return nil, errors.New("session: no device: set Options.Device (an in-process device client) or Options.Dispatcher")
		}
		disp = dispatcher.NewLocal(Gated(Abortable(o.Device, o.Abort), o.Gate), dispatcher.LocalOptions{Timeout: cfg.Agent.CommandTimeout.D()})
	} else if o.Gate != nil {
		disp = gatedDispatcher{disp, o.Gate}
	}
	model := o.Model
	if model == nil {
		var err error
		if model, err = OpenModel(cfg); err != nil {
			return nil, err
		}
	}
	mode := o.Mode
	if mode == "" {
		mode = cfg.ModeFor(cfg.Model)
	}
	set := o.Prompts
	if set == nil {
		var err error
		if set, err = Prompts(cfg.Prompts); err != nil {
			return nil, err
		}
	}
	// The format is fixed for the task, as the templates are: every
	// agent's prompts come from this one set.
	set = set.WithAnswerFormat(o.AnswerFormat)
	a := cfg.Agent
	a.HostEdits = append(append([]strategy.Edit(nil), a.HostEdits...), o.HostEdits...)
	a.AppEdits = append(append([]strategy.Edit(nil), a.AppEdits...), o.AppEdits...)
	descs := o.Apps
	if descs == nil && o.Device != nil {
		descs = map[string]string{}
		for _, ns := range o.Device.Namespaces() {
			descs[ns.Name] = ns.Description
		}
	}
	// A desktop app's agent observes its window every step, unless the
	// config gives that app a pipeline of its own. (The apps come from the
	// device, or from a recording when replayed.)
	for _, name := range slices.Sorted(maps.Keys(descs)) {
		if _, own := a.AppPipelines[name]; own || !cfg.MCP.IsDesktop(name) {
			continue
		}
		a.AppPipelines = maps.Clone(a.AppPipelines)
		if a.AppPipelines == nil {
			a.AppPipelines = map[string]config.AppPipeline{}
		}
		a.AppPipelines[name] = config.AppPipeline{Edits: []strategy.Edit{
			strategy.Insert(strategy.Spec{Name: strategy.DesktopObserve}, strategy.Discover, true)}}
	}
	host, app, apps, err := a.Pipelines()
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}

	prices := cfg.PriceTable()
	if len(o.Prices) > 0 {
		prices = prices.With(o.Prices)
	}
	if err := CheckBudget(cfg, prices); err != nil {
		return nil, err
	}
	b := &budgetTracker{limit: cfg.Budget, model: cfg.Model, prices: prices}
	observe := Chain(o.Observers...)
	if f, ok := model.(*llm.Fallback); ok && f.OnSwitch == nil && observe != nil {
		// The switch is shown (saucer run prints it) and the replies name
		// the model that answered, in the recording too.
		f.OnSwitch = func(from, to string, err error) {
			why := "is unavailable"
			if errors.Is(err, llm.ErrContextLength) {
				why = "cannot take a request this long"
			}
			observe(agent.Event{Kind: agent.EventFallback, Err: fmt.Errorf("%s %s, asking %s instead: %w", from, why, to, err)})
		}
	}
	// A server that reports no token usage is counted by Saucer, so that
	// token budgets and costs hold; those figures are marked estimated.
	model = tokens.Counted(model, cfg.Model)
	// Nobody watching, the budget counts the model's calls itself and the
	// agents build no events: a replay, say, builds none it would drop.
	observer := func(e agent.Event) {
		// The budget counts first and prices the event for the rest.
		b.observe(&e)
		observe(e)
	}
	if observe == nil {
		model, observer = budgeted{model, b}, nil
	}
	s, err := agent.New(agent.Options{
		Model:        model,
		Mode:         mode,
		Dispatcher:   disp,
		Prompts:      set,
		Registry:     o.Registry,
		HostPipeline: host,
		AppPipeline:  app,
		AppPipelines: apps,
		Middleware:   o.Middleware,
		MaxRounds:    a.MaxRounds,
		MaxSteps:     a.MaxSteps,
		Limits: strategy.Limits{MaxRetries: retries(a.MaxRetries), RetryBackoff: a.RetryBackoff.D(),
			MaxResultChars: a.MaxResultChars, ArtifactHead: a.ArtifactHead, ConfirmDestructive: a.ConfirmDestructive, Approve: a.Approve, MaxRetryAfter: a.MaxRetryAfter.D(), Context: cfg.ContextFor(cfg.Model),
			DetachAfter: a.DetachAfter.D(), ComputerUse: a.ComputerUse != "off"},
		Confirmer:       o.Confirmer,
		Asker:           o.Asker,
		AppDescriptions: descs,
		DirectApp:       a.DirectApp,
		Device:          o.DeviceInfo,
		Observer:        observer,
		OnChunk:         o.OnChunk,
		Retriever:       o.Retriever,
	})
	if err != nil {
		return nil, err
	}
	return &Session{Session: s, b: b}, nil
}

// Abortable is exec with each command's context ended, with abort's
// cause, as soon as abort ends: the way to stop a command in progress,
// which a dispatcher's cancellation never reaches. A nil abort leaves
// exec as it is.
func Abortable(exec dispatcher.Executor, abort context.Context) dispatcher.Executor {
	if abort == nil {
		return exec
	}
	return abortable{exec, abort}
}

type abortable struct {
	exec  dispatcher.Executor
	abort context.Context
}

func (a abortable) Execute(ctx context.Context, cmd command.Command) command.Result {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(a.abort, func() { cancel(context.Cause(a.abort)) })
	defer stop()
	return a.exec.Execute(ctx, cmd)
}

// Gated is exec with gate asked before each command (nil: exec as it
// is): a command whose gate says no does not run, and fails with the
// gate's error (see Options.Gate).
func Gated(exec dispatcher.Executor, gate func(context.Context) error) dispatcher.Executor {
	if gate == nil {
		return exec
	}
	return gated{exec, gate}
}

type gated struct {
	exec dispatcher.Executor
	gate func(context.Context) error
}

func (g gated) Execute(ctx context.Context, cmd command.Command) command.Result {
	if err := g.gate(ctx); err != nil {
		return command.Failed(cmd.CallID, fmt.Sprintf("not run: %v", err))
	}
	return g.exec.Execute(ctx, cmd)
}

// gatedDispatcher asks its gate before each batch.
type gatedDispatcher struct {
	next dispatcher.Dispatcher
	gate func(context.Context) error
}

func (g gatedDispatcher) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	if err := g.gate(ctx); err != nil {
		out := make([]command.Result, len(cmds))
		for i, c := range cmds {
			out[i] = command.Failed(c.CallID, fmt.Sprintf("not run: %v", err))
		}
		return out
	}
	return g.next.Execute(ctx, cmds)
}

// OpenModel opens the config's model through the provider registry, with
// its fallbacks (models.<model>.fallbacks) behind it when it has some.
func OpenModel(cfg *config.Config) (llm.Model, error) { return OpenModelBy(cfg, nil) }

// OpenModelBy is OpenModel with open, when set, opening each model (the
// config's, then each fallback) by spec in place of the provider registry:
// models only a caller knows, such as an imported suite's example
// solutions, get the config's fallbacks too.
func OpenModelBy(cfg *config.Config, open func(spec string) (llm.Model, error)) (llm.Model, error) {
	if open == nil {
		open = func(spec string) (llm.Model, error) { return provider.Open(spec, cfg.Providers, os.Getenv) }
	}
	m, err := open(cfg.Model)
	if err != nil {
		return nil, err
	}
	fallbacks := cfg.FallbacksFor(cfg.Model)
	if len(fallbacks) == 0 {
		return m, nil
	}
	f := &llm.Fallback{Models: []llm.Named{{Spec: cfg.Model, Model: m}},
		Retry: llm.RetryPolicy{Base: cfg.Agent.RetryBackoff.D(), Max: 1, MaxRetryAfter: cfg.Agent.MaxRetryAfter.D()}}
	for _, spec := range fallbacks {
		fm, err := open(spec)
		if err != nil {
			return nil, fmt.Errorf("models.%s.fallbacks: %w", cfg.Model, err)
		}
		f.Models = append(f.Models, llm.Named{Spec: spec, Model: fm})
	}
	return f, nil
}

// Prompts loads the prompt set of a config's prompts setting. The built-in
// set never changes, so it is parsed once per process (an eval suite builds
// a session per trial).
func Prompts(dir string) (*prompts.Set, error) {
	if dir != "" {
		return prompts.Load(dir)
	}
	builtinOnce.Do(func() { builtinSet, builtinErr = prompts.Load("") })
	return builtinSet, builtinErr
}

var (
	builtinOnce sync.Once
	builtinSet  *prompts.Set
	builtinErr  error
)

// Chain returns an observer that tells each non-nil observer in turn, or
// nil when there is none.
func Chain(obs ...func(agent.Event)) func(agent.Event) {
	var list []func(agent.Event)
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return func(e agent.Event) {
		for _, o := range list {
			o(e)
		}
	}
}

// retries maps the config's count (0 = none) to agent.Options' (0 = the
// default).
func retries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// Check is everything a run checks before it starts a device or asks a
// model, for `saucer config` and `saucer doctor` to report exactly what
// `saucer run` would refuse: the config's values, the prompt set (the
// override folder exists and its templates render), and the device's
// server set for workdir and app (mcp.use or mcp.apps, Saucer's own
// servers built, their folders there), and a budget that could not be
// enforced (see CheckBudget).
func Check(cfg *config.Config, workdir, app string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := CheckBudget(cfg, cfg.PriceTable()); err != nil {
		return err
	}
	if _, err := Prompts(cfg.Prompts); err != nil {
		return err
	}
	if _, err := local.Servers(cfg, workdir, app); err != nil {
		return err
	}
	return nil
}
