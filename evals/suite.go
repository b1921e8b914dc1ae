package evals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/yamlkeys"
)

// ReplayModel is the model name that means "the recorded replies": a case
// on a recorded device with model replay re-runs the recorded session.
const ReplayModel = "replay"

// Suite is an eval suite: a YAML file of cases (see evals/README.md and
// suite.schema.json).
type Suite struct {
	Name        string `yaml:"name" json:"name" jsonschema_description:"The suite's name, used in reports."`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Model is the default model of every case, as PROVIDER:MODEL, or
	// "replay" for a recorded device's recorded replies.
	Model string `yaml:"model,omitempty" json:"model,omitempty" jsonschema_description:"Default model for the cases: PROVIDER:MODEL, or replay (the recorded replies of a recorded device)."`
	// Judge is the default model of judge checks.
	Judge    string `yaml:"judge,omitempty" json:"judge,omitempty" jsonschema_description:"Default model for judge checks."`
	Defaults Limits `yaml:"defaults,omitempty" json:"defaults,omitempty" jsonschema_description:"Limits and trials for every case that does not set its own."`
	// Prices add to or override the built-in price table, by model pattern.
	Prices map[string]Price `yaml:"prices,omitempty" json:"prices,omitempty" jsonschema_description:"USD per million tokens, by model spec or pattern where * matches anything (openai:gpt-4o*)."`
	// Sandbox runs every live case in a fresh sandbox of its own.
	Sandbox bool `yaml:"sandbox,omitempty" json:"sandbox,omitempty" jsonschema_description:"Run every live case in a fresh sandbox of its own (device: sandbox); a case may say sandbox: false."`
	// Config is laid over the run's config for every case: what the
	// suite's tasks need (the desktop tools, longer timeouts).
	Config map[string]any `yaml:"config,omitempty" json:"config,omitempty" jsonschema_description:"Saucer config laid over the run's config for every case (as in a config file), e.g. {mcp: {use: [shell, files, desktop]}}."`
	Cases  []Case         `yaml:"cases" json:"cases"`

	// File is where the suite was read from; paths in it are relative to
	// its directory.
	File string `yaml:"-" json:"-"`
	hash string
}

// Limits bound one trial of a case.
type Limits struct {
	MaxSteps  int      `yaml:"max_steps,omitempty" json:"max_steps,omitempty" jsonschema_description:"Steps per app agent."`
	MaxRounds int      `yaml:"max_rounds,omitempty" json:"max_rounds,omitempty" jsonschema_description:"Host agent rounds."`
	Timeout   Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" jsonschema_description:"Wall time for one trial, e.g. 60s."`
	MaxTokens int      `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty" jsonschema_description:"Prompt plus completion tokens for one trial."`
	Trials    int      `yaml:"trials,omitempty" json:"trials,omitempty" jsonschema_description:"How many times to run the case (for pass@k and pass^k)."`
}

// Case is one task with its device and its checks.
type Case struct {
	ID   string `yaml:"id" json:"id" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9._-]*$" jsonschema_description:"Unique id (letters, digits, . _ -)."`
	Task string `yaml:"task" json:"task" jsonschema_description:"The request given to the agent."`
	// AnswerFormat is the rule the final answer must follow, as the
	// checks read it: both agents are told it, next to the task
	// (session.Options.AnswerFormat). See Format for the one an answer
	// check implies when it is empty.
	AnswerFormat string `yaml:"answer_format,omitempty" json:"answer_format,omitempty" jsonschema_description:"The rule the final answer must follow, in plain words (e.g. a single integer, digits only, no words); told to the agents with the task. Default: what an answer check with number or exact implies."`
	// Model overrides the suite's model for this case.
	Model  string `yaml:"model,omitempty" json:"model,omitempty"`
	Device Device `yaml:"device,omitempty" json:"device,omitempty"`
	Limits Limits `yaml:"limits,omitempty" json:"limits,omitempty"`
	// ExpectFail marks an infeasible task: a trial succeeds only if the
	// agent ends with FAIL (and the checks pass).
	ExpectFail bool     `yaml:"expect_fail,omitempty" json:"expect_fail,omitempty" jsonschema_description:"The task is infeasible: the agent must answer FAIL."`
	Checks     []Check  `yaml:"checks,omitempty" json:"checks,omitempty"`
	Labels     []string `yaml:"labels,omitempty" json:"labels,omitempty"`
	// Person plays the user for the agents' questions and approvals.
	Person Person `yaml:"person,omitempty" json:"person,omitempty" jsonschema_description:"The user's answers to the agents' questions and approvals, in order."`
	// Constellation makes the case target a constellation: the task is
	// its request, run over the live devices named here, and each
	// device's checks run on it once the constellation ends; the case's
	// own checks (answer, node, judge) judge how it ended.
	Constellation *ConstellationCase `yaml:"constellation,omitempty" json:"constellation,omitempty" jsonschema_description:"Run the task as a constellation over several live devices, with checks on each device."`
}

// ConstellationCase is a case that targets a constellation. Its planner
// and its devices' agents are scripted: the planner plays Plan, and each
// node's device runs the node's command, so that a trial is as real as
// its devices and the orchestrator, whatever the model.
type ConstellationCase struct {
	Devices []ConstellationDevice `yaml:"devices" json:"devices" jsonschema_description:"The live devices, each a Saucer device built from the config as saucer client builds one (the apps of mcp.use, mcp.policy, timeouts, device: sandbox) in a fresh directory, and the checks on each."`
	Plan    []PlanNode            `yaml:"plan" json:"plan" jsonschema_description:"The scripted planner's graph: one node per device task."`
	// Latency is each scripted model call's fixed latency (e.g. 300ms),
	// so that time is realistic.
	Latency Duration `yaml:"latency,omitempty" json:"latency,omitempty" jsonschema_description:"Each scripted model call's fixed latency, e.g. 300ms."`
}

// ConstellationDevice is one device of a constellation case.
type ConstellationDevice struct {
	ID     string            `yaml:"id" json:"id"`
	Files  map[string]string `yaml:"files,omitempty" json:"files,omitempty" jsonschema_description:"Files (path: content) to create in the device's fresh directory."`
	Checks []Check           `yaml:"checks,omitempty" json:"checks,omitempty" jsonschema_description:"Checks run on this device once the constellation ends."`
}

// PlanNode is a node of a constellation case's plan: the device it runs
// on, the shell command its scripted agents run ({{dep:ID}} is node ID's
// result), the nodes it needs, its retries, and the device and command it
// is moved to when it fails beyond them.
type PlanNode struct {
	ID          string   `yaml:"id" json:"id"`
	Device      string   `yaml:"device" json:"device"`
	Run         string   `yaml:"run" json:"run"`
	After       []string `yaml:"after,omitempty" json:"after,omitempty"`
	Retries     int      `yaml:"retries,omitempty" json:"retries,omitempty"`
	Fallback    string   `yaml:"fallback,omitempty" json:"fallback,omitempty"`
	FallbackRun string   `yaml:"fallback_run,omitempty" json:"fallback_run,omitempty"`
}

// Person is what a case's user answers: the answers to the agents'
// questions, in order, and the decisions on their approvals, in order
// (when they run out, ApproveRest decides). A question with no answer left
// fails the agent that asked, with the question in its answer.
type Person struct {
	Answers     []string `yaml:"answers,omitempty" json:"answers,omitempty" jsonschema_description:"Answers to the agents' questions, in the order they are asked."`
	Approvals   []bool   `yaml:"approvals,omitempty" json:"approvals,omitempty" jsonschema_description:"Decisions on the agents' approvals, in the order they are asked."`
	ApproveRest bool     `yaml:"approve_rest,omitempty" json:"approve_rest,omitempty" jsonschema_description:"Approve what approvals leaves undecided (default: decline)."`
}

// Device says what the agent works on: a recorded session, or a live local
// device in a fresh temporary directory.
type Device struct {
	// Recording is a recorded run directory (relative to the suite file),
	// or a constellation's recording (RUNS/constellations/ID.jsonl, or a
	// folder holding one, known by its content): that is replayed offline,
	// whatever the model, and the case's checks judge the graph it ends
	// with (answer and node checks; expect_fail on its status).
	Recording string `yaml:"recording,omitempty" json:"recording,omitempty" jsonschema_description:"A recorded run directory, relative to the suite file: the device answers with its recorded results. Or a constellation's recording (RUNS/constellations/ID.jsonl, or a folder holding one): replayed offline, its answer and node checks judge the graph it ends with."`
	// Files are written into the live device's directory before it starts.
	Files map[string]string `yaml:"files,omitempty" json:"files,omitempty" jsonschema_description:"Files (path: content) to create in the live device's fresh directory."`
	// Setup are scripts run there before the agent starts, each in a shell
	// of its own.
	Setup []SetupStep `yaml:"setup,omitempty" json:"setup,omitempty" jsonschema_description:"Steps run on the live device before the agent starts: scripts in its directory, each in a shell of its own (a shell command line, or {language: python, code: ...}), or tool calls ({tool: launch_app, namespace: desktop, arguments: {...}}), in order."`
	// Start is a shell script run in the agent's own shell just before the
	// agent starts: the device's shell is then one persistent shell, so
	// what Start leaves (variables, the directory, background jobs, a user
	// switched to with su) is where the agent begins.
	Start string `yaml:"start,omitempty" json:"start,omitempty" jsonschema_description:"A script run in the agent's persistent shell just before the agent starts (implies persistent_shell)."`
	// PersistentShell gives the trial one persistent shell
	// (tools.shell.persistent): cd, variables and su carry over between
	// the agent's commands.
	PersistentShell bool `yaml:"persistent_shell,omitempty" json:"persistent_shell,omitempty" jsonschema_description:"Run the agent's commands in one persistent shell: cd, variables and su carry over."`
	// Sandbox runs the live device in a fresh sandbox (overriding the
	// suite's sandbox); its directory is the sandbox's /root.
	Sandbox *bool `yaml:"sandbox,omitempty" json:"sandbox,omitempty" jsonschema_description:"Run the live device in a fresh sandbox, with its directory as /root (overrides the suite's sandbox)."`
}

// Script is a program run on a live device: a shell script (bash), or
// {language: python, code: ...} run by python3. It is written in a suite
// as plain text for a shell script, or as a mapping.
type Script struct {
	Language string `yaml:"language,omitempty" json:"language,omitempty" jsonschema:"enum=bash,enum=python" jsonschema_description:"bash (the default) or python."`
	Code     string `yaml:"code" json:"code"`
}

// SetupStep is one step of a case's setup: a script, or a call of one of
// the device's tools, as an environment's setup opens the application a
// task starts in (OSWorld's "launch" and "open" steps): the agent then
// meets the window, a browser on its profile, as a person would.
type SetupStep struct {
	Script `yaml:",inline"`
	// Tool is the device tool to call (launch_app), in Namespace, with
	// Arguments; a tool step has no code.
	Tool      string         `yaml:"tool,omitempty" json:"tool,omitempty"`
	Namespace string         `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Arguments map[string]any `yaml:"arguments,omitempty" json:"arguments,omitempty"`
}

// UnmarshalYAML reads a step as a script (text, or {language, code}) or as
// {tool, namespace, arguments}.
func (s *SetupStep) UnmarshalYAML(n *yaml.Node) error {
	*s = SetupStep{}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "tool" {
				for j := 0; j+1 < len(n.Content); j += 2 {
					switch k := n.Content[j].Value; k {
					case "tool", "namespace", "arguments":
					default:
						return fmt.Errorf("line %d: a tool step has tool, namespace and arguments, not %q", n.Content[j].Line, k)
					}
				}
				type plain struct {
					Tool      string         `yaml:"tool"`
					Namespace string         `yaml:"namespace"`
					Arguments map[string]any `yaml:"arguments"`
				}
				var p plain
				if err := n.Decode(&p); err != nil {
					return err
				}
				s.Tool, s.Namespace, s.Arguments = p.Tool, p.Namespace, p.Arguments
				return nil
			}
		}
	}
	return n.Decode(&s.Script)
}

// MarshalYAML writes a script step as its script.
func (s SetupStep) MarshalYAML() (any, error) {
	if s.Tool == "" {
		return s.Script.MarshalYAML()
	}
	return map[string]any{"tool": s.Tool, "namespace": s.Namespace, "arguments": s.Arguments}, nil
}

// JSONSchema: a script, or a tool call.
func (SetupStep) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("tool", &jsonschema.Schema{Type: "string", Description: "The device tool to call, e.g. launch_app."})
	props.Set("namespace", &jsonschema.Schema{Type: "string", Description: "The tool's server (app), e.g. desktop; empty: the first that has the tool."})
	props.Set("arguments", &jsonschema.Schema{Type: "object", Description: "The tool's arguments."})
	return &jsonschema.Schema{AnyOf: append(Script{}.JSONSchema().AnyOf,
		&jsonschema.Schema{Type: "object", Properties: props, Required: []string{"tool"}, AdditionalProperties: jsonschema.FalseSchema})}
}

func (s SetupStep) validate() error {
	if s.Tool != "" {
		return nil
	}
	return s.Script.validate()
}

// label names the step in errors: its code's start, or its tool call.
func (s SetupStep) label() string {
	if s.Tool != "" {
		return "tool " + s.Tool
	}
	return cutText(oneLine(s.Code, 80), 80)
}

// Script languages.
const (
	LangBash   = "bash"
	LangPython = "python"
)

// UnmarshalYAML reads a script as text (bash) or as {language, code}.
func (s *Script) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = Script{}
		return n.Decode(&s.Code)
	}
	type plain Script
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "language" && k != "code" {
			return fmt.Errorf("line %d: a script has language and code, not %q", n.Content[i].Line, k)
		}
	}
	*s = Script(p)
	return nil
}

// MarshalYAML writes a bash script as text.
func (s Script) MarshalYAML() (any, error) {
	if s.Language == "" || s.Language == LangBash {
		return s.Code, nil
	}
	type plain Script
	return plain(s), nil
}

// JSONSchema: text, or {language, code}.
func (Script) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("language", &jsonschema.Schema{Type: "string", Enum: []any{LangBash, LangPython}, Description: "bash (the default) or python."})
	props.Set("code", &jsonschema.Schema{Type: "string"})
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Description: "A shell script."},
		{Type: "object", Properties: props, Required: []string{"code"}, AdditionalProperties: jsonschema.FalseSchema},
	}}
}

func (s Script) validate() error {
	switch s.Language {
	case "", LangBash, LangPython:
	default:
		return fmt.Errorf("script language %q: use bash or python", s.Language)
	}
	if strings.TrimSpace(s.Code) == "" {
		return errors.New("a script has no code")
	}
	return nil
}

// Check is one checker; exactly one of its fields is set.
type Check struct {
	Name      string          `yaml:"name,omitempty" json:"name,omitempty"`
	State     *StateCheck     `yaml:"state,omitempty" json:"state,omitempty" jsonschema_description:"Run a command on the device after the agent stops and check its output."`
	ToolCalls *ToolCallsCheck `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty" jsonschema_description:"Compare the tool calls the app agents made with the expected ones."`
	Answer    *AnswerCheck    `yaml:"answer,omitempty" json:"answer,omitempty" jsonschema_description:"Match the final answer."`
	Judge     *JudgeCheck     `yaml:"judge,omitempty" json:"judge,omitempty" jsonschema_description:"Ask a model to grade the trial against a rubric."`
	Node      *NodeCheck      `yaml:"node,omitempty" json:"node,omitempty" jsonschema_description:"Check how a node of the constellation ended: its status, device and result (a case that targets a constellation or replays a constellation's recording)."`
}

// StateCheck runs a command on the device once the agent has stopped.
type StateCheck struct {
	// Run is a shell command line (shell.execute_command), run with the
	// agent's answer in $SAUCER_ANSWER. Or name any Tool, or give a
	// Pipeline.
	Run string `yaml:"run,omitempty" json:"run,omitempty" jsonschema_description:"A shell command line; the agent's answer is in $SAUCER_ANSWER."`
	// Pipeline runs scripts one after another, each in a shell of its own
	// with arguments: the agent's answer, then the output of each script
	// before it (bash -c CODE -- ARGS, python3 -c CODE ARGS). The check
	// passes when every script exits 0. AgentBench checks this way.
	Pipeline  []Script       `yaml:"pipeline,omitempty" json:"pipeline,omitempty" jsonschema_description:"Scripts run in turn with arguments: the agent's answer, then each earlier script's output; passes when all exit 0."`
	Tool      string         `yaml:"tool,omitempty" json:"tool,omitempty"`
	Namespace string         `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Arguments map[string]any `yaml:"arguments,omitempty" json:"arguments,omitempty"`
	// What to expect: the output (stdout for a shell command, the result
	// text otherwise), trimmed; a substring; a regular expression; an exit
	// code (shell commands; default 0 when nothing else is expected).
	Output   *string `yaml:"output,omitempty" json:"output,omitempty"`
	Contains string  `yaml:"contains,omitempty" json:"contains,omitempty"`
	Regex    string  `yaml:"regex,omitempty" json:"regex,omitempty"`
	ExitCode *int    `yaml:"exit_code,omitempty" json:"exit_code,omitempty"`
}

// Tool-call match modes.
const (
	MatchStrict    = "strict"
	MatchUnordered = "unordered"
	MatchSubset    = "subset"
	MatchSuperset  = "superset"
)

// ToolCallsCheck compares the calls made with the expected ones.
//
//   - strict: the same calls in the same order;
//   - unordered: the same calls in any order;
//   - subset: every call made is among the expected (nothing else was done);
//   - superset: every expected call was made (other calls are allowed).
type ToolCallsCheck struct {
	Match string         `yaml:"match" json:"match" jsonschema:"enum=strict,enum=unordered,enum=subset,enum=superset"`
	Calls []ExpectedCall `yaml:"calls" json:"calls"`
}

// ExpectedCall is a call a checker expects. Arguments not listed are not
// compared; a value {regex: "..."} matches by regular expression.
type ExpectedCall struct {
	Tool      string         `yaml:"tool" json:"tool"`
	Namespace string         `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Arguments map[string]any `yaml:"arguments,omitempty" json:"arguments,omitempty"`
}

// AnswerCheck matches the final answer; set one of its fields.
type AnswerCheck struct {
	Exact    *string `yaml:"exact,omitempty" json:"exact,omitempty" jsonschema_description:"The whole answer, ignoring surrounding space."`
	Contains string  `yaml:"contains,omitempty" json:"contains,omitempty"`
	Regex    string  `yaml:"regex,omitempty" json:"regex,omitempty"`
	// Number matches the last number in the answer within Tolerance.
	Number    *float64 `yaml:"number,omitempty" json:"number,omitempty" jsonschema_description:"The last number in the answer must equal this, within tolerance."`
	Tolerance float64  `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
}

// JudgeCheck asks a model to grade the trial against a rubric. Its verdict
// (pass, score, reason) is kept in the results.
type JudgeCheck struct {
	Rubric string `yaml:"rubric" json:"rubric"`
	// Model defaults to the suite's judge.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// MinScore, when set, passes on score >= MinScore instead of the
	// verdict's pass.
	MinScore float64 `yaml:"min_score,omitempty" json:"min_score,omitempty"`
}

// Duration is a Go duration written as a string ("90s"), as in the config.
type Duration = config.Duration

// LoadSuite reads and checks a suite file.
func LoadSuite(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	s, err := ParseSuite(data)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, err)
	}
	s.File = path
	return s, nil
}

// ParseSuite reads a suite from YAML, refusing unknown keys, and checks it.
func ParseSuite(data []byte) (*Suite, error) {
	s := &Suite{}
	if unknown, err := yamlkeys.Find(data, s); err == nil && len(unknown) > 0 {
		return nil, errors.New(yamlkeys.Describe("", unknown))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sum := sha256.Sum256(data)
	s.hash = hex.EncodeToString(sum[:])
	return s, s.Validate()
}

var caseID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Validate checks what would otherwise fail in the middle of a run.
func (s *Suite) Validate() error {
	var errs []string
	if s.Name == "" {
		errs = append(errs, "the suite has no name")
	}
	if len(s.Cases) == 0 {
		errs = append(errs, "the suite has no cases")
	}
	if _, err := s.config(config.Default()); err != nil {
		errs = append(errs, err.Error())
	}
	seen := map[string]bool{}
	for i, c := range s.Cases {
		where := fmt.Sprintf("case %d (%s)", i+1, c.ID)
		switch {
		case !caseID.MatchString(c.ID):
			errs = append(errs, where+": id must be letters, digits, '.', '_' or '-'")
		case seen[c.ID]:
			errs = append(errs, where+": duplicate id")
		}
		seen[c.ID] = true
		if strings.TrimSpace(c.Task) == "" {
			errs = append(errs, where+": no task")
		}
		if c.AnswerFormat != "" && strings.TrimSpace(c.AnswerFormat) == "" {
			errs = append(errs, where+": answer_format is blank: write the rule in words (a single integer, digits only) or leave it out")
		}
		if c.Device.Recording != "" && (len(c.Device.Setup) > 0 || len(c.Device.Files) > 0 || c.Device.Start != "" || c.Device.PersistentShell) {
			errs = append(errs, where+": a recorded device takes no setup, files, start or persistent_shell")
		}
		for j, sc := range c.Device.Setup {
			if err := sc.validate(); err != nil {
				errs = append(errs, fmt.Sprintf("%s, setup %d: %v", where, j+1, err))
			}
		}
		model := c.Model
		if model == "" {
			model = s.Model
		}
		if model == ReplayModel && c.Device.Recording == "" {
			errs = append(errs, where+": model replay needs a recorded device")
		}
		if k := c.Constellation; k != nil {
			errs = append(errs, k.validate(where)...)
			if c.Device.Recording != "" {
				errs = append(errs, where+": a case runs a constellation (constellation:) or replays a recording (device.recording), not both")
			}
		}
		for j, ch := range c.Checks {
			if err := ch.validate(); err != nil {
				errs = append(errs, fmt.Sprintf("%s, check %d: %v", where, j+1, err))
			}
			switch {
			case ch.Node != nil && c.Constellation == nil && c.Device.Recording == "":
				errs = append(errs, fmt.Sprintf("%s, check %d: a node check needs a constellation: a case that targets one (constellation:) or replays one's recording (device.recording)", where, j+1))
			case c.Constellation != nil && (ch.State != nil || ch.ToolCalls != nil):
				errs = append(errs, fmt.Sprintf("%s, check %d: a constellation case's own checks are answer, node or judge checks; a state check goes under the device it reads (constellation.devices[].checks)", where, j+1))
			}
			if ch.Judge != nil && ch.Judge.Model == "" && s.Judge == "" {
				errs = append(errs, fmt.Sprintf("%s, check %d: a judge check needs a model (judge.model, or the suite's judge)", where, j+1))
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (c Check) validate() error {
	n := 0
	for _, set := range []bool{c.State != nil, c.ToolCalls != nil, c.Answer != nil, c.Judge != nil, c.Node != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("set exactly one of state, tool_calls, answer, judge, node (found %d)", n)
	}
	switch {
	case c.State != nil:
		n := 0
		for _, set := range []bool{c.State.Run != "", c.State.Tool != "", len(c.State.Pipeline) > 0} {
			if set {
				n++
			}
		}
		if n != 1 {
			return errors.New("state: set one of run (a shell command), tool or pipeline")
		}
		if len(c.State.Pipeline) > 0 && (c.State.Output != nil || c.State.Contains != "" || c.State.Regex != "" || c.State.ExitCode != nil) {
			return errors.New("state: a pipeline passes when its scripts exit 0; it takes no output, contains, regex or exit_code")
		}
		for i, sc := range c.State.Pipeline {
			if err := sc.validate(); err != nil {
				return fmt.Errorf("state.pipeline %d: %w", i+1, err)
			}
		}
		if c.State.Regex != "" {
			if _, err := regexp.Compile(c.State.Regex); err != nil {
				return fmt.Errorf("state.regex: %w", err)
			}
		}
	case c.ToolCalls != nil:
		switch c.ToolCalls.Match {
		case MatchStrict, MatchUnordered, MatchSubset, MatchSuperset:
		default:
			return fmt.Errorf("tool_calls.match %q: use strict, unordered, subset or superset", c.ToolCalls.Match)
		}
	case c.Answer != nil:
		a := c.Answer
		k := 0
		for _, set := range []bool{a.Exact != nil, a.Contains != "", a.Regex != "", a.Number != nil} {
			if set {
				k++
			}
		}
		if k != 1 {
			return errors.New("answer: set one of exact, contains, regex, number")
		}
		if a.Regex != "" {
			if _, err := regexp.Compile(a.Regex); err != nil {
				return fmt.Errorf("answer.regex: %w", err)
			}
		}
	case c.Judge != nil:
		if strings.TrimSpace(c.Judge.Rubric) == "" {
			return errors.New("judge: no rubric")
		}
	case c.Node != nil:
		return c.Node.validate()
	}
	return nil
}

// Answer formats an answer check implies (Case.Format): what a number
// check reads (the last number, so digits alone, with no separators a
// number could be split at) and what an exact check compares (the whole
// answer).
const (
	NumberFormat = "a single number in digits, with no words, units or thousands separators"
	ExactFormat  = "the exact value asked for, alone: no sentence, label or quotes around it"
)

// Format is the answer format the case's agents are told: its own
// answer_format, else the one its first answer check with number or exact
// implies (NumberFormat, ExactFormat), else none. A case that expects the
// agent to fail has none of its checks' making: its answer is the reason.
func (c Case) Format() string {
	if f := strings.TrimSpace(c.AnswerFormat); f != "" || c.ExpectFail {
		return f
	}
	for _, ch := range c.Checks {
		switch a := ch.Answer; {
		case a == nil:
		case a.Number != nil:
			return NumberFormat
		case a.Exact != nil:
			return ExactFormat
		}
	}
	return ""
}

// Kind names the check's kind: state, tool_calls, answer, judge or node.
func (c Check) Kind() string {
	switch {
	case c.State != nil:
		return "state"
	case c.ToolCalls != nil:
		return "tool_calls"
	case c.Answer != nil:
		return "answer"
	case c.Node != nil:
		return "node"
	default:
		return "judge"
	}
}

// Label is the check's name, or its kind and number.
func (c Check) Label(i int) string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("%s #%d", c.Kind(), i+1)
}

// path resolves a path written in the suite file.
func (s *Suite) path(p string) string {
	if p == "" || filepath.IsAbs(p) || s.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(s.File), p)
}

// model resolves a model spec written in the suite: a scripted model's
// script path is relative to the suite file.
func (s *Suite) model(spec string) string {
	if rest, ok := strings.CutPrefix(spec, "scripted:"); ok {
		return "scripted:" + s.path(rest)
	}
	return spec
}

// limits merges a case's limits over the suite's defaults.
func (s *Suite) limits(c Case) Limits {
	l := s.Defaults
	if c.Limits.MaxSteps > 0 {
		l.MaxSteps = c.Limits.MaxSteps
	}
	if c.Limits.MaxRounds > 0 {
		l.MaxRounds = c.Limits.MaxRounds
	}
	if c.Limits.Timeout > 0 {
		l.Timeout = c.Limits.Timeout
	}
	if c.Limits.MaxTokens > 0 {
		l.MaxTokens = c.Limits.MaxTokens
	}
	if c.Limits.Trials > 0 {
		l.Trials = c.Limits.Trials
	}
	if l.Trials <= 0 {
		l.Trials = 1
	}
	return l
}

// NeedsRoot is the label of cases that change the machine as root: they
// run only in a sandbox.
const NeedsRoot = "needs-root"

// sandboxed reports whether a live case runs in a sandbox.
func (s *Suite) sandboxed(c Case) bool {
	if c.Device.Sandbox != nil {
		return *c.Device.Sandbox
	}
	return s.Sandbox
}

// config is base with the suite's config laid over it.
func (s *Suite) config(base *config.Config) (*config.Config, error) {
	if len(s.Config) == 0 {
		return base, nil
	}
	data, err := yaml.Marshal(s.Config)
	if err != nil {
		return nil, fmt.Errorf("the suite's config: %w", err)
	}
	c, err := base.With(data, "(the suite's config)")
	if err != nil {
		return nil, fmt.Errorf("the suite's config: %w", err)
	}
	return c, nil
}

func (k *ConstellationCase) validate(where string) []string {
	var errs []string
	if len(k.Devices) == 0 || len(k.Plan) == 0 {
		errs = append(errs, where+": a constellation case needs its devices and its plan")
	}
	devices := map[string]bool{}
	for _, d := range k.Devices {
		if !caseID.MatchString(d.ID) {
			errs = append(errs, fmt.Sprintf("%s: constellation device %q: an id is letters, digits, '.', '_' or '-'", where, d.ID))
		}
		devices[d.ID] = true
		for j, ch := range d.Checks {
			if err := ch.validate(); err != nil {
				errs = append(errs, fmt.Sprintf("%s, device %s, check %d: %v", where, d.ID, j+1, err))
			}
			if ch.ToolCalls != nil || ch.Judge != nil || ch.Node != nil {
				errs = append(errs, fmt.Sprintf("%s, device %s, check %d: a device's checks are state or answer checks (node checks go in the case's checks)", where, d.ID, j+1))
			}
		}
	}
	for _, n := range k.Plan {
		if !devices[n.Device] || (n.Fallback != "" && !devices[n.Fallback]) {
			errs = append(errs, fmt.Sprintf("%s: plan node %q is on a device the case does not list (devices: %s)", where, n.ID, strings.Join(slices.Sorted(maps.Keys(devices)), ", ")))
		}
		if strings.TrimSpace(n.Run) == "" {
			errs = append(errs, fmt.Sprintf("%s: plan node %q has no run (the command its device runs)", where, n.ID))
		}
	}
	return errs
}
