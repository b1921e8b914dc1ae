// Package command is the vocabulary shared by strategies, dispatchers,
// device clients and the wire: a Command asks a device to run one tool, a
// Result says what happened, a ToolInfo describes a tool the device offers.
//
// The JSON names are those of UFO's Agent Interaction Protocol (AIP), so the
// same values travel unchanged between Saucer and UFO peers. UFO writes every
// field and null where unset; these types accept missing and null fields and
// write null for unset ones in the same way.
package command

import (
	"encoding/json"
	"fmt"
)

// ToolType says whether a tool only observes the device or changes it.
type ToolType string

const (
	DataCollection ToolType = "data_collection"
	Action         ToolType = "action"
)

// Valid reports whether t is one of the AIP tool types.
func (t ToolType) Valid() bool { return t == DataCollection || t == Action }

// Command asks the device to run one tool with its parameters.
type Command struct {
	ToolName   string         `json:"tool_name"`
	Parameters map[string]any `json:"parameters"`
	ToolType   ToolType       `json:"tool_type"`
	CallID     string         `json:"call_id"`
	// Namespace names the MCP server (the "app") that owns the tool. It is a
	// Saucer extension: UFO peers ignore it and route by agent instead.
	Namespace string `json:"namespace,omitempty"`
}

type commandWire struct {
	ToolName   string         `json:"tool_name"`
	Parameters map[string]any `json:"parameters"`
	ToolType   ToolType       `json:"tool_type"`
	CallID     *string        `json:"call_id"`
	Namespace  string         `json:"namespace,omitempty"`
}

// MarshalJSON writes null for an unset call id, as UFO does.
func (c Command) MarshalJSON() ([]byte, error) {
	return json.Marshal(commandWire{c.ToolName, c.Parameters, c.ToolType, nullable(c.CallID), c.Namespace})
}

// UnmarshalJSON accepts null and missing fields.
func (c *Command) UnmarshalJSON(b []byte) error {
	var w commandWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("command: %w", err)
	}
	*c = Command{ToolName: w.ToolName, Parameters: w.Parameters, ToolType: w.ToolType, CallID: deref(w.CallID), Namespace: w.Namespace}
	return nil
}

// Key is the AIP tool key, "{tool_type}::{tool_name}".
func (c Command) Key() string { return ToolKey(c.ToolType, c.ToolName) }

// ToolKey builds the AIP tool key "{tool_type}::{tool_name}".
func ToolKey(t ToolType, name string) string { return string(t) + "::" + name }

// String is a short human form: namespace.tool(params).
func (c Command) String() string {
	name := c.ToolName
	if c.Namespace != "" {
		name = c.Namespace + "." + name
	}
	p, _ := json.Marshal(c.Parameters)
	if c.Parameters == nil {
		p = []byte("{}")
	}
	return name + string(p)
}

// ResultStatus is the outcome of one Command.
type ResultStatus string

const (
	Success ResultStatus = "success"
	Failure ResultStatus = "failure"
	Skipped ResultStatus = "skipped"
	None    ResultStatus = "none"
)

// Result is what running one Command produced. Tool failures are data: they
// come back as a Result with status failure and an error the model can read.
type Result struct {
	Status ResultStatus `json:"status"`
	Error  string       `json:"error"`
	// Result is the tool's payload as JSON, kept as bytes so that it travels
	// and is recorded exactly as the tool produced it.
	Result    json.RawMessage `json:"result"`
	Namespace string          `json:"namespace"`
	CallID    string          `json:"call_id"`
}

type resultWire struct {
	Status    ResultStatus    `json:"status"`
	Error     *string         `json:"error"`
	Result    json.RawMessage `json:"result"`
	Namespace *string         `json:"namespace"`
	CallID    *string         `json:"call_id"`
}

// MarshalJSON writes null for unset fields, as UFO does.
func (r Result) MarshalJSON() ([]byte, error) {
	payload := r.Result
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	return json.Marshal(resultWire{r.Status, nullable(r.Error), payload, nullable(r.Namespace), nullable(r.CallID)})
}

// UnmarshalJSON accepts null and missing fields.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w resultWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	payload := w.Result
	if string(payload) == "null" {
		payload = nil
	}
	*r = Result{Status: w.Status, Error: deref(w.Error), Result: payload, Namespace: deref(w.Namespace), CallID: deref(w.CallID)}
	return nil
}

// OK reports whether the command succeeded.
func (r Result) OK() bool { return r.Status == Success }

// Succeeded builds a success Result whose payload is v encoded as JSON.
func Succeeded(callID string, v any) Result {
	b, err := json.Marshal(v)
	if err != nil {
		return Failed(callID, fmt.Sprintf("encode result: %v", err))
	}
	return Result{Status: Success, Result: b, CallID: callID}
}

// Failed builds a failure Result with a message for the model.
func Failed(callID, msg string) Result {
	return Result{Status: Failure, Error: msg, CallID: callID}
}

// SkippedResult builds the Result for a command that was not run.
func SkippedResult(callID, why string) Result {
	return Result{Status: Skipped, Error: why, CallID: callID}
}

// StoppedBy is why the commands after one with result r do not run, or ""
// when they do: r failed, or its command was left running in the
// background (WithDetach), which later actions usually depend on. Every
// dispatcher and device client stops a batch by it.
func StoppedBy(r Result) string {
	switch {
	case r.Status == Failure:
		return fmt.Sprintf("skipped: an earlier command (call_id %s) failed", r.CallID)
	case r.Running():
		return fmt.Sprintf("skipped: an earlier command (call_id %s) is still running in the background", r.CallID)
	}
	return ""
}

// ToolInfo describes one tool a device offers (AIP's MCPToolInfo).
type ToolInfo struct {
	Key          string          `json:"tool_key"`
	Name         string          `json:"tool_name"`
	Title        string          `json:"title"`
	Namespace    string          `json:"namespace"`
	ToolType     ToolType        `json:"tool_type"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Meta         map[string]any  `json:"meta"`
	Annotations  map[string]any  `json:"annotations"`
}

type toolInfoWire struct {
	Key          string          `json:"tool_key"`
	Name         string          `json:"tool_name"`
	Title        *string         `json:"title"`
	Namespace    string          `json:"namespace"`
	ToolType     ToolType        `json:"tool_type"`
	Description  *string         `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Meta         map[string]any  `json:"meta"`
	Annotations  map[string]any  `json:"annotations"`
}

// MarshalJSON writes null for unset fields, as UFO does.
func (t ToolInfo) MarshalJSON() ([]byte, error) {
	key := t.Key
	if key == "" {
		key = ToolKey(t.ToolType, t.Name)
	}
	return json.Marshal(toolInfoWire{key, t.Name, nullable(t.Title), t.Namespace, t.ToolType, nullable(t.Description),
		orNull(t.InputSchema), orNull(t.OutputSchema), t.Meta, t.Annotations})
}

// UnmarshalJSON accepts null and missing fields.
func (t *ToolInfo) UnmarshalJSON(b []byte) error {
	var w toolInfoWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("tool info: %w", err)
	}
	*t = ToolInfo{Key: w.Key, Name: w.Name, Title: deref(w.Title), Namespace: w.Namespace, ToolType: w.ToolType,
		Description: deref(w.Description), InputSchema: notNull(w.InputSchema), OutputSchema: notNull(w.OutputSchema),
		Meta: w.Meta, Annotations: w.Annotations}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}

func notNull(m json.RawMessage) json.RawMessage {
	if string(m) == "null" {
		return nil
	}
	return m
}
