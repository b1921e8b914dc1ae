package strategy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/memo"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/memory"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy/internal/computeruse"
)

// askStrategy renders the agent's prompt, asks the model and turns its reply
// into a Decision. A reply that cannot be used is sent back to the model with
// the reason, at most Limits.MaxRetries times; after that the step FAILs with
// the raw reply kept in the Decision.
type askStrategy struct{}

func (askStrategy) Name() string { return Ask }
func (askStrategy) Phase() Phase { return LLMInteraction }

func (askStrategy) Execute(ctx context.Context, pc *Context) error {
	msgs, err := conversation(ctx, pc, true)
	if err != nil {
		return err
	}
	req := &llm.Request{Messages: msgs, JSON: pc.mode == ModeJSON}
	if pc.mode == ModeTools {
		// The tools stay the same while the discovered list does.
		if read := readsArtifacts(pc); pc.native == nil || len(pc.tools) != pc.nativeOf || read != pc.nativeRead {
			pc.native, pc.nativeOf, pc.nativeRead = NativeTools(pc), len(pc.tools), read
		}
		req.Tools = pc.native
		if pc.computer != nil {
			req.Computer = pc.computer.Computer()
		}
	}
	for attempt := 0; ; attempt++ {
		pc.messages = req.Messages
		resp, err := complete(ctx, pc, req)
		var reason string
		switch {
		case errors.Is(err, llm.ErrEmptyReply):
			reason = "Your reply was empty."
		case err != nil:
			return err
		case llm.Unfinished(resp) != "":
			// Never act on a reply that did not end: it may hold half a
			// command. The model is told why and asked again.
			pc.response = resp
			reason = llm.Unfinished(resp)
			resp = nil
		default:
			pc.response = resp
			dec, perr := decide(pc, resp.Message)
			if perr == nil {
				pc.decision = dec
				pc.status = dec.Status
				return nil
			}
			reason = perr.Error()
		}
		if attempt >= pc.limits.MaxRetries {
			raw := ""
			if pc.response != nil {
				raw = pc.response.Message.Content
			}
			pc.decision = &Decision{Status: fsm.Fail, Thought: raw,
				Result: fmt.Sprintf("the model's reply could not be used after %d attempts: %s Its last reply was: %q", attempt+1, reason, cut(raw, 2000))}
			pc.status = fsm.Fail
			return nil
		}
		next := append([]llm.Message(nil), req.Messages...)
		if resp != nil && pc.mode == ModeJSON {
			next = append(next, llm.Assistant(resp.Message.Content))
		}
		// A cut reply (resp nil here) is not repeated back to the model.
		next = append(next, llm.User(reason+" "+reaskHint(pc)))
		req = &llm.Request{Messages: next, Tools: req.Tools, JSON: req.JSON, Computer: req.Computer}
	}
}

func reaskHint(pc *Context) string {
	if pc.mode == ModeJSON {
		return "Reply again with exactly one JSON object in the required format."
	}
	if pc.agent.Role == fsm.Host {
		return "Call " + prompts.AssignTool + ", " + prompts.FinishTool + " or " + prompts.FailTool + "."
	}
	return "Call one of your tools, or " + prompts.FinishTool + " or " + prompts.FailTool + "."
}

// complete asks the model, retrying provider errors that may pass.
func complete(ctx context.Context, pc *Context, req *llm.Request) (*llm.Response, error) {
	wait := pc.limits.RetryBackoff
	if wait <= 0 {
		wait = time.Second
	}
	for try := 0; ; try++ {
		var resp *llm.Response
		var err error
		if pc.onChunk != nil {
			resp, err = pc.model.Stream(ctx, req, pc.onChunk)
		} else {
			resp, err = pc.model.Complete(ctx, req)
		}
		pc.attempts++
		if err == nil {
			pc.usage = pc.usage.Add(resp.Usage)
			if resp.Message.Content == "" && len(resp.Message.ToolCalls) == 0 && llm.Unfinished(resp) == "" {
				return resp, llm.ErrEmptyReply
			}
			return resp, nil
		}
		policy := llm.RetryPolicy{Base: wait, Max: pc.limits.MaxRetries, MaxRetryAfter: pc.limits.MaxRetryAfter}
		d, stop := policy.Wait(try, err)
		if stop != nil {
			return nil, fmt.Errorf("asking the model: %w", stop)
		}
		if pc.onRetry != nil {
			pc.onRetry(err, d)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("asking the model: %w (gave up waiting to retry: %v)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Conversation builds the messages for the model. They open with a stable
// prefix — the system prompt and the first user turn, rendered once per
// agent — so that providers' prompt caches hit; the agent's remembered
// steps follow (each reply and what it produced) as the context policy
// sends them, and they end with the status turn, rendered anew at every
// step: the notes of finished subtasks, this step's observations, the
// step (or round) of its budget.
//
// Under the append-only presets a step's turns, once sent, are sent the
// same way in every later request, until a fold replaces the older ones
// with a summary (see memory.Policy). Conversation folds with the
// deterministic summary; the ask strategy asks the model for one where
// the policy says so.
func Conversation(pc *Context) ([]llm.Message, error) {
	return conversation(context.Background(), pc, false)
}

// conversation is Conversation; with askModel, a fold's summary is the
// model's where the policy says so (memory.SummaryModel).
func conversation(ctx context.Context, pc *Context, askModel bool) ([]llm.Message, error) {
	if pc.intro == nil {
		pc.retrieve(ctx)
		intro, err := renderIntro(pc)
		if err != nil {
			return nil, err
		}
		pc.intro = intro
	}
	status, err := renderStatus(pc)
	if err != nil {
		return nil, err
	}
	turn := llm.User(status)
	turn.Images = stepImages(pc)
	pol := pc.limits.Context.WithDefaults()
	if !askModel {
		pol.Summary = memory.SummaryDeterministic
	}
	if !pol.IsWindow() {
		before := pc.folded
		if err := fold(ctx, pc, pol, turn); err != nil {
			return nil, err
		}
		if pc.folded != before && pc.agent.Role == fsm.Host {
			// The host's status turn shows the notes a fold took out.
			if turn.Content, err = renderStatus(pc); err != nil {
				return nil, err
			}
		}
		return append(appendOnly(pc), turn), nil
	}
	for recent := pol.Recent; ; recent /= 2 {
		msgs := history(pc, pol, recent)
		if pol.MaxBytes <= 0 || recent <= 1 || historyBytes(msgs) <= pol.MaxBytes {
			return append(msgs, turn), nil
		}
	}
}

// history is the intro and the remembered steps as the context policy
// sends them with recent steps in full: older ones condensed, the oldest
// folded into one summary turn.
func history(pc *Context, pol memory.Policy, recent int) []llm.Message {
	steps := pc.memory.Steps()
	folded, condensed := pol.Split(len(steps), recent)
	msgs := append(make([]llm.Message, 0, len(pc.intro)+3*(len(steps)-folded)+2), pc.intro...)
	if folded > 0 {
		msgs = append(msgs, llm.User(pol.Fold(steps[:folded])))
	}
	for i := range steps[folded:] {
		line := 0
		if i < condensed {
			line = pol.LineChars
		}
		msgs = append(msgs, stepTurns(pc, folded+i, line).msgs...)
	}
	return msgs
}

// stepTurns are a remembered step's turns in one form: in full (line 0),
// condensed to lines of that many bytes, or with its results cut to the
// policy's head (line headForm). A remembered step never changes: its
// turns are rendered once in each form.
func stepTurns(pc *Context, index, line int) turns {
	key := stepKey{index, line}
	if t, ok := pc.turns[key]; ok {
		return t
	}
	st := pc.memory.Steps()[index]
	reply := replayable(st.Reply)
	if line > 0 {
		reply = condense(reply, line)
	} else {
		reply = shownReply(pc, reply)
	}
	msgs := make([]llm.Message, 1, 2+len(st.Reply.ToolCalls)+len(st.Notes))
	msgs[0] = reply
	msgs = appendResults(msgs, pc, st, line)
	for _, n := range st.Notes {
		if !answersCall(st) {
			msgs = append(msgs, llm.User(n))
		}
	}
	t := turns{msgs: msgs, bytes: historyBytes(msgs)}
	if pc.turns == nil {
		pc.turns = map[stepKey]turns{}
	}
	pc.turns[key] = t
	return t
}

// turns are a step's messages as requests carry them, and their size.
type turns struct {
	msgs  []llm.Message
	bytes int
}

// The forms of a step under the append-only presets: once seen (its
// results within the policy's head), and the newest, not yet seen
// (within its ShowBytes).
const (
	headForm   = -1
	newestForm = -2
)

// stepKey names a remembered step's turns in one form: in full (line 0)
// or condensed to lines of that many bytes.
type stepKey struct{ index, line int }

// condense shortens an older reply: its text to one line, and arguments
// too long to be worth repeating to a stand-in that says so.
func condense(m llm.Message, line int) llm.Message {
	m.Content = memory.Line(m.Content, line)
	for i, c := range m.ToolCalls {
		if len(c.Arguments) > 8*line {
			calls := slices.Clone(m.ToolCalls)
			calls[i].Arguments = fmt.Sprintf(`{"_omitted":"%d bytes of arguments, sent in full at the time"}`, len(c.Arguments))
			m.ToolCalls = calls
		}
	}
	return m
}

func historyBytes(msgs []llm.Message) int {
	_, n := llm.SharedPrefix(nil, &llm.Request{Messages: msgs})
	return n
}

// replayable returns the reply as it can be sent back to a provider: tool
// call arguments that are not valid JSON (which providers reject in history)
// become {}. The model still learns what was wrong from the call's result,
// which quotes the arguments it sent.
func replayable(m llm.Message) llm.Message {
	for i, c := range m.ToolCalls {
		if !json.Valid([]byte(c.Arguments)) {
			calls := append([]llm.ToolCall(nil), m.ToolCalls...)
			for j := i; j < len(calls); j++ {
				if !json.Valid([]byte(calls[j].Arguments)) {
					calls[j].Arguments = "{}"
				}
			}
			m.ToolCalls = calls
			break
		}
	}
	return m
}

// promptData is what the agent's templates are rendered with now.
func promptData(pc *Context) any {
	notes := promptNotes(pc)
	if pc.agent.Role == fsm.Host {
		notes = foldedNotes(pc, notes)
		return prompts.HostData{Request: pc.request, Device: pc.device, Apps: pc.apps, Notes: notes, Mode: string(pc.mode),
			Round: pc.round, MaxRounds: pc.maxSteps, Knowledge: pc.knowledgeText()}
	}
	// The notes known when the agent starts go in its first user turn,
	// once; the status turn shows only those that came since.
	if pc.intro == nil {
		pc.introNotes = len(notes)
	}
	earlier := notes[:min(pc.introNotes, len(notes))]
	return prompts.AppData{Request: pc.request, Subtask: pc.subtask, App: pc.agent.App, Alone: pc.alone, Tools: pc.tools, Device: pc.device,
		Observations: pc.observations, EarlierNotes: earlier, Notes: notes[len(earlier):], Mode: string(pc.mode), Step: pc.step, MaxSteps: pc.maxSteps,
		Knowledge: pc.knowledgeText()}
}

// templates names the agent's templates: the system prompt, the first
// user turn and the status turn.
func templates(pc *Context) (system, user, status string) {
	if pc.agent.Role == fsm.Host {
		return "host_system", "host_user", "host_status"
	}
	return "app_system", "app_user", "app_status"
}

// renderIntro renders the stable part: the system prompt and the first
// user turn.
func renderIntro(pc *Context) ([]llm.Message, error) {
	data := promptData(pc)
	system, first, _ := templates(pc)
	sys, err := pc.prompts.RenderAgain(system, data)
	if err != nil {
		return nil, err
	}
	user, err := pc.prompts.RenderAgain(first, data)
	if err != nil {
		return nil, err
	}
	return []llm.Message{llm.System(sys), llm.User(user)}, nil
}

// renderStatus renders the live end of the request.
func renderStatus(pc *Context) (string, error) {
	_, _, status := templates(pc)
	return pc.prompts.Render(status, promptData(pc))
}

func promptNotes(pc *Context) []prompts.Note {
	b := pc.board
	if b == nil || b.Len() == len(pc.boardNotes) {
		return pc.boardNotes // unchanged since given: the same list again
	}
	out := make([]prompts.Note, 0, b.Len())
	for n := range b.All() {
		out = append(out, prompts.Note{Subtask: n.Subtask, App: n.App, Status: n.Status, Result: n.Result})
	}
	pc.boardNotes = out
	return out
}

// foldedNotes are the notes of finished subtasks that the host's history
// no longer shows: each note is the result of its assign_subtask call,
// there for the model to read, until a fold replaces the call's step by
// a line of summary (or, under the window preset, a condensed line).
// Notes are on the board in the order the host's calls ran them.
func foldedNotes(pc *Context, notes []prompts.Note) []prompts.Note {
	pol := pc.limits.Context.WithDefaults()
	if pol.IsWindow() {
		return notes
	}
	f := pc.folded
	if f == nil {
		return nil
	}
	steps := pc.memory.Steps()
	from, to := ranSubtasks(steps[:f.anchor]), ranSubtasks(steps[:f.upTo()])
	from, to = min(from, len(notes)), min(to, len(notes))
	return notes[from:to]
}

// ranSubtasks counts the subtasks the steps ran, each of which left a
// note.
func ranSubtasks(steps []memory.Step) int {
	n := 0
	for _, st := range steps {
		for i, c := range st.Commands {
			if c.ToolName == prompts.AssignTool && i < len(st.Results) && st.Results[i].Namespace != "" {
				n++
			}
		}
	}
	return n
}

// appendResults appends a step's results as the model reads them next: a
// tool turn per native tool call, or one user turn listing the results.
// A positive line cuts each result to one line of that many bytes (a
// condensed step).
func appendResults(out []llm.Message, pc *Context, st memory.Step, line int) []llm.Message {
	text := func(i int) string {
		r := st.Results[i]
		switch {
		case line > 0:
			return memory.Line(ResultText(r, 0), line)
		case i < len(st.Commands) && st.Commands[i].ToolName == prompts.ReadArtifactTool:
			// What the model asked to read goes whole.
		case line == headForm:
			return cutResult(pc, r, false)
		case line == newestForm:
			return cutResult(pc, r, true)
		}
		return shownResult(pc, r)
	}
	if len(st.Reply.ToolCalls) > 0 {
		for _, call := range st.Reply.ToolCalls {
			if call.Name == llm.ComputerTool {
				out = append(out, computerResult(pc, st, call, line, text))
				continue
			}
			content := controlAck(st, call.Name)
			for i, id := range st.CallIDs {
				if id == call.ID && i < len(st.Results) {
					content = text(i)
				}
			}
			out = append(out, llm.ToolResult(call, content))
		}
		return out
	}
	var b strings.Builder
	if len(st.Commands) == 0 {
		fmt.Fprintf(&b, "Step %d ran no actions.", st.Step)
	} else {
		fmt.Fprintf(&b, "Results of step %d:\n", st.Step)
		for i, c := range st.Commands {
			res := "(no result)"
			if i < len(st.Results) {
				res = text(i)
			}
			fmt.Fprintf(&b, "%d. %s %s → %s\n", i+1, c.ToolName, pc.artifacts.JSON([]byte(compactJSON(c.Parameters))), res)
		}
	}
	return append(out, llm.User(b.String()))
}

// shownResult is a result as a request carries it: whole, or with what is
// too long to repeat kept aside as artifacts, each shown by its head and
// read on demand (read_artifact). Without a store it is cut instead.
func shownResult(pc *Context, r command.Result) string {
	a := pc.artifacts
	if a == nil {
		return ResultText(r, pc.limits.MaxResultChars)
	}
	if r.Status == command.Success && len(r.Result) > 0 {
		var s string
		if isJSONString(r.Result) && json.Unmarshal(r.Result, &s) == nil {
			return a.Text(s)
		}
		// Each long string of a JSON result on its own (a command's
		// stdout, say), so that the structure stays and a read returns
		// the string's own bytes. Both ways give canonical JSON; a long
		// one is decoded once.
		raw := stripImages(r.Result)
		if len(raw) <= a.Threshold || a.Threshold <= 0 {
			return string(prompts.CanonicalJSON(raw))
		}
		return string(a.JSON(raw))
	}
	return a.Text(ResultText(r, 0))
}

// isJSONString reports whether raw can be a JSON string: most results are
// objects, which need not be decoded to learn that they are not one.
func isJSONString(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '"'
}

// cutResult is a result as the append-only presets put it in the
// requests of an app agent: the newest (first read) whole up to the
// policy's ShowBytes, a seen one whole up to its HeadLines and HeadBytes,
// a longer one by its head and tail, the middle kept aside for
// read_artifact. A host agent, which cannot read artifacts, gets it as
// shownResult does.
func cutResult(pc *Context, r command.Result, newest bool) string {
	a := pc.artifacts
	pol := pc.limits.Context.WithDefaults()
	lines, bytes := pol.HeadLines, pol.HeadBytes
	if newest {
		lines, bytes = 0, newestBytes(pol)
	}
	if a == nil || pc.agent.Role != fsm.App || (lines <= 0 && bytes <= 0) {
		return shownResult(pc, r)
	}
	if r.Status == command.Success && len(r.Result) > 0 {
		var s string
		if isJSONString(r.Result) && json.Unmarshal(r.Result, &s) == nil {
			return a.Shorten(s, lines, bytes)
		}
		// Each long string on its own (a command's stdout), so that a
		// read returns the string's own bytes.
		return string(a.ShortenJSON(prompts.CanonicalJSON(stripImages(r.Result)), lines, bytes))
	}
	return a.Shorten(ResultText(r, 0), lines, bytes)
}

// newestBytes is how much of the newest results a request shows: the
// policy's ShowBytes, and no more than a quarter of its MaxBytes, so that
// one result cannot crowd the model's context.
func newestBytes(pol memory.Policy) int {
	n := pol.ShowBytes
	if pol.MaxBytes > 0 && (n <= 0 || n > pol.MaxBytes/4) {
		n = pol.MaxBytes / 4
	}
	return n
}

// shownReply is a remembered reply as the next requests repeat it: text
// and arguments too long to repeat kept aside as artifacts, the first time
// they are sent back, so that what was sent never changes.
func shownReply(pc *Context, m llm.Message) llm.Message {
	a := pc.artifacts
	if a == nil {
		return m
	}
	m.Content = a.JSONString(m.Content)
	var calls []llm.ToolCall
	for i, c := range m.ToolCalls {
		args := a.JSONString(c.Arguments)
		if args == c.Arguments {
			continue
		}
		if !json.Valid([]byte(args)) {
			// Still too long as a whole: providers want JSON arguments.
			b, _ := json.Marshal(map[string]string{"_shortened": args})
			args = string(b)
		}
		if calls == nil {
			calls = slices.Clone(m.ToolCalls)
		}
		calls[i].Arguments = args
	}
	if calls != nil {
		m.ToolCalls = calls
	}
	return m
}

// controlAck answers a control tool call: ask_user with the user's answer,
// request_approval with the user's decision, finish_task and fail_task
// with "ok", or, when they did not end the agent (an action in the same
// reply failed), with why not.
func controlAck(st memory.Step, name string) string {
	switch name {
	case prompts.AskUserTool:
		if len(st.Notes) > 0 {
			return strings.Join(st.Notes, "\n")
		}
		return "no answer"
	case prompts.ApprovalTool:
		for _, r := range st.Results {
			if strings.Contains(r.Error, declined) {
				return "declined: the user did not approve; the actions did not run"
			}
		}
		return "approved: the actions ran; their results follow"
	}
	if st.Status == string(fsm.Finish) || st.Status == string(fsm.Fail) {
		return "ok"
	}
	return "not done: an action in the same reply did not succeed; check the results and continue"
}

// answersCall reports whether a step's notes are the result of its
// ask_user call (tools mode) rather than turns of their own.
func answersCall(st memory.Step) bool {
	for _, c := range st.Reply.ToolCalls {
		if c.Name == prompts.AskUserTool {
			return true
		}
	}
	return false
}

func compactJSON(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// schemas are the tools' input schemas written canonically, once for each
// schema however many agents offer the tool.
var schemas memo.Bytes[json.RawMessage]

func canonical(b []byte) (json.RawMessage, error) { return prompts.CanonicalJSON(b), nil }

// NativeTools is what the model may call in tools mode: the host's control
// tools, or an app's tools plus finish and fail.
func NativeTools(pc *Context) []llm.Tool {
	if pc.agent.Role == fsm.Host {
		out := make([]llm.Tool, 0, len(prompts.HostControlTools()))
		for _, c := range prompts.HostControlTools() {
			out = append(out, llm.Tool{Name: c.Name, Description: c.Description, Parameters: c.Parameters})
		}
		return out
	}
	out := make([]llm.Tool, 0, len(pc.tools)+len(prompts.AppControlTools()))
	for _, t := range pc.tools {
		if pc.computer != nil && slices.Contains(computeruse.PixelTools, t.Name) {
			continue // the native computer tool does what they do
		}
		params, _ := schemas.Get(t.InputSchema, canonical)
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, Parameters: params})
	}
	control := prompts.AppControlTools()
	if pc.alone {
		control = prompts.AloneControlTools()
	}
	for _, c := range control {
		if c.Name == prompts.ReadArtifactTool && !readsArtifacts(pc) {
			continue
		}
		out = append(out, llm.Tool{Name: c.Name, Description: c.Description, Parameters: c.Parameters})
	}
	return out
}

// readsArtifacts reports whether an app agent is offered read_artifact:
// always under the append-only presets (so that the tools never change),
// under the window from the first request that shows an artifact on
// (the tools change once there; requests without artifacts, those of
// recordings made before the presets, stay as they were).
func readsArtifacts(pc *Context) bool {
	if pc.agent.Role != fsm.App || pc.artifacts == nil {
		return false
	}
	return !pc.limits.Context.WithDefaults().IsWindow() || pc.artifacts.Len() > 0
}
