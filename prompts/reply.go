package prompts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// Reply statuses. A status says what the agent wants to happen next; the
// agent's state machine acts on it.
const (
	// StatusContinue: run the actions and show me the results (app agent).
	StatusContinue = "CONTINUE"
	// StatusAssign: run the assign_subtask actions (host agent).
	StatusAssign = "ASSIGN"
	// StatusFinish: done; the answer is in Result.
	StatusFinish = "FINISH"
	// StatusFail: cannot be done; the reason is in Result.
	StatusFail = "FAIL"
	// StatusPending: the agent needs the user to answer the question in Comment.
	StatusPending = "PENDING"
	// StatusConfirm: the actions are risky; run them only if the user approves.
	StatusConfirm = "CONFIRM"
)

// HostStatuses are the statuses the default host prompt offers, for
// ParseReply's allowed list.
func HostStatuses() []string { return []string{StatusAssign, StatusFinish, StatusFail, StatusPending} }

// AppStatuses are the statuses the default app prompt offers, for
// ParseReply's allowed list.
func AppStatuses() []string {
	return []string{StatusContinue, StatusFinish, StatusFail, StatusConfirm, StatusPending}
}

// Reply is the JSON object a model sends in json mode.
type Reply struct {
	Observation string   `json:"observation" jsonschema:"required" jsonschema_description:"What the latest results show (at the start: what you know so far)."`
	Thought     string   `json:"thought" jsonschema:"required" jsonschema_description:"Your reasoning for this step, briefly."`
	Actions     []Action `json:"actions" jsonschema:"required" jsonschema_description:"Calls to run now, in order. Empty when there is nothing to run."`
	Status      string   `json:"status" jsonschema:"required,enum=CONTINUE,enum=ASSIGN,enum=FINISH,enum=FAIL,enum=PENDING,enum=CONFIRM,enum=SCREENSHOT" jsonschema_description:"What happens next; see the status list in the instructions."`
	Plan        []string `json:"plan" jsonschema_description:"The steps you expect after this one."`
	Comment     string   `json:"comment" jsonschema_description:"A message for the user; with PENDING, the question to ask."`
	Result      string   `json:"result" jsonschema_description:"With FINISH: the answer, complete. With FAIL: why it cannot be done."`
}

// Action is one call in a Reply: a tool of the app (app agent) or
// assign_subtask (host agent).
type Action struct {
	Function  string         `json:"function" jsonschema:"required" jsonschema_description:"Name of the tool, exactly as listed."`
	Arguments map[string]any `json:"arguments" jsonschema:"required" jsonschema_description:"Arguments matching the tool's input schema."`
}

// Decode copies the action's arguments into v, a pointer to a struct such
// as AssignArgs, through JSON.
func (a Action) Decode(v any) error {
	b, err := json.Marshal(a.Arguments)
	if err != nil {
		return fmt.Errorf("action %s: encode arguments: %w", a.Function, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("action %s: arguments do not fit %T: %w", a.Function, v, err)
	}
	return nil
}

// ReplySchema is the JSON schema of Reply, with every status in the enum.
func ReplySchema() json.RawMessage { return ReplySchemaFor(nil) }

// ReplySchemaFor is the JSON schema of Reply with the status enum narrowed
// to statuses (all statuses if statuses is empty), so that each agent's
// prompt shows only the statuses it may use.
func ReplySchemaFor(statuses []string) json.RawMessage {
	s := reflectSchema(&Reply{})
	if len(statuses) > 0 {
		if st, ok := s.Properties.Get("status"); ok {
			st.Enum = nil
			for _, v := range statuses {
				st.Enum = append(st.Enum, v)
			}
		}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		// The schema is built from our own types; failing here is a bug.
		panic(fmt.Sprintf("prompts: encode reply schema: %v", err))
	}
	return b
}

// reflectSchema builds a self-contained schema: no $ref, no $defs, no $id
// and no $schema, which OpenAI's tool and response-format checks reject.
func reflectSchema(v any) *jsonschema.Schema {
	r := &jsonschema.Reflector{
		DoNotReference:             true,
		ExpandedStruct:             true,
		Anonymous:                  true,
		RequiredFromJSONSchemaTags: true,
	}
	s := r.Reflect(v)
	s.Version = ""
	s.ID = ""
	return s
}

// ParseError says why a reply could not be used. Its Error text is written
// for the model: it is sent back as the re-ask.
type ParseError struct {
	// Reason says what was wrong, and often what to do instead.
	Reason string
	// Raw is the reply as the model sent it.
	Raw string
	// Err is the fault underneath, when there is one (ErrIncomplete).
	Err error
}

// Unwrap gives errors.Is the fault underneath.
func (e *ParseError) Unwrap() error { return e.Err }

// Error explains the fault and restates the expected form of the reply.
func (e *ParseError) Error() string {
	return e.Reason + " Reply again with exactly one JSON object with the fields observation, thought, actions, status, plan, comment and result, and no text outside it."
}

func parseErr(raw, format string, args ...any) *ParseError {
	return &ParseError{Reason: fmt.Sprintf(format, args...), Raw: raw}
}

// ParseReply reads a json-mode reply tolerantly. It drops <think> blocks,
// finds the JSON object among any prose or markdown fences, repairs the
// faults whose meaning is not in doubt (see RepairJSON), and decodes it with
// case-insensitive keys and common aliases. It then checks that status is
// present and, if allowed is not empty, one of allowed, and that every
// action names a function and has object arguments. A reply that was cut
// off is refused, never completed: its error matches ErrIncomplete. Every
// failure is a *ParseError. It takes time linear in the length of raw.
func ParseReply(raw string, allowed []string) (*Reply, error) {
	text := strings.TrimSpace(raw)
	if text == "" {
		return nil, parseErr(raw, "Your reply was empty.")
	}
	text, unclosedThinking := stripThinking(text)
	obj, err := findObject(text)
	if errors.Is(err, errNoObject) && unclosedThinking {
		return nil, parseErr(raw, "Your reply contains reasoning in an unclosed <think> block and no JSON object; keep the reasoning short and end with the JSON object.")
	}
	if err != nil {
		return nil, &ParseError{Reason: err.Error(), Raw: raw, Err: err}
	}
	r, err := decodeReply(obj)
	if err != nil {
		return nil, &ParseError{Reason: err.Error(), Raw: raw, Err: err}
	}
	if r.Status == "" {
		return nil, parseErr(raw, "Your reply has no \"status\"%s.", statusHint(allowed))
	}
	if len(allowed) > 0 && !slices.Contains(allowed, r.Status) {
		return nil, parseErr(raw, "Status %q is not allowed here; use one of %s.", r.Status, strings.Join(allowed, ", "))
	}
	return r, nil
}

func statusHint(allowed []string) string {
	if len(allowed) == 0 {
		return ""
	}
	return "; set it to one of " + strings.Join(allowed, ", ")
}
