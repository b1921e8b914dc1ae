package evals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// CheckResult is how one check went.
type CheckResult struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail,omitempty"`
	// Verdict is a judge's structured verdict.
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Verdict is what a judge model answered.
type Verdict struct {
	Pass   bool    `json:"pass"`
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// Call is a tool call an app agent made.
type Call struct {
	Tool      string         `json:"tool"`
	Namespace string         `json:"namespace,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

func (c Call) String() string {
	b, _ := json.Marshal(c.Arguments)
	name := c.Tool
	if c.Namespace != "" {
		name = c.Namespace + "." + name
	}
	return name + string(b)
}

// checkEnv is what checks may use: the device, the trial's outcome and
// calls, a way to open judge models, and the trajectory to record into.
type checkEnv struct {
	device dispatcher.Dispatcher
	// live is a live device's client: its state checks run in shells of
	// their own, and each check may take as long as the trial's timeout
	// (when set), instead of the agents' command_timeout and the shell's
	// default.
	live      dispatcher.Executor
	timeout   time.Duration
	answer    string
	status    string
	task      string
	calls     []Call
	openJudge func(spec string) (llm.Model, error)
	judge     string // the suite's default judge
	record    func(trajectory.Event)
	// graph is how each node of a constellation ended (nil when the
	// trial ran none).
	graph []ConstellationNode
}

// errCheckLimit ends a check that reached the case's time limit.
var errCheckLimit = errors.New("the case's time limit was reached")

func (env *checkEnv) run(ctx context.Context, i int, c Check) (r CheckResult) {
	r = CheckResult{Name: c.Label(i), Kind: c.Kind()}
	if env.timeout > 0 {
		deadline := time.Now().Add(env.timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, errCheckLimit)
		defer cancel()
		defer func() {
			// (By the clock: the device's own cut can come a moment
			// before ctx's timer has fired.)
			if !r.Pass && !time.Now().Before(deadline) {
				r.Detail = fmt.Sprintf("cut at the case's time limit (%s): %s", env.timeout, r.Detail)
			}
		}()
	}
	switch {
	case c.State != nil:
		r.Pass, r.Detail = env.state(ctx, c.State)
	case c.ToolCalls != nil:
		r.Pass, r.Detail = matchCalls(c.ToolCalls, env.calls)
	case c.Answer != nil:
		r.Pass, r.Detail = matchAnswer(c.Answer, env.answer)
	case c.Node != nil:
		r.Pass, r.Detail = matchNode(c.Node, env.graph)
	case c.Judge != nil:
		r.Verdict, r.Detail = env.askJudge(ctx, c.Judge)
		if r.Verdict != nil {
			r.Pass = r.Verdict.Pass
			if c.Judge.MinScore > 0 {
				r.Pass = r.Verdict.Score >= c.Judge.MinScore
			}
		}
	}
	return r
}

// StateCommand is the command a state check with run or tool runs.
func StateCommand(s *StateCheck, answer string) command.Command {
	if s.Run != "" {
		return command.Command{ToolName: "execute_command", Namespace: "shell", ToolType: command.Action,
			Parameters: map[string]any{"command": s.Run, "env": map[string]any{"SAUCER_ANSWER": answer}}}
	}
	return command.Command{ToolName: s.Tool, Namespace: s.Namespace, ToolType: command.DataCollection, Parameters: s.Arguments}
}

// shellCommand runs a command line on the shell tool: with args ($1, ...),
// in a shell of its own when fresh, cut at timeout when it is set.
func shellCommand(line string, args []string, timeout time.Duration, fresh bool) command.Command {
	p := map[string]any{"command": line}
	if len(args) > 0 {
		p["args"] = args
	}
	if fresh {
		p["fresh"] = true
	}
	if timeout > 0 {
		// The trial's device lets a command take this long
		// (tools.shell.max_timeout is raised to the case's limit).
		p["timeout"] = timeout.Seconds()
	}
	return command.Command{ToolName: "execute_command", Namespace: "shell", ToolType: command.Action, Parameters: p}
}

// left is the time a check's command may take: what is left of the
// case's time limit, or 0 (the shell's default) without one.
func (env *checkEnv) left(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok || env.timeout <= 0 {
		return 0
	}
	return until(dl)
}

// until is the time left until dl, rounded up to the millisecond (as
// timeouts are told; never ending before dl), at least one.
func until(dl time.Time) time.Duration {
	d := time.Until(dl)
	if r := d.Truncate(time.Millisecond); r < d {
		d = r + time.Millisecond
	}
	return max(d, time.Millisecond)
}

// scriptCommand runs a script in a shell of its own with arguments, as
// AgentBench does: bash -c CODE -- ARGS, or python3 -c CODE ARGS (the shell
// execs python3, so no wrapper shell stays to be seen by ps).
func scriptCommand(s Script, args []string, timeout time.Duration) command.Command {
	if s.Language == LangPython {
		return shellCommand(`exec python3 -c "$@"`, append([]string{s.Code}, args...), timeout, true)
	}
	return shellCommand(s.Code, args, timeout, true)
}

// dispatch runs cmd on the device. On a live device with a time limit,
// the command may take what is left of it (ctx's deadline).
func (env *checkEnv) dispatch(ctx context.Context, cmd command.Command) command.Result {
	start := time.Now()
	device := env.device
	if dl, ok := ctx.Deadline(); ok && env.live != nil && env.timeout > 0 {
		device = dispatcher.NewLocal(env.live, dispatcher.LocalOptions{Timeout: until(dl)})
	}
	res := device.Execute(ctx, []command.Command{cmd})
	env.record(trajectory.Event{Type: trajectory.TypeDispatch, Agent: CheckAgent, Phase: "CHECK", Commands: []command.Command{cmd},
		Results: res, DurationMS: trajectory.MS(time.Since(start))})
	if len(res) != 1 {
		return command.Result{Status: command.Failure, Error: "no result"}
	}
	return res[0]
}

// pipeline runs AgentBench's check scripts in turn: the arguments start as
// the answer and grow by each script's output; all must exit 0.
func (env *checkEnv) pipeline(ctx context.Context, steps []Script) (bool, string) {
	args := []string{env.answer}
	for i, st := range steps {
		res := env.dispatch(ctx, scriptCommand(st, args, env.left(ctx)))
		if !res.OK() {
			return false, fmt.Sprintf("script %d of %d could not run: %s", i+1, len(steps), res.Error)
		}
		var out struct {
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal(res.Result, &out); err != nil {
			return false, fmt.Sprintf("script %d of %d: the shell's result is not readable: %v", i+1, len(steps), err)
		}
		if out.ExitCode != 0 {
			return false, fmt.Sprintf("script %d of %d exited %d with arguments %q; stdout %q, stderr %q", i+1, len(steps), out.ExitCode,
				cutArgs(args), cutText(strings.TrimSpace(out.Stdout), 200), cutText(strings.TrimSpace(out.Stderr), 300))
		}
		args = append(args, out.Stdout)
	}
	return true, ""
}

func cutArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = cutText(a, 100)
	}
	return out
}

func (env *checkEnv) state(ctx context.Context, s *StateCheck) (bool, string) {
	if len(s.Pipeline) > 0 {
		return env.pipeline(ctx, s.Pipeline)
	}
	cmd := StateCommand(s, env.answer)
	if env.live != nil && s.Run != "" {
		// Beside the agent's shell, not in it; as long as the trial may last.
		cmd = shellCommand(s.Run, nil, env.left(ctx), true)
		cmd.Parameters["env"] = map[string]any{"SAUCER_ANSWER": env.answer}
	}
	res := []command.Result{env.dispatch(ctx, cmd)}
	if !res[0].OK() {
		return false, fmt.Sprintf("%s failed: %s: %s", cmd, res[0].Status, res[0].Error)
	}
	text := strategy.ResultText(res[0], 0)
	exit, stderr := -1, ""
	if s.Run != "" {
		var out struct {
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal(res[0].Result, &out); err == nil {
			text, exit, stderr = out.Stdout, out.ExitCode, out.Stderr
		}
	}
	// A command that failed says why beside what it printed.
	why := ""
	if exit > 0 && strings.TrimSpace(stderr) != "" {
		why = fmt.Sprintf(" (exit %d: %s)", exit, cutText(strings.TrimSpace(stderr), 300))
	}
	wantExit := s.ExitCode
	if wantExit == nil && s.Output == nil && s.Contains == "" && s.Regex == "" {
		zero := 0
		wantExit = &zero
	}
	got := strings.TrimSpace(text)
	switch {
	case wantExit != nil && exit != *wantExit:
		return false, fmt.Sprintf("exit code %d, want %d; output %q", exit, *wantExit, cutText(got, 300))
	case s.Output != nil && got != strings.TrimSpace(*s.Output):
		return false, fmt.Sprintf("output %q, want %q%s", cutText(got, 300), strings.TrimSpace(*s.Output), why)
	case s.Contains != "" && !strings.Contains(got, s.Contains):
		return false, fmt.Sprintf("output %q lacks %q%s", cutText(got, 300), s.Contains, why)
	case s.Regex != "" && !regexp.MustCompile(s.Regex).MatchString(got):
		return false, fmt.Sprintf("output %q does not match /%s/%s", cutText(got, 300), s.Regex, why)
	}
	return true, ""
}

// matchCalls compares the calls made with the expected ones.
func matchCalls(c *ToolCallsCheck, made []Call) (bool, string) {
	exp := c.Calls
	switch c.Match {
	case MatchStrict:
		for i := 0; i < len(exp) || i < len(made); i++ {
			switch {
			case i >= len(made):
				return false, fmt.Sprintf("call %d: expected %s, but only %d calls were made", i+1, Call(exp[i]), len(made))
			case i >= len(exp):
				return false, fmt.Sprintf("call %d: %s was not expected (%d calls expected)", i+1, made[i], len(exp))
			case !callMatches(exp[i], made[i]):
				return false, fmt.Sprintf("call %d: expected %s, made %s", i+1, Call(exp[i]), made[i])
			}
		}
		return true, ""
	case MatchUnordered, MatchSuperset:
		used := make([]bool, len(made))
		for _, e := range exp {
			found := false
			for j, m := range made {
				if !used[j] && callMatches(e, m) {
					used[j], found = true, true
					break
				}
			}
			if !found {
				return false, fmt.Sprintf("expected %s, which was not made (made: %s)", Call(e), callList(made))
			}
		}
		if c.Match == MatchUnordered {
			for j, u := range used {
				if !u {
					return false, fmt.Sprintf("%s was not expected", made[j])
				}
			}
		}
		return true, ""
	default: // subset: every call made is expected
		used := make([]bool, len(exp))
		for _, m := range made {
			found := false
			for j, e := range exp {
				if !used[j] && callMatches(e, m) {
					used[j], found = true, true
					break
				}
			}
			if !found {
				return false, fmt.Sprintf("%s was made but is not among the expected calls", m)
			}
		}
		return true, ""
	}
}

func callList(calls []Call) string {
	if len(calls) == 0 {
		return "none"
	}
	s := make([]string, len(calls))
	for i, c := range calls {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

func callMatches(e ExpectedCall, m Call) bool {
	if e.Tool != m.Tool || (e.Namespace != "" && e.Namespace != m.Namespace) {
		return false
	}
	for k, want := range e.Arguments {
		got, ok := m.Arguments[k]
		if !ok || !valueMatches(want, got) {
			return false
		}
	}
	return true
}

// valueMatches compares an expected argument with the one given: numbers
// by value, {regex: ...} by regular expression, the rest as JSON.
func valueMatches(want, got any) bool {
	if m, ok := want.(map[string]any); ok && len(m) == 1 {
		if re, ok := m["regex"].(string); ok {
			s, isStr := got.(string)
			if !isStr {
				b, _ := json.Marshal(got)
				s = string(b)
			}
			matched, err := regexp.MatchString(re, s)
			return err == nil && matched
		}
	}
	if wf, ok := number(want); ok {
		gf, ok := number(got)
		return ok && math.Abs(wf-gf) <= 1e-9*math.Max(1, math.Abs(wf))
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	return string(a) == string(b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

var numberRE = regexp.MustCompile(`-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?`)

func matchAnswer(a *AnswerCheck, answer string) (bool, string) {
	got := strings.TrimSpace(answer)
	switch {
	case a.Exact != nil:
		if got != strings.TrimSpace(*a.Exact) {
			return false, fmt.Sprintf("answer %q, want %q", cutText(got, 300), strings.TrimSpace(*a.Exact))
		}
	case a.Contains != "":
		if !strings.Contains(got, a.Contains) {
			return false, fmt.Sprintf("answer %q lacks %q", cutText(got, 300), a.Contains)
		}
	case a.Regex != "":
		if !regexp.MustCompile(a.Regex).MatchString(got) {
			return false, fmt.Sprintf("answer %q does not match /%s/", cutText(got, 300), a.Regex)
		}
	case a.Number != nil:
		nums := numberRE.FindAllString(got, -1)
		if len(nums) == 0 {
			return false, fmt.Sprintf("answer %q has no number, want %g", cutText(got, 300), *a.Number)
		}
		v, _ := strconv.ParseFloat(nums[len(nums)-1], 64)
		if math.Abs(v-*a.Number) > a.Tolerance {
			return false, fmt.Sprintf("answer's number %g, want %g ± %g", v, *a.Number, a.Tolerance)
		}
	}
	return true, ""
}

const judgeSystem = `You grade the work of an AI agent that operated a computer for a user.
Read the task, the grading rubric, the agent's actions and its final answer.
Reply with one JSON object and nothing else:
{"pass": true or false, "score": a number from 0 to 1, "reason": "one or two sentences"}`

func (env *checkEnv) askJudge(ctx context.Context, j *JudgeCheck) (*Verdict, string) {
	spec := j.Model
	if spec == "" {
		spec = env.judge
	}
	m, err := env.openJudge(spec)
	if err != nil {
		return nil, fmt.Sprintf("judge %s: %v", spec, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n\nRubric: %s\n\nActions:\n", env.task, j.Rubric)
	for i, c := range env.calls {
		fmt.Fprintf(&b, "%d. %s\n", i+1, cutText(c.String(), 500))
	}
	if len(env.calls) == 0 {
		b.WriteString("(none)\n")
	}
	fmt.Fprintf(&b, "\nThe agent ended with status %s and answered:\n%s\n", env.status, env.answer)
	req := &llm.Request{Messages: []llm.Message{llm.System(judgeSystem), llm.User(b.String())}, JSON: true}
	start := time.Now()
	resp, err := m.Complete(ctx, req)
	call := &trajectory.Call{Request: *req, Response: resp, LatencyMS: trajectory.MS(time.Since(start))}
	if err != nil {
		call.Error = &trajectory.CallError{Kind: "unknown", Message: err.Error()}
	}
	env.record(trajectory.Event{Type: trajectory.TypeModelCall, Agent: JudgeAgent, Phase: "CHECK", Call: call})
	if err != nil {
		return nil, fmt.Sprintf("judge %s: %v", spec, err)
	}
	v, err := parseVerdict(resp.Message.Content)
	if err != nil {
		return nil, fmt.Sprintf("judge %s: %v; it replied %q", spec, err, cutText(resp.Message.Content, 300))
	}
	return v, v.Reason
}

func parseVerdict(content string) (*Verdict, error) {
	fixed, err := prompts.RepairJSON(content)
	if err != nil {
		return nil, fmt.Errorf("the verdict is not JSON: %w", err)
	}
	var raw struct {
		Pass   *bool    `json:"pass"`
		Score  *float64 `json:"score"`
		Reason string   `json:"reason"`
	}
	if err := json.Unmarshal([]byte(fixed), &raw); err != nil || raw.Pass == nil {
		return nil, fmt.Errorf("the verdict needs {\"pass\": bool, \"score\": number, \"reason\": text}")
	}
	v := &Verdict{Pass: *raw.Pass, Reason: raw.Reason}
	if raw.Score != nil {
		v.Score = *raw.Score
	} else if v.Pass {
		v.Score = 1
	}
	return v, nil
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
