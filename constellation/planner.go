package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
)

// The planner's own strategies, registered by Register.
const (
	// StrategyObserve (DATA_COLLECTION) reads the graph, the devices and
	// what happened since the last step, with the get_constellation call.
	StrategyObserve = "constellation_observe"
	// StrategyPlan (LLM_INTERACTION) asks the model for edits, with the
	// constellation templates and the planner's tools.
	StrategyPlan = "constellation_plan"
)

// getConstellation is the planner's data-collection call: its editor
// answers with a View.
const getConstellation = "get_constellation"

// View is what the planner sees at a step.
type View struct {
	Request string   `json:"request"`
	Graph   *Graph   `json:"graph"`
	Devices []Device `json:"devices"`
	Events  []string `json:"events,omitempty"`
}

var viewKey = strategy.NewKey[View]("constellation view")

// Register adds the planner's strategies to r (an error if r has them).
func Register(r *strategy.Registry) error {
	if err := r.Register(StrategyObserve, func(map[string]any) (strategy.Strategy, error) {
		return strategy.Func(StrategyObserve, strategy.DataCollection, observe), nil
	}); err != nil {
		return err
	}
	return r.Register(StrategyPlan, func(map[string]any) (strategy.Strategy, error) {
		return strategy.Func(StrategyPlan, strategy.LLMInteraction, plan), nil
	})
}

// DefaultPipeline is the planner's pipeline: the built-in discover (which
// learns the planner's tools from its editor), the planner's observe and
// plan, and the built-in execute (which sends the edits to the editor) and
// remember.
func DefaultPipeline() []strategy.Spec {
	return []strategy.Spec{{Name: strategy.Discover}, {Name: StrategyObserve}, {Name: StrategyPlan},
		{Name: strategy.Execute}, {Name: strategy.Remember}}
}

// DefaultMaxPlannerSteps bounds the planner's steps when PlannerOptions
// leave it zero.
const DefaultMaxPlannerSteps = 30

// PlannerOptions configure the constellation agent. Model and Prompts are
// required.
type PlannerOptions struct {
	Model   llm.Model
	Prompts *prompts.Set
	// Registry supplies strategies by name; nil means the built-ins plus
	// the planner's own. A registry of the caller's must have Register
	// called on it.
	Registry *strategy.Registry
	// Pipeline names the planner's strategies; empty means
	// DefaultPipeline().
	Pipeline   []strategy.Spec
	Middleware []strategy.Middleware
	// MaxSteps bounds the planner's steps over the whole constellation;
	// zero means DefaultMaxPlannerSteps.
	MaxSteps int
	Limits   strategy.Limits
	// Bounds limit the graph it makes and the edits of one reply.
	Bounds Bounds
}

// Planner is the constellation agent: each Step shows it the graph and
// what happened, and applies the edits it makes.
type Planner struct {
	opts    PlannerOptions
	proc    *strategy.Processor
	machine *fsm.Machine
	pc      *strategy.Context
	ed      *editor
	steps   int
}

// NewPlanner builds the agent's pipeline.
func NewPlanner(opts PlannerOptions) (*Planner, error) {
	switch {
	case opts.Model == nil:
		return nil, errors.New("constellation: the planner needs a model")
	case opts.Prompts == nil:
		return nil, errors.New("constellation: the planner needs prompts (prompts.Load(\"\") gives the built-in ones)")
	}
	if opts.Registry == nil {
		opts.Registry = strategy.NewRegistry()
		if err := Register(opts.Registry); err != nil {
			return nil, err
		}
	}
	if len(opts.Pipeline) == 0 {
		opts.Pipeline = DefaultPipeline()
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxPlannerSteps
	}
	if opts.Limits.MaxRetries == 0 {
		opts.Limits.MaxRetries = 3
	}
	entries, err := opts.Registry.Build(opts.Pipeline)
	if err != nil {
		return nil, fmt.Errorf("constellation: planner pipeline: %w", err)
	}
	proc, err := strategy.NewProcessor(entries, opts.Middleware...)
	if err != nil {
		return nil, err
	}
	return &Planner{opts: opts, proc: proc, machine: fsm.New(fsm.Constellation)}, nil
}

// StepResult is what one planner step did.
type StepResult struct {
	Status fsm.State
	// Answer is the planner's answer (FINISH) or reason (FAIL).
	Answer string
	// Edits are the edits it tried, in order, failed ones included.
	Edits []Edit
	Usage llm.Usage
}

// Step shows the planner g, the devices and events, and applies its edits
// to g (each checked; a bad one fails back to the model and changes
// nothing). The caller bumps g's version when edits were made.
func (p *Planner) Step(ctx context.Context, g *Graph, devices []Device, events []string) (StepResult, error) {
	if p.machine.Terminal() {
		return StepResult{}, fmt.Errorf("constellation: the planner has ended (%s)", p.machine.Current())
	}
	if g.PlannerSteps >= p.opts.MaxSteps {
		return StepResult{Status: fsm.Fail, Answer: fmt.Sprintf("the planner reached its limit of %d steps", p.opts.MaxSteps)}, nil
	}
	if p.pc == nil {
		p.ed = &editor{bounds: p.opts.Bounds}
		p.pc = strategy.NewContext(strategy.Setup{
			Agent: strategy.Agent{Name: "constellation", Role: fsm.Constellation, App: Namespace}, Request: g.Request,
			Mode: strategy.ModeTools, Model: p.opts.Model, Dispatcher: p.ed, Prompts: p.opts.Prompts, Board: &memory.Blackboard{},
			Artifacts: &memory.Artifacts{}, Limits: p.opts.Limits, MaxSteps: p.opts.MaxSteps})
	}
	p.ed.graph, p.ed.devices, p.ed.events, p.ed.edits = g, devices, events, nil
	g.PlannerSteps++
	p.steps++
	p.pc.BeginStep(g.PlannerSteps, g.PlannerSteps)
	err := p.proc.Run(ctx, p.pc)
	res := StepResult{Status: p.pc.Status(), Edits: p.ed.edits, Usage: p.pc.Usage()}
	if d := p.pc.Decision(); d != nil {
		res.Answer = d.Result
	}
	if err != nil {
		return res, err
	}
	if res.Status == "" {
		return res, errors.New("constellation: the planner's step ended without a status: its pipeline needs an LLM_INTERACTION strategy")
	}
	if err := p.machine.Go(context.Background(), res.Status); err != nil {
		return res, err
	}
	return res, nil
}

// observe asks the editor for the view.
func observe(ctx context.Context, pc *strategy.Context) error {
	r := pc.Dispatcher().Execute(ctx, []command.Command{{ToolName: getConstellation, ToolType: command.DataCollection}})
	if len(r) != 1 || !r[0].OK() {
		return errors.New("constellation: the planner's dispatcher does not answer get_constellation")
	}
	var v View
	if err := json.Unmarshal(r[0].Result, &v); err != nil {
		return fmt.Errorf("constellation: get_constellation: %w", err)
	}
	strategy.Set(pc, viewKey, v)
	return nil
}

// plan renders the planner's turn, asks the model and decides. The
// conversation is append-only: the system prompt, then per step the status
// turn, the model's reply and its tools' results (rebuilt from memory).
func plan(ctx context.Context, pc *strategy.Context) error {
	if pc.Mode() != strategy.ModeTools {
		return errors.New("constellation: the planner works in tools mode only; use a model with tool calling")
	}
	v, ok := strategy.Get(pc, viewKey)
	if !ok {
		return fmt.Errorf("constellation: no view: the planner's pipeline needs %s before %s", StrategyObserve, StrategyPlan)
	}
	data := prompts.ConstellationData{Request: v.Request, Graph: v.Graph.Summary(), Events: v.Events, Step: pc.Step(), MaxSteps: pc.MaxSteps()}
	for _, d := range v.Devices {
		data.Devices = append(data.Devices, prompts.ConstellationDevice{ID: d.ID, Platform: d.Platform, Apps: d.Apps, Sandbox: d.Sandbox, Labels: d.Labels})
	}
	sys, err := pc.Prompts().Render("constellation_system", data)
	if err != nil {
		return err
	}
	status, err := pc.Prompts().Render("constellation_status", data)
	if err != nil {
		return err
	}
	msgs := []llm.Message{llm.System(sys)}
	for _, st := range pc.Memory().Steps() {
		if len(st.Notes) > 0 {
			msgs = append(msgs, llm.User(st.Notes[0])) // the status turn it answered
		}
		msgs = append(msgs, st.Reply)
		for _, c := range st.Reply.ToolCalls {
			msgs = append(msgs, llm.ToolResult(c, resultFor(st, c)))
		}
		if len(st.Notes) > 1 {
			for _, n := range st.Notes[1:] {
				msgs = append(msgs, llm.User(n))
			}
		}
	}
	msgs = append(msgs, llm.User(status))
	var tools []llm.Tool
	for _, t := range pc.Tools() {
		tools = append(tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	for _, c := range prompts.ConstellationControlTools() {
		tools = append(tools, llm.Tool{Name: c.Name, Description: c.Description, Parameters: c.Parameters})
	}
	resp, err := pc.Complete(ctx, &llm.Request{Messages: msgs, Tools: tools})
	if err != nil {
		return err
	}
	d := strategy.Decision{Thought: strings.TrimSpace(resp.Message.Content), Status: fsm.Continue}
	for _, c := range resp.Message.ToolCalls {
		args := map[string]any{}
		invalid := ""
		if strings.TrimSpace(c.Arguments) != "" {
			if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
				invalid = fmt.Sprintf("%s: the arguments are not a JSON object (%v)", c.Name, err)
			}
		}
		switch c.Name {
		case prompts.FinishTool:
			d.Status, d.Result = fsm.Finish, str(args, "result")
		case prompts.FailTool:
			d.Status, d.Result = fsm.Fail, str(args, "reason")
		default:
			d.Actions = append(d.Actions, strategy.Action{Function: c.Name, Arguments: args, CallID: c.ID, Invalid: invalid})
		}
	}
	if i := slices.IndexFunc(d.Actions, func(a strategy.Action) bool { return a.Invalid != "" }); i >= 0 {
		// The edits of a reply go together: one that cannot be read
		// keeps the others from being made.
		why := d.Actions[i].Invalid
		for j := range d.Actions {
			if d.Actions[j].Invalid == "" {
				d.Actions[j].Invalid = "not applied: the edits of one reply are applied together or not at all, and " + why +
					". Send the whole set again, corrected"
			}
		}
	}
	pc.Decide(d)
	// The status turn is kept as the step's first note (remember stores
	// it), so the next request repeats it where it was: before the reply.
	pc.AddNote(status)
	return nil
}

// resultFor is the text of the result of the i-th tool call of a step.
func resultFor(st memory.Step, c llm.ToolCall) string {
	for j, id := range st.CallIDs {
		if id == c.ID && j < len(st.Results) {
			return strategy.ResultText(st.Results[j], 4000)
		}
	}
	switch c.Name {
	case prompts.FinishTool, prompts.FailTool:
		return "noted"
	}
	return "not run"
}
