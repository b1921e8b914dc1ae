package strategy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/strategy/internal/computeruse"
)

// Native computer use (Limits.ComputerUse). A desktop app's agent whose
// model has a native computer-use tool (llm.SupportsComputer) and whose
// tools include the desktop's pixel tools offers that tool instead of
// the pixel tools (the tools by control id stay beside it):
//
//   - the first step's data collection takes a screenshot of the whole
//     screen, shrunk to fit computeruse.DefaultMaxWidth x DefaultMaxHeight;
//     its size and scale are the display the model is told (Display);
//   - each request declares the tool with that size (llm.Request.Computer);
//   - each of the model's computer calls becomes commands of the app's
//     desktop tools (computeruse.Steps), which run through the dispatcher
//     like any other: approvals, the recording, replay and evals apply;
//   - the call's result goes back to the model as a tool turn with the
//     last screenshot, the one each call ends with.
//
// A call that carries a provider's safety checks (OpenAI's
// pending_safety_checks) is put to the user like request_approval; the
// checks are acknowledged to the provider only when the user approved.

// offersComputer reports whether the agent may offer its model the
// native tool: the config allows it, the model has it, and the app has
// the pixel tools.
func offersComputer(pc *Context) bool {
	if !pc.limits.ComputerUse || pc.agent.Role != fsm.App || pc.mode != ModeTools || !llm.SupportsComputer(pc.model) {
		return false
	}
	for _, name := range computeruse.PixelTools {
		if !slices.ContainsFunc(pc.tools, func(t command.ToolInfo) bool { return t.Name == name && t.Namespace == pc.agent.App }) {
			return false
		}
	}
	return true
}

// observeScreen takes the first screenshot of the screen for computer
// use, once, and keeps its display; the picture goes into the request.
func observeScreen(ctx context.Context, pc *Context, ns string) {
	if pc.computerTried || !offersComputer(pc) {
		return
	}
	pc.computerTried = true
	c := command.Command{ToolName: computeruse.ToolScreenshot, Namespace: ns, ToolType: command.DataCollection,
		Parameters: computeruse.FirstScreenshotArgs(0, 0)}
	rs := pc.dispatcher.Execute(ctx, []command.Command{c})
	if len(rs) != 1 || !rs[0].OK() {
		why := "no result"
		if len(rs) == 1 {
			why = rs[0].Error
		}
		pc.notes = append(pc.notes, "The screen could not be captured for the computer tool ("+why+"); use the desktop's tools by control id.")
		return
	}
	d, err := computeruse.ParseShot(resultText(rs[0]))
	if err != nil {
		pc.errs = append(pc.errs, fmt.Errorf("computer use: %w", err))
		return
	}
	pc.computer = &d
	pc.Attach(ResultImages(rs[0])...)
}

// resultText is the text entries of a content result.
func resultText(r command.Result) string {
	var entries []struct{ Type, Text string }
	var b strings.Builder
	if json.Unmarshal(r.Result, &entries) == nil {
		for _, e := range entries {
			if e.Type == "text" {
				b.WriteString(e.Text)
			}
		}
	}
	if b.Len() == 0 {
		return ResultText(r, 0)
	}
	return b.String()
}

// computerActions are the actions of a native computer call, and its
// safety checks.
func computerActions(pc *Context, call llm.ToolCall) ([]Action, []llm.SafetyCheck) {
	if pc.computer == nil {
		return []Action{{Function: call.Name, CallID: call.ID, Invalid: "the computer tool is not offered here: use the app's tools"}}, nil
	}
	cc, err := llm.ParseComputerCall(call.Arguments)
	if err != nil {
		return []Action{{Function: call.Name, CallID: call.ID, Invalid: err.Error()}}, nil
	}
	var out []Action
	for _, s := range computeruse.Steps(cc, *pc.computer) {
		out = append(out, Action{Function: s.Tool, Arguments: s.Args, CallID: call.ID, Invalid: s.Invalid})
	}
	return out, cc.SafetyChecks
}

// safetyReason is what the user is asked about a call's safety checks.
func safetyReason(checks []llm.SafetyCheck) string {
	var b strings.Builder
	b.WriteString("The model's provider flagged this computer action:")
	for _, c := range checks {
		fmt.Fprintf(&b, " [%s] %s", c.Code, c.Message)
	}
	return b.String()
}

// waitHere answers a computer wait action: the agent waits, the device is
// not asked.
func waitHere(ctx context.Context, a Action) command.Result {
	s, _ := a.Arguments["seconds"].(float64)
	d := time.Duration(min(max(s, 0), computeruse.MaxWait) * float64(time.Second))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return command.Failed("", "the wait was cut short: "+context.Cause(ctx).Error())
	case <-t.C:
	}
	return command.Succeeded("", fmt.Sprintf("waited %gs", d.Seconds()))
}

// computerCalls are the ids of a step's native computer calls.
func computerCalls(st memory.Step) map[string]llm.ToolCall {
	var out map[string]llm.ToolCall
	for _, c := range st.Reply.ToolCalls {
		if c.Name == llm.ComputerTool {
			if out == nil {
				out = map[string]llm.ToolCall{}
			}
			out[c.ID] = c
		}
	}
	return out
}

// computerResult is the tool turn that answers a computer call: each of
// its commands' results in a line, the screenshot it ended with (line 0
// or below: the forms that show results), and the safety checks the user
// acknowledged by approving the step.
func computerResult(pc *Context, st memory.Step, call llm.ToolCall, line int, text func(int) string) llm.Message {
	var b strings.Builder
	var img []llm.Image
	for i, id := range st.CallIDs {
		if id != call.ID || i >= len(st.Results) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		tool := ""
		if i < len(st.Commands) {
			tool = st.Commands[i].ToolName
		}
		fmt.Fprintf(&b, "%s: %s", tool, text(i))
		if tool == computeruse.ToolScreenshot && line <= 0 {
			img = ResultImages(st.Results[i])
		}
	}
	if b.Len() == 0 {
		b.WriteString("not run")
	}
	msg := llm.ToolResult(call, b.String())
	msg.Images = img
	if cc, err := llm.ParseComputerCall(call.Arguments); err == nil && len(cc.SafetyChecks) > 0 && !declinedStep(st) && ranAny(st, call.ID) {
		msg.Acknowledged = cc.SafetyChecks
	}
	return msg
}

func declinedStep(st memory.Step) bool {
	return slices.ContainsFunc(st.Results, func(r command.Result) bool { return strings.Contains(r.Error, declined) })
}

func ranAny(st memory.Step, id string) bool {
	for i, c := range st.CallIDs {
		if c == id && i < len(st.Results) && st.Results[i].Status != command.Skipped {
			return true
		}
	}
	return false
}
