package aip

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/jsonw"
)

// ErrBadFrame is wrapped by every decoding error, so that a receiver can
// tell a peer's malformed frame from its own failures.
var ErrBadFrame = errors.New("bad AIP frame")

// badFrame formats a decoding error that wraps ErrBadFrame.
func badFrame(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFrame, fmt.Sprintf(format, args...))
}

// DecodeClient decodes one client → server frame. It accepts null and
// missing fields and ignores unknown ones; it refuses a frame that is not a
// JSON object, lacks type or status, or has a type or status AIP does not
// define (values are case-sensitive). An error frame without a status
// (UFO's client sends those) gets status error. A missing client_type means
// device. Per-type rules are Validate's.
func DecodeClient(b []byte) (*ClientMessage, error) {
	if err := checkObject(b); err != nil {
		return nil, err
	}
	m := &ClientMessage{}
	sc := &scanner{b: b}
	err := sc.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			var v string
			v, err = sc.str("type")
			m.Type = Type(v)
		case "status":
			var v string
			v, err = sc.str("status")
			m.Status = Status(v)
		case "client_type":
			var v string
			v, err = sc.str("client_type")
			m.ClientType = ClientType(v)
		case "session_id":
			m.SessionID, err = sc.str("session_id")
		case "task_name":
			m.TaskName, err = sc.str("task_name")
		case "client_id":
			m.ClientID, err = sc.str("client_id")
		case "target_id":
			m.TargetID, err = sc.str("target_id")
		case "request":
			m.Request, err = sc.str("request")
		case "timestamp":
			m.Timestamp, err = sc.str("timestamp")
		case "request_id":
			m.RequestID, err = sc.str("request_id")
		case "prev_response_id":
			m.PrevResponseID, err = sc.str("prev_response_id")
		case "error":
			m.Error, err = sc.str("error")
		case "action_results":
			m.ActionResults, err = sc.results()
		case "metadata":
			m.Metadata = nil
			if !sc.null() {
				if sc.peek() != '{' {
					return badFrame("metadata must be an object or null")
				}
				err = sc.into("metadata", &m.Metadata)
			}
		case "progress":
			m.Progress = nil
			if !sc.null() {
				m.Progress = &Progress{}
				err = sc.into("progress", m.Progress)
			}
		default:
			_, err = sc.value(1)
		}
		return err
	})
	if err == nil {
		err = sc.end()
	}
	if err != nil {
		return nil, err
	}
	switch {
	case m.Type == "":
		return nil, badFrame("the frame has no type")
	case !clientTypes[m.Type]:
		return nil, badFrame("unknown client message type %q", m.Type)
	case m.Status == "" && m.Type == TypeError:
		m.Status = StatusError // quirk: UFO's client omits it
	case m.Status == "":
		return nil, badFrame("the %s frame has no status", m.Type)
	}
	if !m.Status.Valid() {
		return nil, badFrame("unknown status %q", m.Status)
	}
	if m.ClientType == "" {
		m.ClientType = ClientDevice
	} else if !m.ClientType.Valid() {
		return nil, badFrame("unknown client_type %q", m.ClientType)
	}
	return m, nil
}

// results reads action_results: a list of Result objects, or null.
func (sc *scanner) results() ([]command.Result, error) {
	out := []command.Result{}
	null, err := sc.array("action_results", func() error {
		if sc.peek() != '{' {
			return badFrame("action_results must hold result objects")
		}
		var r command.Result
		err := sc.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "status":
				var v string
				v, err = sc.str("status")
				r.Status = command.ResultStatus(v)
			case "error":
				r.Error, err = sc.str("error")
			case "result":
				var raw []byte
				if raw, err = sc.value(1); err == nil {
					r.Result = nil
					if string(raw) != "null" {
						r.Result = append(json.RawMessage(nil), raw...)
					}
				}
			case "namespace":
				r.Namespace, err = sc.str("namespace")
			case "call_id":
				r.CallID, err = sc.str("call_id")
			default:
				_, err = sc.value(1)
			}
			return err
		})
		out = append(out, r)
		return err
	})
	if null || err != nil {
		return nil, err
	}
	return out, nil
}

// actions reads a command frame's actions: Command objects, or null.
func (sc *scanner) actions() ([]command.Command, error) {
	out := []command.Command{}
	null, err := sc.array("actions", func() error {
		if sc.peek() != '{' {
			return badFrame("actions must hold command objects")
		}
		var c command.Command
		err := sc.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "tool_name":
				c.ToolName, err = sc.str("tool_name")
			case "parameters":
				c.Parameters, err = sc.params()
			case "tool_type":
				var v string
				v, err = sc.str("tool_type")
				c.ToolType = command.ToolType(v)
			case "call_id":
				c.CallID, err = sc.str("call_id")
			case "namespace":
				c.Namespace, err = sc.str("namespace")
			default:
				_, err = sc.value(1)
			}
			return err
		})
		out = append(out, c)
		return err
	})
	if null || err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeServer decodes one server → client frame, as leniently as
// DecodeClient.
func DecodeServer(b []byte) (*ServerMessage, error) {
	if err := checkObject(b); err != nil {
		return nil, err
	}
	m := &ServerMessage{}
	sc := &scanner{b: b}
	err := sc.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "type":
			var v string
			v, err = sc.str("type")
			m.Type = Type(v)
		case "status":
			var v string
			v, err = sc.str("status")
			m.Status = Status(v)
		case "user_request":
			m.UserRequest, err = sc.str("user_request")
		case "agent_name":
			m.AgentName, err = sc.str("agent_name")
		case "process_name":
			m.ProcessName, err = sc.str("process_name")
		case "root_name":
			m.RootName, err = sc.str("root_name")
		case "actions":
			m.Actions, err = sc.actions()
		case "messages":
			m.Messages = []string{}
			var null bool
			null, err = sc.array("messages", func() error {
				v, err := sc.str("messages")
				m.Messages = append(m.Messages, v)
				return err
			})
			if null {
				m.Messages = nil
			}
		case "error":
			m.Error, err = sc.str("error")
		case "session_id":
			m.SessionID, err = sc.str("session_id")
		case "task_name":
			m.TaskName, err = sc.str("task_name")
		case "timestamp":
			m.Timestamp, err = sc.str("timestamp")
		case "response_id":
			m.ResponseID, err = sc.str("response_id")
		case "result":
			var raw []byte
			if raw, err = sc.value(1); err == nil {
				m.Result = nil
				if string(raw) != "null" {
					m.Result = append([]byte(nil), raw...)
				}
			}
		case "lifecycle":
			m.Lifecycle, err = sc.lifecycle()
		default:
			_, err = sc.value(1)
		}
		return err
	})
	if err == nil {
		err = sc.end()
	}
	if err != nil {
		return nil, err
	}
	switch {
	case m.Type == "":
		return nil, badFrame("the frame has no type")
	case !serverTypes[m.Type]:
		return nil, badFrame("unknown server message type %q", m.Type)
	case m.Status == "" && m.Type == TypeError:
		m.Status = StatusError
	case m.Status == "":
		return nil, badFrame("the %s frame has no status", m.Type)
	}
	if !m.Status.Valid() {
		return nil, badFrame("unknown status %q", m.Status)
	}
	return m, nil
}

// checkObject refuses input that is not one JSON object, before the costly
// decode and with a clearer message than encoding/json's.
func checkObject(b []byte) error {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 {
		return badFrame("the frame is empty")
	}
	if t[0] != '{' {
		return badFrame("the frame is not a JSON object")
	}
	return nil
}

// UnmarshalJSON decodes with DecodeClient's rules.
func (m *ClientMessage) UnmarshalJSON(b []byte) error {
	d, err := DecodeClient(b)
	if err != nil {
		return err
	}
	*m = *d
	return nil
}

// UnmarshalJSON decodes with DecodeServer's rules.
func (m *ServerMessage) UnmarshalJSON(b []byte) error {
	d, err := DecodeServer(b)
	if err != nil {
		return err
	}
	*m = *d
	return nil
}

// MarshalJSON encodes every field, null where unset, as UFO does.
func (m ClientMessage) MarshalJSON() ([]byte, error) { return m.Append(nil) }

// MarshalJSON encodes every field, null where unset, as UFO does.
func (m ServerMessage) MarshalJSON() ([]byte, error) { return m.Append(nil) }

// Append appends the frame's JSON to dst. Field order follows UFO's.
func (m *ClientMessage) Append(dst []byte) ([]byte, error) {
	b := append(dst, `{"type":`...)
	b = jsonw.AppendStringNoHTML(b, string(m.Type))
	b = append(b, `,"status":`...)
	b = jsonw.AppendStringNoHTML(b, string(m.Status))
	b = append(b, `,"client_type":`...)
	ct := m.ClientType
	if ct == "" {
		ct = ClientDevice
	}
	b = jsonw.AppendStringNoHTML(b, string(ct))
	b = appendField(b, "session_id", m.SessionID)
	b = appendField(b, "task_name", m.TaskName)
	b = appendField(b, "client_id", m.ClientID)
	b = appendField(b, "target_id", m.TargetID)
	b = appendField(b, "request", m.Request)
	b = append(b, `,"action_results":`...)
	if m.ActionResults == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range m.ActionResults {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendResult(b, r); err != nil {
				return dst, fmt.Errorf("aip: encode action result %d: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	b = appendField(b, "timestamp", m.Timestamp)
	b = appendField(b, "request_id", m.RequestID)
	b = appendField(b, "prev_response_id", m.PrevResponseID)
	b = appendField(b, "error", m.Error)
	b = append(b, `,"metadata":`...)
	var err error
	if b, err = appendJSON(b, m.Metadata, m.Metadata == nil); err != nil {
		return dst, fmt.Errorf("aip: encode metadata: %w", err)
	}
	if m.Progress != nil {
		b = append(b, `,"progress":`...)
		if b, err = appendJSON(b, m.Progress, false); err != nil {
			return dst, err
		}
	}
	return append(b, '}'), nil
}

// Append appends the frame's JSON to dst. Field order follows UFO's.
func (m *ServerMessage) Append(dst []byte) ([]byte, error) {
	b := append(dst, `{"type":`...)
	b = jsonw.AppendStringNoHTML(b, string(m.Type))
	b = append(b, `,"status":`...)
	b = jsonw.AppendStringNoHTML(b, string(m.Status))
	b = appendField(b, "user_request", m.UserRequest)
	b = appendField(b, "agent_name", m.AgentName)
	b = appendField(b, "process_name", m.ProcessName)
	b = appendField(b, "root_name", m.RootName)
	b = append(b, `,"actions":`...)
	if m.Actions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range m.Actions {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCommand(b, c); err != nil {
				return dst, fmt.Errorf("aip: encode action %d (%s): %w", i, c.ToolName, err)
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"messages":`...)
	if m.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range m.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendStringNoHTML(b, s)
		}
		b = append(b, ']')
	}
	b = appendField(b, "error", m.Error)
	b = appendField(b, "session_id", m.SessionID)
	b = appendField(b, "task_name", m.TaskName)
	b = appendField(b, "timestamp", m.Timestamp)
	b = appendField(b, "response_id", m.ResponseID)
	b = append(b, `,"result":`...)
	if len(m.Result) == 0 {
		b = append(b, "null"...)
	} else {
		if !json.Valid(m.Result) {
			return dst, fmt.Errorf("aip: the result payload is not valid JSON")
		}
		b = append(b, m.Result...)
	}
	if l := m.Lifecycle; l != nil {
		b = append(b, `,"lifecycle":{"created_at":"`...)
		b = l.CreatedAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
		if !l.ExpiresAt.IsZero() {
			b = append(b, `,"expires_at":"`...)
			b = l.ExpiresAt.AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
		if l.QueuedBy != "" {
			b = append(b, `,"queued_by":`...)
			b = jsonw.AppendStringNoHTML(b, l.QueuedBy)
		}
		if l.DetachAfter > 0 {
			b = append(b, `,"detach_after_ms":`...)
			b = strconv.AppendInt(b, l.DetachAfter.Milliseconds(), 10)
		}
		if l.Progress {
			b = append(b, `,"progress":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendCommand writes a Command as command.Command's MarshalJSON does,
// without going through reflection.
func appendCommand(b []byte, c command.Command) ([]byte, error) {
	b = append(b, `{"tool_name":`...)
	b = jsonw.AppendStringNoHTML(b, c.ToolName)
	b = append(b, `,"parameters":`...)
	var err error
	if b, err = appendJSON(b, c.Parameters, c.Parameters == nil); err != nil {
		return b, err
	}
	b = append(b, `,"tool_type":`...)
	b = jsonw.AppendStringNoHTML(b, string(c.ToolType))
	b = appendField(b, "call_id", c.CallID)
	if c.Namespace != "" {
		b = append(b, `,"namespace":`...)
		b = jsonw.AppendStringNoHTML(b, c.Namespace)
	}
	return append(b, '}'), nil
}

// AppendResults writes results as json.Marshal writes them (a JSON
// array), without reflection and without checking again what their
// MarshalJSON returns: for a server's journal, which records each
// round's results.
func AppendResults(b []byte, results []command.Result) ([]byte, error) {
	if results == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, r := range results {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendResult(b, r); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendResult writes a Result as command.Result's MarshalJSON does.
func appendResult(b []byte, r command.Result) ([]byte, error) {
	b = append(b, `{"status":`...)
	b = jsonw.AppendStringNoHTML(b, string(r.Status))
	b = appendField(b, "error", r.Error)
	b = append(b, `,"result":`...)
	if len(r.Result) == 0 {
		b = append(b, "null"...)
	} else {
		if !json.Valid(r.Result) {
			return b, fmt.Errorf("the result payload of call %s is not valid JSON", r.CallID)
		}
		b = append(b, r.Result...)
	}
	b = appendField(b, "namespace", r.Namespace)
	b = appendField(b, "call_id", r.CallID)
	return append(b, '}'), nil
}

// appendJSON appends v as json.Marshal writes it.
func appendJSON(b []byte, v any, null bool) ([]byte, error) {
	if null {
		return append(b, "null"...), nil
	}
	if m, ok := v.(map[string]any); ok {
		// Parameters and metadata are mostly strings, numbers and
		// booleans: write those without reflection. A value nested
		// suspiciously deep (a cycle), or one encoding/json refuses,
		// leaves the whole map to encoding/json, which says what is wrong.
		if out, ok := jsonw.AppendValue(b, m); ok {
			return out, nil
		}
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendField appends ,"name":"value" or ,"name":null for an empty value.
func appendField(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	if v == "" {
		return append(b, "null"...)
	}
	return jsonw.AppendStringNoHTML(b, v)
}
