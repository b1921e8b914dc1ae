package trajectory

import (
	"encoding/json"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

// eventOut is Event as the writer hands it to encoding/json: the same
// fields in the same order with the same tags, but commands and results
// in the form their MarshalJSON writes. encoding/json then encodes them
// in place, where through MarshalJSON it encodes each one apart and scans
// that output again (a quarter of what encoding a served task's events
// cost). The line is the same, byte for byte: TestEventOutEncodesAsEvent.
type eventOut struct {
	Seq          int                `json:"seq"`
	Time         time.Time          `json:"time"`
	Type         Type               `json:"type"`
	Agent        string             `json:"agent,omitempty"`
	Role         string             `json:"role,omitempty"`
	App          string             `json:"app,omitempty"`
	Subtask      string             `json:"subtask,omitempty"`
	Round        int                `json:"round,omitempty"`
	Step         int                `json:"step,omitempty"`
	Phase        string             `json:"phase,omitempty"`
	Session      *Session           `json:"session,omitempty"`
	Call         *Call              `json:"call,omitempty"`
	Commands     []commandOut       `json:"commands,omitempty"`
	Results      []resultOut        `json:"results,omitempty"`
	Decision     *Decision          `json:"decision,omitempty"`
	Status       string             `json:"status,omitempty"`
	From         string             `json:"from,omitempty"`
	To           string             `json:"to,omitempty"`
	Observations []Observation      `json:"observations,omitempty"`
	Usage        *llm.Usage         `json:"usage,omitempty"`
	Attempts     int                `json:"attempts,omitempty"`
	DurationMS   float64            `json:"duration_ms,omitempty"`
	TimingsMS    map[string]float64 `json:"timings_ms,omitempty"`
	Errors       []string           `json:"errors,omitempty"`
	Error        string             `json:"error,omitempty"`
	Note         *Note              `json:"note,omitempty"`
	End          *End               `json:"end,omitempty"`
	Progress     *command.Progress  `json:"progress,omitempty"`
}

// commandOut is command.Command as its MarshalJSON writes it: null for
// an unset call id.
type commandOut struct {
	ToolName   string           `json:"tool_name"`
	Parameters map[string]any   `json:"parameters"`
	ToolType   command.ToolType `json:"tool_type"`
	CallID     *string          `json:"call_id"`
	Namespace  string           `json:"namespace,omitempty"`
}

// resultOut is command.Result as its MarshalJSON writes it: null for
// unset fields and an empty payload.
type resultOut struct {
	Status    command.ResultStatus `json:"status"`
	Error     *string              `json:"error"`
	Result    json.RawMessage      `json:"result"`
	Namespace *string              `json:"namespace"`
	CallID    *string              `json:"call_id"`
}

var jsonNull = json.RawMessage("null")

// out is e as the writer encodes it.
func (e *Event) out() eventOut {
	o := eventOut{Seq: e.Seq, Time: e.Time, Type: e.Type, Agent: e.Agent, Role: e.Role, App: e.App, Subtask: e.Subtask,
		Round: e.Round, Step: e.Step, Phase: e.Phase, Session: e.Session, Call: e.Call, Decision: e.Decision,
		Status: e.Status, From: e.From, To: e.To, Observations: e.Observations, Usage: e.Usage, Attempts: e.Attempts,
		DurationMS: e.DurationMS, TimingsMS: e.TimingsMS, Errors: e.Errors, Error: e.Error, Note: e.Note, End: e.End,
		Progress: e.Progress}
	if e.Commands != nil {
		o.Commands = make([]commandOut, len(e.Commands))
		for i, c := range e.Commands {
			o.Commands[i] = commandOut{c.ToolName, c.Parameters, c.ToolType, nullable(c.CallID), c.Namespace}
		}
	}
	if e.Results != nil {
		o.Results = make([]resultOut, len(e.Results))
		for i, r := range e.Results {
			payload := r.Result
			if len(payload) == 0 {
				payload = jsonNull
			}
			o.Results[i] = resultOut{r.Status, nullable(r.Error), payload, nullable(r.Namespace), nullable(r.CallID)}
		}
	}
	return o
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
