package strategy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/prompts"
)

// decide turns the model's reply into a Decision. An error means the reply
// cannot be used; its text is sent back to the model.
func decide(pc *Context, msg llm.Message) (*Decision, error) {
	if pc.mode == ModeJSON {
		return decideJSON(pc, msg.Content)
	}
	return decideTools(pc, msg)
}

func decideJSON(pc *Context, content string) (*Decision, error) {
	allowed := prompts.AppStatuses()
	if pc.agent.Role == fsm.Host {
		allowed = prompts.HostStatuses()
	}
	r, err := prompts.ParseReply(content, allowed)
	if err != nil {
		return nil, err
	}
	st, err := fsm.ParseState(r.Status)
	if err != nil {
		return nil, err
	}
	d := &Decision{Observation: r.Observation, Thought: r.Thought, Status: st, Plan: r.Plan, Comment: r.Comment, Result: r.Result}
	for _, a := range r.Actions {
		d.Actions = append(d.Actions, checkRole(pc, Action{Function: a.Function, Arguments: a.Arguments}))
	}
	if pc.agent.Role == fsm.Host && st == fsm.Assign && len(d.Actions) == 0 {
		return nil, fmt.Errorf("status ASSIGN needs at least one %s action naming the app and the subtask", prompts.AssignTool)
	}
	return d, nil
}

func decideTools(pc *Context, msg llm.Message) (*Decision, error) {
	var buf [4]parsedCall // most replies make a call or two
	parsed, err := parseCalls(msg.ToolCalls, buf[:0])
	if err != nil {
		return nil, err
	}
	d := &Decision{Thought: stripThink(msg.Content)}
	var ended fsm.State
	asked, approval := false, false
	for i, call := range msg.ToolCalls {
		args, invalid := parsed[i].args, parsed[i].invalid
		switch call.Name {
		case prompts.AskUserTool:
			asked = true
			d.Comment = argString(args, "question")
			if d.Comment == "" {
				d.Comment = strings.TrimSpace(call.Arguments)
			}
		case prompts.ApprovalTool:
			if pc.agent.Role == fsm.Host {
				d.Actions = append(d.Actions, checkRole(pc, Action{Function: call.Name, Arguments: args, CallID: call.ID, Invalid: invalid}))
				continue
			}
			approval = true
			if r := argString(args, "reason"); r != "" {
				d.Comment = r
			}
		case prompts.FinishTool, prompts.FailTool:
			ended = fsm.Finish
			key := "result"
			if call.Name == prompts.FailTool {
				ended, key = fsm.Fail, "reason"
			}
			d.Result = argString(args, key)
			if d.Result == "" && invalid != "" {
				d.Result = strings.TrimSpace(call.Arguments)
			}
		case llm.ComputerTool:
			acts, checks := computerActions(pc, call)
			d.Actions = append(d.Actions, acts...)
			if len(checks) > 0 {
				// A provider's safety check is put to the user, as a
				// request for approval is.
				approval = true
				d.Comment = strings.TrimSpace(d.Comment + " " + safetyReason(checks))
			}
		default:
			d.Actions = append(d.Actions, checkRole(pc, Action{Function: call.Name, Arguments: args, CallID: call.ID, Invalid: invalid}))
		}
	}
	switch {
	case asked && (ended != "" || len(d.Actions) > 0):
		return nil, fmt.Errorf("%s must be called alone: ask, read the answer, then act", prompts.AskUserTool)
	case asked:
		d.Status = fsm.Pending
	case approval && ended != "":
		return nil, fmt.Errorf("%s cannot go with %s or %s: have the actions approved and run, read their results, then end", prompts.ApprovalTool, prompts.FinishTool, prompts.FailTool)
	case ended != "":
		d.Status = ended
	case approval && len(d.Actions) == 0:
		return nil, fmt.Errorf("%s goes in the same reply as the actions it asks approval for", prompts.ApprovalTool)
	case approval:
		d.Status = fsm.Confirm
	case len(d.Actions) > 0 && pc.agent.Role == fsm.Host:
		d.Status = fsm.Assign
	case len(d.Actions) > 0:
		d.Status = fsm.Continue
	case d.Thought != "":
		// A reply in words with no tool call is the model's answer.
		d.Status, d.Result = fsm.Finish, d.Thought
	default:
		return nil, fmt.Errorf("your reply had neither text nor a tool call")
	}
	return d, nil
}

// checkRole marks actions the agent's role may not take.
func checkRole(pc *Context, a Action) Action {
	if a.Invalid != "" {
		return a
	}
	isAssign := a.Function == prompts.AssignTool
	if pc.agent.Role == fsm.Host && !isAssign {
		a.Invalid = fmt.Sprintf("the host agent cannot run %q itself; use %s to give the work to an app", a.Function, prompts.AssignTool)
	}
	if pc.agent.Role == fsm.App && isAssign {
		a.Invalid = fmt.Sprintf("an app agent cannot call %s; do the subtask with the %s tools", prompts.AssignTool, pc.agent.App)
	}
	return a
}

type parsedCall struct {
	args    map[string]any
	invalid string
}

// parseCalls reads every call's arguments, and refuses the reply if any
// were cut off (they end inside a string or before their brackets close),
// whatever the finish reason said: servers report a cut at the token limit
// as a normal stop too. Completing them would be a guess that can change a
// command (`rm -rf keep` for `rm -rf keep/tmp`), and the calls of a reply
// go together, so none of it runs and the model is asked again. The
// calls are appended to out.
func parseCalls(calls []llm.ToolCall, out []parsedCall) ([]parsedCall, error) {
	for _, call := range calls {
		args, err := prompts.ParseArguments(call.Arguments)
		if errors.Is(err, prompts.ErrIncomplete) {
			return nil, fmt.Errorf("the arguments of your %s call were cut off (%q ends before its strings and brackets close), so none of your reply was run; send the whole reply again, with shorter arguments if they were long",
				call.Name, cutTail(strings.TrimSpace(call.Arguments), 80))
		}
		out = append(out, parsedCall{args, invalidArguments(call.Arguments, err)})
	}
	return out, nil
}

// cutTail keeps the last n bytes of s, where a cut shows.
func cutTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// invalidArguments says why arguments that prompts.ParseArguments (the
// parser the step-level evaluator shares) refused cannot be used, or "".
func invalidArguments(raw string, err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf("the arguments are not a JSON object (%v): %q; send the arguments as one JSON object that matches the tool's input schema", err, cut(strings.TrimSpace(raw), 200))
}

func argString(args map[string]any, key string) string {
	v, ok := args[key]
	if !ok {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// stripThink drops <think>…</think> blocks, and an unclosed one with all
// after it, in one pass (each block is copied past once, not the whole
// text once per block).
func stripThink(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "<think>")
		if i < 0 && b.Len() == 0 {
			return strings.TrimSpace(s) // no block (the usual reply): no copy
		}
		if i < 0 {
			b.WriteString(s)
			return strings.TrimSpace(b.String())
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i:], "</think>")
		if j < 0 {
			return strings.TrimSpace(b.String())
		}
		s = s[i+j+len("</think>"):]
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
