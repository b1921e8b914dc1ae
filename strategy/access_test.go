package strategy_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools"
)

type wordsIn struct {
	Text string `json:"text"`
}

// words is a device with one app, "text", and its one tool.
func words(t *testing.T) dispatcher.Dispatcher {
	t.Helper()
	s := &tools.Server{Name: "text"}
	s.Add(tools.New("count_words", "Count words.", tools.Annotations{Risk: tools.RiskRead},
		func(ctx context.Context, in wordsIn) (int, error) { return len(strings.Fields(in.Text)), nil }))
	c, err := client.New(context.Background(), []client.Server{{Namespace: "text", MCP: s}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return dispatcher.NewLocal(c, dispatcher.LocalOptions{})
}

type approver struct{ asked []command.Command }

func (a *approver) Confirm(_ context.Context, agent string, cmds []command.Command, reason string) (bool, error) {
	a.asked = append(a.asked, cmds...)
	return reason == "counting is safe", nil
}

// A whole step written outside the package, through the context's methods
// alone: discover, observe, ask the model, confirm and act, remember.
func TestAStepThroughTheMethods(t *testing.T) {
	model := scripted.New(scripted.Script{Replies: []scripted.Reply{{Text: "I will count."}}})
	conf := &approver{}
	board := &memory.Blackboard{}
	pc := strategy.NewContext(strategy.Setup{
		Agent: strategy.Agent{Name: "app:text#1", Role: fsm.App, App: "text"}, Request: "count", Subtask: "count the words",
		Mode: strategy.ModeTools, Model: model, Dispatcher: words(t), Board: board, Confirmer: conf, MaxSteps: 3,
	})
	discover := strategy.Func("find", strategy.DataCollection, func(ctx context.Context, pc *strategy.Context) error {
		r := pc.Dispatcher().Execute(ctx, []command.Command{{ToolName: command.GetMCPTools, Parameters: map[string]any{"namespace": pc.Agent().App}}})
		var found []command.ToolInfo
		if err := json.Unmarshal(r[0].Result, &found); err != nil {
			return err
		}
		pc.Learn(command.DeviceInfo{}, found)
		pc.Observe(prompts.Observation{Name: "tools", Content: found[0].Name})
		return nil
	})
	ask := strategy.Func("think", strategy.LLMInteraction, func(ctx context.Context, pc *strategy.Context) error {
		resp, err := pc.Complete(ctx, &llm.Request{Messages: []llm.Message{llm.User(pc.Subtask())}})
		if err != nil {
			return err
		}
		pc.Decide(strategy.Decision{Status: fsm.Continue, Thought: resp.Message.Content, Comment: "counting is safe",
			Actions: []strategy.Action{{Function: pc.Tools()[0].Name, Arguments: map[string]any{"text": "one two three"}}}})
		return nil
	})
	act := strategy.Func("act", strategy.ActionExecution, func(ctx context.Context, pc *strategy.Context) error {
		d := pc.Decision()
		cmd := command.Command{Namespace: pc.Agent().App, ToolName: d.Actions[0].Function, Parameters: d.Actions[0].Arguments}
		ok, err := pc.Confirm(ctx, []command.Command{cmd}, d.Comment)
		if err != nil || !ok {
			return errors.Join(err, errors.New("not approved"))
		}
		pc.Pass(fsm.Confirm)
		pc.Record(cmd, pc.Dispatcher().Execute(ctx, []command.Command{cmd})[0])
		pc.AddNote("approved")
		if _, err := pc.RunSubtask(ctx, "other", "x"); !errors.Is(err, strategy.ErrNoSubtasks) {
			return errors.New("an app agent ran a subtask")
		}
		pc.SetStatus(fsm.Finish)
		return nil
	})
	remember := strategy.Func("keep", strategy.MemoryUpdate, func(ctx context.Context, pc *strategy.Context) error {
		pc.Memory().Add(memory.Step{Agent: pc.Agent().Name, Step: pc.Step(), Status: string(pc.Status()),
			Commands: pc.Commands(), Results: pc.Results(), Notes: pc.Notes(), Usage: pc.Usage()})
		pc.Board().Set("counted", "yes")
		return nil
	})
	p, err := strategy.NewProcessor([]strategy.Entry{{Strategy: discover, FailFast: true}, {Strategy: ask, FailFast: true},
		{Strategy: act, FailFast: true}, {Strategy: remember, FailFast: true}})
	if err != nil {
		t.Fatal(err)
	}
	pc.BeginStep(0, 1)
	if err := p.Run(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	if got := pc.Observations(); len(got) != 1 || got[0].Content != "count_words" {
		t.Errorf("observations %+v", got)
	}
	if pc.Attempts() != 1 || pc.Usage().TotalTokens == 0 || pc.Response().Message.Content != "I will count." || len(pc.Messages()) != 1 {
		t.Errorf("model call: attempts %d, usage %+v, response %+v, messages %d", pc.Attempts(), pc.Usage(), pc.Response(), len(pc.Messages()))
	}
	if len(conf.asked) != 1 || conf.asked[0].ToolName != "count_words" {
		t.Errorf("confirmer was asked %+v", conf.asked)
	}
	rs := pc.Results()
	if len(rs) != 1 || string(rs[0].Result) != "3" || len(pc.Commands()) != 1 {
		t.Errorf("results %+v", rs)
	}
	if pc.Status() != fsm.Finish || !reflect.DeepEqual(pc.Visited(), []fsm.State{fsm.Confirm}) {
		t.Errorf("status %s, visited %v", pc.Status(), pc.Visited())
	}
	if st, ok := pc.Memory().Last(); !ok || st.Status != "FINISH" || st.Notes[0] != "approved" {
		t.Errorf("memory %+v", st)
	}
	if v, _ := board.Get("counted"); v != "yes" {
		t.Error("the blackboard was not written")
	}
	if len(pc.Timings()) != 4 {
		t.Errorf("timings %v", pc.Timings())
	}
	// The next step starts clean; what the agent learnt stays.
	pc.BeginStep(0, 2)
	if pc.Decision() != nil || pc.Status() != "" || len(pc.Results()) != 0 || len(pc.Observations()) != 0 || len(pc.Tools()) != 1 {
		t.Errorf("after BeginStep: decision %v, status %q, results %v, tools %d", pc.Decision(), pc.Status(), pc.Results(), len(pc.Tools()))
	}
}

// What the context hands out is a copy: changing it changes nothing in the
// step, so a strategy changes the step only through the methods that say
// so.
func TestWhatTheContextHandsOutIsACopy(t *testing.T) {
	pc := strategy.NewContext(strategy.Setup{Agent: strategy.Agent{Name: "app", Role: fsm.App, App: "text"}})
	pc.Learn(command.DeviceInfo{}, []command.ToolInfo{{Name: "a", Namespace: "text"}})
	pc.Record(command.Command{ToolName: "a"}, command.Succeeded("", "ok"))
	pc.Observe(prompts.Observation{Name: "o"})
	pc.Decide(strategy.Decision{Status: fsm.Continue, Result: "r"})

	pc.Tools()[0].Name = "changed"
	pc.Commands()[0].ToolName = "changed"
	pc.Results()[0].Error = "changed"
	pc.Observations()[0].Name = "changed"
	d := pc.Decision()
	d.Status, d.Result = fsm.Finish, "changed"

	if pc.Tools()[0].Name != "a" || pc.Commands()[0].ToolName != "a" || pc.Results()[0].Error != "" || pc.Observations()[0].Name != "o" {
		t.Errorf("a slice handed out changed the context: %+v %+v %+v %+v", pc.Tools(), pc.Commands(), pc.Results(), pc.Observations())
	}
	if d := pc.Decision(); d.Status != fsm.Continue || d.Result != "r" || pc.Status() != fsm.Continue {
		t.Errorf("the decision handed out changed the context: %+v, status %s", d, pc.Status())
	}
}

// A host agent's apps are the discovered namespaces, with the descriptions
// it was configured with; discovery adds to the device known up front.
func TestLearnGroupsAHostsApps(t *testing.T) {
	pc := strategy.NewContext(strategy.Setup{Agent: strategy.Agent{Name: "host", Role: fsm.Host},
		Device: command.DeviceInfo{Hostname: "lab-4"}, Apps: []prompts.App{{Name: "files", Description: "the lab's files"}}})
	pc.Learn(command.DeviceInfo{}, []command.ToolInfo{
		{Name: "read_file", Namespace: "files"}, {Name: "run", Namespace: "shell"}, {Name: "write_file", Namespace: "files"}})
	apps := pc.Apps()
	if len(apps) != 2 || apps[0].Name != "files" || apps[0].Description != "the lab's files" || len(apps[0].Tools) != 2 || apps[1].Name != "shell" {
		t.Errorf("apps %+v", apps)
	}
	if pc.Device().Hostname != "lab-4" {
		t.Errorf("device %+v", pc.Device())
	}
	pc.Learn(command.DeviceInfo{Hostname: "lab-5"}, nil)
	if pc.Device().Hostname != "lab-5" || pc.Tools() == nil || len(pc.Tools()) != 0 {
		t.Errorf("after a second discovery: device %+v, tools %#v", pc.Device(), pc.Tools())
	}
}

// A strategy changes the context only through its methods: it has no
// field a strategy could set.
func TestContextHasNoExportedFields(t *testing.T) {
	ct := reflect.TypeFor[strategy.Context]()
	for i := range ct.NumField() {
		if f := ct.Field(i); f.IsExported() {
			t.Errorf("strategy.Context.%s is exported", f.Name)
		}
	}
}
