package evals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// StepOptions configure step-level evaluation.
type StepOptions struct {
	// Mode is how the model under test acts (tools or json); empty means
	// the recorded session's mode. The recorded prompts are in that mode.
	Mode strategy.Mode
	// Answer is what the final answer must match: the model's finish_task
	// result at the last step where the recorded agent finished. Nil
	// means the recorded result, exactly (ignoring surrounding space).
	Answer *AnswerCheck
}

// StepScore is the model's prediction at one recorded step.
type StepScore struct {
	Agent     string   `json:"agent"`
	Step      int      `json:"step"`
	Gold      []Action `json:"gold"`
	Predicted []Action `json:"predicted"`
	// ToolOK: the same tools in the same order. ArgScore: the share of the
	// gold arguments matched (tolerantly); ExactArgs: all of them equal.
	ToolOK    bool    `json:"tool_ok"`
	ArgScore  float64 `json:"arg_score"`
	ExactArgs bool    `json:"exact_args"`
	Success   bool    `json:"success"`
	Error     string  `json:"error,omitempty"`
	// GoldResult is the recorded finish_task result at a step where the
	// recorded agent finished; Result is the model's, when it finished.
	GoldResult string `json:"gold_result,omitempty"`
	Result     string `json:"result,omitempty"`
}

// AnswerScore is how the model's final answer compares with the gold one.
type AnswerScore struct {
	Step      int    `json:"step"`
	Agent     string `json:"agent"`
	Gold      string `json:"gold"`
	Predicted string `json:"predicted"`
	Pass      bool   `json:"pass"`
	Detail    string `json:"detail,omitempty"`
}

// Action is a tool call (or finish_task / fail_task) in step evaluation.
type Action struct {
	Function  string         `json:"function"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// StepReport is a step-level evaluation of one recording.
type StepReport struct {
	Steps []StepScore `json:"steps"`
	// ToolAccuracy and ArgAccuracy average the steps' ToolOK and ArgScore;
	// StepSuccessRate is the share of steps right; TaskSuccess says every
	// step was.
	ToolAccuracy    float64 `json:"tool_accuracy"`
	ArgAccuracy     float64 `json:"arg_accuracy"`
	StepSuccessRate float64 `json:"step_success_rate"`
	// FinalAnswer scores the answer at the last step where the recorded
	// agent finished (nil when it never did). TaskSuccess needs it to pass.
	FinalAnswer *AnswerScore `json:"final_answer,omitempty"`
	TaskSuccess bool         `json:"task_success"`
}

// EvaluateSteps scores a model step by step on a gold recording, as
// Mind2Web does: at each app-agent step it sends the model exactly the
// request the recorded agent sent (the recorded history and the step's
// observation, with the same tools) and compares the action it predicts
// with the recorded one. Steps are independent: a wrong prediction does not
// change the history the next step sees.
func EvaluateSteps(ctx context.Context, t *trajectory.Trajectory, model llm.Model, opts StepOptions) (*StepReport, error) {
	mode := opts.Mode
	if mode == "" {
		mode = strategy.Mode(t.Session().Mode)
	}
	last := map[[2]any]*trajectory.Call{} // the step's last good model call, by agent and step
	rep := &StepReport{}
	for _, e := range t.Events {
		switch e.Type {
		case trajectory.TypeModelCall:
			if e.Call.Error == nil && e.Call.Response != nil {
				last[[2]any{e.Agent, e.Step}] = e.Call
			}
		case trajectory.TypeStep:
			if e.Role != string(fsm.App) && !strings.HasPrefix(e.Agent, "app:") || e.Decision == nil {
				continue
			}
			call := last[[2]any{e.Agent, e.Step}]
			if call == nil {
				continue
			}
			s := StepScore{Agent: e.Agent, Step: e.Step, Gold: goldActions(e.Decision)}
			if e.Decision.Status == string(fsm.Finish) {
				s.GoldResult = e.Decision.Result
			}
			resp, err := model.Complete(ctx, &call.Request)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				s.Error = err.Error()
			} else if s.Predicted, s.Result, err = predicted(mode, resp.Message); err != nil {
				s.Error = err.Error()
			}
			scoreStep(&s)
			rep.Steps = append(rep.Steps, s)
		}
	}
	if len(rep.Steps) == 0 {
		return nil, fmt.Errorf("the recording %s has no app-agent steps with a recorded model call", t.Dir)
	}
	rep.TaskSuccess = true
	for _, s := range rep.Steps {
		if s.ToolOK {
			rep.ToolAccuracy++
		}
		rep.ArgAccuracy += s.ArgScore
		if s.Success {
			rep.StepSuccessRate++
		} else {
			rep.TaskSuccess = false
		}
	}
	n := float64(len(rep.Steps))
	rep.ToolAccuracy, rep.ArgAccuracy, rep.StepSuccessRate = rep.ToolAccuracy/n, rep.ArgAccuracy/n, rep.StepSuccessRate/n
	rep.FinalAnswer = finalAnswer(rep.Steps, opts.Answer)
	if rep.FinalAnswer != nil && !rep.FinalAnswer.Pass {
		rep.TaskSuccess = false
	}
	return rep, nil
}

// finalAnswer scores the model's result at the last step where the
// recorded agent finished.
func finalAnswer(steps []StepScore, check *AnswerCheck) *AnswerScore {
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if !slices.ContainsFunc(s.Gold, func(a Action) bool { return a.Function == prompts.FinishTool }) {
			continue
		}
		a := &AnswerScore{Step: s.Step, Agent: s.Agent, Gold: s.GoldResult, Predicted: s.Result}
		if check == nil {
			check = &AnswerCheck{Exact: &s.GoldResult}
		} else {
			a.Gold = check.String()
		}
		if !slices.ContainsFunc(s.Predicted, func(a Action) bool { return a.Function == prompts.FinishTool }) {
			a.Detail = "the model did not finish where the recorded agent did"
			return a
		}
		a.Pass, a.Detail = matchAnswer(check, s.Result)
		return a
	}
	return nil
}

// String says what the check expects.
func (a *AnswerCheck) String() string {
	switch {
	case a.Exact != nil:
		return *a.Exact
	case a.Contains != "":
		return "contains " + a.Contains
	case a.Regex != "":
		return "/" + a.Regex + "/"
	case a.Number != nil:
		return fmt.Sprintf("%g ± %g", *a.Number, a.Tolerance)
	}
	return ""
}

func goldActions(d *trajectory.Decision) []Action {
	var out []Action
	for _, a := range d.Actions {
		out = append(out, Action{Function: a.Function, Arguments: a.Arguments})
	}
	switch d.Status {
	case string(fsm.Finish):
		out = append(out, Action{Function: prompts.FinishTool})
	case string(fsm.Fail):
		out = append(out, Action{Function: prompts.FailTool})
	}
	return out
}

// predicted reads the actions out of the model's reply, as the agent
// would, and the result it finishes with.
func predicted(mode strategy.Mode, msg llm.Message) ([]Action, string, error) {
	var out []Action
	if mode == strategy.ModeJSON {
		r, err := prompts.ParseReply(msg.Content, prompts.AppStatuses())
		if err != nil {
			return nil, "", err
		}
		for _, a := range r.Actions {
			out = append(out, Action{Function: a.Function, Arguments: a.Arguments})
		}
		result := ""
		switch r.Status {
		case prompts.StatusFinish:
			out = append(out, Action{Function: prompts.FinishTool})
			result = r.Result
		case prompts.StatusFail:
			out = append(out, Action{Function: prompts.FailTool})
		}
		return out, result, nil
	}
	var end []Action
	result := ""
	for _, c := range msg.ToolCalls {
		// A reply with a cut call is refused whole by the agent, the
		// control tools' calls too.
		if _, err := prompts.ParseArguments(c.Arguments); errors.Is(err, prompts.ErrIncomplete) {
			return nil, "", fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	for _, c := range msg.ToolCalls {
		if c.Name == prompts.FinishTool || c.Name == prompts.FailTool {
			// The step scores the choice; the final answer, the result.
			end = append(end, Action{Function: c.Name})
			if c.Name == prompts.FinishTool {
				if args, err := prompts.ParseArguments(c.Arguments); err == nil {
					result, _ = args["result"].(string)
				}
			}
			continue
		}
		args, err := prompts.ParseArguments(c.Arguments)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", c.Name, err)
		}
		out = append(out, Action{Function: c.Name, Arguments: args})
	}
	if len(msg.ToolCalls) == 0 && strings.TrimSpace(msg.Content) != "" {
		end = append(end, Action{Function: prompts.FinishTool}) // words alone end an app agent
		result = msg.Content
	}
	return append(out, end...), result, nil
}

func scoreStep(s *StepScore) {
	s.ToolOK = len(s.Gold) == len(s.Predicted)
	for i := 0; s.ToolOK && i < len(s.Gold); i++ {
		s.ToolOK = s.Gold[i].Function == s.Predicted[i].Function
	}
	total, matched, exact := 0, 0, true
	for i, g := range s.Gold {
		for k, want := range g.Arguments {
			total++
			var got any
			ok := false
			if i < len(s.Predicted) && s.Predicted[i].Function == g.Function {
				got, ok = s.Predicted[i].Arguments[k]
			}
			if ok && tolerantMatch(want, got) {
				matched++
				if !jsonEqual(want, got) {
					exact = false
				}
			} else {
				exact = false
			}
		}
	}
	s.ArgScore = 1
	if total > 0 {
		s.ArgScore = float64(matched) / float64(total)
	}
	s.ExactArgs = s.ToolOK && exact
	s.Success = s.Error == "" && s.ToolOK && matched == total
}

// tolerantMatch compares arguments by type: numbers within 1e-6 (relative),
// strings ignoring case-preserving whitespace differences and, for paths,
// "./" and trailing slashes; lists and objects element by element.
func tolerantMatch(want, got any) bool {
	if wf, ok := number(want); ok {
		if gf, ok := number(got); ok {
			return math.Abs(wf-gf) <= 1e-6*math.Max(1, math.Abs(wf))
		}
		if gs, ok := got.(string); ok {
			var gf float64
			if _, err := fmt.Sscan(strings.TrimSpace(gs), &gf); err == nil {
				return math.Abs(wf-gf) <= 1e-6*math.Max(1, math.Abs(wf))
			}
		}
		return false
	}
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		return ok && normText(w) == normText(g)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !tolerantMatch(w[i], g[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			if !tolerantMatch(v, g[k]) {
				return false
			}
		}
		return true
	}
	return jsonEqual(want, got)
}

func normText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if strings.Contains(s, "/") && !strings.Contains(s, " ") {
		s = path.Clean(s)
	}
	return s
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Write prints the step scores and the totals.
func (r *StepReport) Write(w io.Writer) {
	for _, s := range r.Steps {
		mark := "✔"
		if !s.Success {
			mark = "✘"
		}
		fmt.Fprintf(w, "%s [%s step %d] gold %s, predicted %s (args %.0f%%)", mark, s.Agent, s.Step, actionList(s.Gold), actionList(s.Predicted), 100*s.ArgScore)
		if s.Error != "" {
			fmt.Fprintf(w, " error: %s", s.Error)
		}
		fmt.Fprintln(w)
	}
	if a := r.FinalAnswer; a != nil {
		mark := "✔"
		if !a.Pass {
			mark = "✘"
		}
		fmt.Fprintf(w, "%s final answer [%s step %d] %q, gold %q", mark, a.Agent, a.Step, cutText(a.Predicted, 200), cutText(a.Gold, 200))
		if !a.Pass {
			fmt.Fprintf(w, ": %s", a.Detail)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "tool accuracy %.1f%%, argument match %.1f%%, step success %.1f%%, task success %v\n",
		100*r.ToolAccuracy, 100*r.ArgAccuracy, 100*r.StepSuccessRate, r.TaskSuccess)
}

func actionList(as []Action) string {
	if len(as) == 0 {
		return "nothing"
	}
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.Function
		if len(a.Arguments) > 0 {
			b, _ := json.Marshal(a.Arguments)
			parts[i] += string(b)
		}
	}
	return strings.Join(parts, ", ")
}
