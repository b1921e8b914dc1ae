package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/clock"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/prompts"
)

// Scripted models for suites and eval cases: the constellation agent
// playing a fixed plan, and a device's host and app agents running each
// node's command. Each call takes a fixed latency on the clock the
// context carries, and answers from what the request says, as a model
// would, so that any order of nodes and any batching of their ends gets
// the right answers.

// latency waits d on ctx's clock.
func latency(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := clock.From(ctx).NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func call(name string, args any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{ID: fmt.Sprintf("call_%s_%d", name, callSeq.Add(1)), Name: name, Arguments: string(b)}
}

var callSeq atomic.Int64

func reply(calls ...llm.ToolCall) *llm.Response {
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}, FinishReason: "tool_calls", Model: "scripted"}
}

// PlanNode is a node of a scripted plan (evals.PlanNode, the form a
// constellation eval case writes it in): its command (Run) is what the
// scripted device agents run, {{dep:ID}} replaced by node ID's result; a
// node that fails beyond its retries is moved to Fallback with
// FallbackRun, when given.
type PlanNode = evals.PlanNode

// nodeTask is a node's task text: its command on a RUN line.
func nodeTask(id, run string) string { return "Step " + id + " of the request.\nRUN: " + run }

// ScriptedAgents plays a device's host and app agents: the task's line
// "RUN: COMMAND" is run with the shell app ({{dep:ID}} replaced by the
// result of node ID, read from the task's text), and its stdout is the
// answer; a non-zero exit fails the task.
type ScriptedAgents struct {
	Latency time.Duration
	calls   atomic.Int64
}

// Stream answers as Complete does.
func (m *ScriptedAgents) Stream(ctx context.Context, req *llm.Request, _ func(llm.Chunk)) (*llm.Response, error) {
	return m.Complete(ctx, req)
}

// unresolved finds a placeholder no dependency's result replaced.
var unresolved = regexp.MustCompile(`\{\{dep:[^}]*\}\}`)

var depLine = regexp.MustCompile(`(?m)^- (\S+) \(on [^)]*\): (.*?)(?: \[files: [^]]*\])?$`)

// Complete answers one request.
func (m *ScriptedAgents) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.calls.Add(1)
	if err := latency(ctx, m.Latency); err != nil {
		return nil, err
	}
	text, lastTool := "", ""
	for _, msg := range req.Messages {
		text += msg.Content + "\n"
		if msg.Role == llm.RoleTool {
			lastTool = msg.Content
		}
	}
	host := false
	for _, t := range req.Tools {
		host = host || t.Name == prompts.AssignTool
	}
	run := ""
	if i := strings.Index(text, "RUN: "); i >= 0 {
		run = strings.SplitN(text[i+5:], "\n", 2)[0]
	}
	if app, file, find, ok := desktopStep(run); ok && !host {
		return desktopReply(req, lastTool, app, file, find)
	}
	switch {
	case host && lastTool == "":
		if _, _, _, ok := desktopStep(run); ok {
			return reply(call(prompts.AssignTool, prompts.AssignArgs{App: "desktop", Subtask: "Open the file of the request's RUN line and read the value it names."})), nil
		}
		return reply(call(prompts.AssignTool, prompts.AssignArgs{App: "shell", Subtask: "Run the command of the request's RUN line."})), nil
	case host:
		if i, j := strings.Index(lastTool, "OUT<<"), strings.LastIndex(lastTool, ">>"); i >= 0 && j > i {
			return reply(call(prompts.FinishTool, map[string]string{"result": lastTool[i+5 : j]})), nil
		}
		return reply(call(prompts.FailTool, map[string]string{"reason": lastTool})), nil
	case lastTool == "":
		i := strings.Index(text, "RUN: ")
		if i < 0 {
			return reply(call(prompts.FailTool, map[string]string{"reason": "the task has no RUN line"})), nil
		}
		cmd := strings.SplitN(text[i+5:], "\n", 2)[0]
		for _, d := range depLine.FindAllStringSubmatch(text, -1) {
			cmd = strings.ReplaceAll(cmd, "{{dep:"+d[1]+"}}", d[2])
		}
		if m := unresolved.FindString(cmd); m != "" {
			// Never run a command with a placeholder standing for a
			// result the task was not given.
			return reply(call(prompts.FailTool, map[string]string{"reason": "the command needs " + m + ", but this task was not given that node's result"})), nil
		}
		return reply(call("execute_command", map[string]any{"command": cmd})), nil
	}
	var out struct {
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(lastTool), &out); err != nil || out.ExitCode != 0 {
		return reply(call(prompts.FailTool, map[string]string{"reason": fmt.Sprintf("exit %d: %s %s", out.ExitCode, out.Stderr, lastTool)})), nil
	}
	return reply(call(prompts.FinishTool, map[string]string{"result": "OUT<<" + strings.TrimSpace(out.Stdout) + ">>"})), nil
}

// ScriptedPlanner plays the constellation agent for a fixed plan: it adds
// the plan's graph at its first step and declares it all the request
// needs (finish_when_done); when a node failed it moves it to its
// fallback device and revives what was cancelled; asked when every node
// has completed, it finishes.
type ScriptedPlanner struct {
	Nodes   []PlanNode
	Latency time.Duration
	calls   atomic.Int64
}

// Stream answers as Complete does.
func (m *ScriptedPlanner) Stream(ctx context.Context, req *llm.Request, _ func(llm.Chunk)) (*llm.Response, error) {
	return m.Complete(ctx, req)
}

var nodeLine = regexp.MustCompile(`(?m)^- (\S+) \[(\w+)\] on (\S+)`)

// Complete answers one request.
func (m *ScriptedPlanner) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.calls.Add(1)
	if err := latency(ctx, m.Latency); err != nil {
		return nil, err
	}
	last := req.Messages[len(req.Messages)-1].Content
	i := strings.LastIndex(last, "## Graph")
	if i < 0 {
		return nil, errors.New("scripted planner: the status turn has no \"## Graph\" section (a custom constellation_status template must keep it)")
	}
	graph := last[i:]
	status := map[string]string{}
	for _, l := range nodeLine.FindAllStringSubmatch(graph, -1) {
		status[l[1]] = l[2]
	}
	if len(status) == 0 {
		var calls []llm.ToolCall
		for _, n := range m.Nodes {
			calls = append(calls, call(ToolAddNode, map[string]any{"id": n.ID, "device": n.Device, "task": nodeTask(n.ID, n.Run), "apps": []string{"shell"},
				"max_retries": n.Retries}))
		}
		for _, n := range m.Nodes {
			for _, d := range n.After {
				calls = append(calls, call(ToolAddEdge, map[string]string{"from": d, "to": n.ID}))
			}
		}
		// The plan is all the request needs: the constellation ends when
		// its last node completes, without a step that could only finish.
		calls = append(calls, call(ToolFinishWhenDone, map[string]any{}))
		return reply(calls...), nil
	}
	var calls []llm.ToolCall
	done := true
	for _, n := range m.Nodes {
		switch status[n.ID] {
		case "failed":
			if n.Fallback != "" {
				calls = append(calls, call(ToolUpdateNode, map[string]any{"id": n.ID, "device": n.Fallback, "task": nodeTask(n.ID, n.FallbackRun)}))
			}
		case "cancelled":
			calls = append(calls, call(ToolUpdateNode, map[string]any{"id": n.ID}))
		}
		done = done && status[n.ID] == "completed"
	}
	if len(calls) > 0 {
		return reply(calls...), nil
	}
	if done {
		return reply(call(prompts.FinishTool, map[string]string{"result": "done"})), nil
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "The graph needs no change."}, FinishReason: "stop"}, nil
}

// desktopStep reads a desktop node's run line, "desktop APP FILE find
// REGEX": open FILE in APP, observe its window and report the first group
// REGEX matches in what the window shows.
func desktopStep(run string) (app, file string, find *regexp.Regexp, ok bool) {
	rest, ok := strings.CutPrefix(run, "desktop ")
	if !ok {
		return "", "", nil, false
	}
	f := strings.SplitN(rest, " ", 4)
	if len(f) != 4 || f[2] != "find" {
		return "", "", nil, false
	}
	re, err := regexp.Compile(f[3])
	if err != nil {
		return "", "", nil, false
	}
	return f[0], f[1], re, true
}

// desktopReply is the desktop app agent's next call: launch the app on the
// file, then observe until the value shows (up to five times), then
// report it.
func desktopReply(req *llm.Request, lastTool, app, file string, find *regexp.Regexp) (*llm.Response, error) {
	results := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleTool {
			results++
		}
	}
	switch {
	case results == 0:
		return reply(call("launch_app", map[string]any{"command": []string{app, file}})), nil
	case results > 1:
		if m := find.FindStringSubmatch(lastTool); len(m) > 1 {
			return reply(call(prompts.FinishTool, map[string]string{"result": "OUT<<" + m[1] + ">>"})), nil
		}
		if results > 6 {
			return reply(call(prompts.FailTool, map[string]string{"reason": fmt.Sprintf("%s does not show %s: %s", app, find, lastTool)})), nil
		}
	}
	// Only the text controls: a whole window's list is long, and the
	// history keeps a long result's head only.
	return reply(call("observe", map[string]any{"role": "text", "screenshot": false})), nil
}
