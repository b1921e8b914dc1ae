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
	m, sc := &ClientMessage{}, &scanner{b: b}
	err := sc.frame(func(key []byte) error { // the frame's field set
		var err error
		switch string(key) {
		case "type":
			m.Type, err = strAs[Type](sc, "type")
		case "status":
			m.Status, err = strAs[Status](sc, "status")
		case "client_type":
			m.ClientType, err = strAs[ClientType](sc, "client_type")
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
			m.ActionResults, err = objects(sc, "action_results", "result", sc.result)
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
	if err != nil {
		return nil, err
	}
	if err := checkHead("client", clientTypes, m.Type, &m.Status); err != nil {
		return nil, err
	}
	if m.ClientType == "" {
		m.ClientType = ClientDevice
	} else if !m.ClientType.Valid() {
		return nil, badFrame("unknown client_type %q", m.ClientType)
	}
	return m, nil
}

// DecodeServer decodes one server → client frame, as leniently as
// DecodeClient.
func DecodeServer(b []byte) (*ServerMessage, error) {
	m, sc := &ServerMessage{}, &scanner{b: b}
	err := sc.frame(func(key []byte) error { // the frame's field set
		var err error
		switch string(key) {
		case "type":
			m.Type, err = strAs[Type](sc, "type")
		case "status":
			m.Status, err = strAs[Status](sc, "status")
		case "user_request":
			m.UserRequest, err = sc.str("user_request")
		case "agent_name":
			m.AgentName, err = sc.str("agent_name")
		case "process_name":
			m.ProcessName, err = sc.str("process_name")
		case "root_name":
			m.RootName, err = sc.str("root_name")
		case "actions":
			m.Actions, err = objects(sc, "actions", "command", sc.command)
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
			m.Result, err = sc.payload()
		case "lifecycle":
			m.Lifecycle, err = sc.lifecycle()
		default:
			_, err = sc.value(1)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := checkHead("server", serverTypes, m.Type, &m.Status); err != nil {
		return nil, err
	}
	return m, nil
}

// frame is the walk both directions share: it refuses input that is not
// one JSON object, and hands each key of the object to field, which reads
// the value (a message's field set: the keys it has, the others passed
// over).
//
// The scanner is passed to no function value (field and the like use the
// one they were made with), so that it stays off the heap; and a key costs
// one call through a function value, as a walk written out for each
// message would.
func (sc *scanner) frame(field func(key []byte) error) error {
	if err := checkObject(sc.b); err != nil {
		return err
	}
	if err := sc.object(field); err != nil {
		return err
	}
	return sc.end()
}

// checkHead checks what every frame carries: a type, one of types (dir
// names the direction in the error), and an AIP status. An error frame
// without a status gets status error.
func checkHead(dir string, types map[Type]bool, typ Type, status *Status) error {
	switch {
	case typ == "":
		return badFrame("the frame has no type")
	case !types[typ]:
		return badFrame("unknown %s message type %q", dir, typ)
	case *status == "" && typ == TypeError:
		*status = StatusError // quirk: UFO's client omits it
	case *status == "":
		return badFrame("the %s frame has no status", typ)
	}
	if !status.Valid() {
		return badFrame("unknown status %q", *status)
	}
	return nil
}

// result reads an action result's object into r (its field set: the keys
// a Result has, the others passed over).
func (sc *scanner) result(r *command.Result) error {
	return sc.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "status":
			r.Status, err = strAs[command.ResultStatus](sc, "status")
		case "error":
			r.Error, err = sc.str("error")
		case "result":
			r.Result, err = sc.payload()
		case "namespace":
			r.Namespace, err = sc.str("namespace")
		case "call_id":
			r.CallID, err = sc.str("call_id")
		default:
			_, err = sc.value(1)
		}
		return err
	})
}

// command reads an action's object into c (its field set: the keys a
// Command has, the others passed over).
func (sc *scanner) command(c *command.Command) error {
	return sc.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "tool_name":
			c.ToolName, err = sc.str("tool_name")
		case "parameters":
			c.Parameters, err = sc.params()
		case "tool_type":
			c.ToolType, err = strAs[command.ToolType](sc, "tool_type")
		case "call_id":
			c.CallID, err = sc.str("call_id")
		case "namespace":
			c.Namespace, err = sc.str("namespace")
		default:
			_, err = sc.value(1)
		}
		return err
	})
}

// objects reads the list of objects under name, or null (nil): what the
// objects are (in the error for an element that is not one), and elem
// reading one into its element.
func objects[T any](sc *scanner, name, what string, elem func(v *T) error) ([]T, error) {
	out := []T{}
	null, err := sc.array(name, func() error {
		if sc.peek() != '{' {
			return badFrame("%s must hold %s objects", name, what)
		}
		out = append(out, *new(T))
		return elem(&out[len(out)-1]) // read into its place: no copy per element
	})
	if null || err != nil {
		return nil, err
	}
	return out, nil
}

// strAs reads a string or null ("") for the named field, as one of the
// string types of the frame's enums.
func strAs[T ~string](sc *scanner, name string) (T, error) {
	v, err := sc.str(name)
	return T(v), err
}

// payload reads a raw JSON value, copied out of the frame, or null (nil).
func (sc *scanner) payload() ([]byte, error) {
	raw, err := sc.value(1)
	if err != nil || string(raw) == "null" {
		return nil, err
	}
	return append([]byte(nil), raw...), nil
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
	b, i, err := appendList(b, m.ActionResults, appendResult)
	if err != nil {
		return dst, fmt.Errorf("aip: encode action result %d: %w", i, err)
	}
	b = appendField(b, "timestamp", m.Timestamp)
	b = appendField(b, "request_id", m.RequestID)
	b = appendField(b, "prev_response_id", m.PrevResponseID)
	b = appendField(b, "error", m.Error)
	b = append(b, `,"metadata":`...)
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
	b, i, err := appendList(b, m.Actions, appendCommand)
	if err != nil {
		return dst, fmt.Errorf("aip: encode action %d (%s): %w", i, m.Actions[i].ToolName, err)
	}
	b = append(b, `,"messages":`...)
	b, _, _ = appendList(b, m.Messages, func(b []byte, s string) ([]byte, error) {
		return jsonw.AppendStringNoHTML(b, s), nil
	})
	b = appendField(b, "error", m.Error)
	b = appendField(b, "session_id", m.SessionID)
	b = appendField(b, "task_name", m.TaskName)
	b = appendField(b, "timestamp", m.Timestamp)
	b = appendField(b, "response_id", m.ResponseID)
	b = append(b, `,"result":`...)
	if b, err = appendPayload(b, m.Result); err != nil {
		return dst, fmt.Errorf("aip: the result payload is not valid JSON")
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
	b, _, err := appendList(b, results, appendResult)
	return b, err
}

// appendResult writes a Result as command.Result's MarshalJSON does.
func appendResult(b []byte, r command.Result) ([]byte, error) {
	b = append(b, `{"status":`...)
	b = jsonw.AppendStringNoHTML(b, string(r.Status))
	b = appendField(b, "error", r.Error)
	b = append(b, `,"result":`...)
	b, err := appendPayload(b, r.Result)
	if err != nil {
		return b, fmt.Errorf("the result payload of call %s is not valid JSON", r.CallID)
	}
	b = appendField(b, "namespace", r.Namespace)
	b = appendField(b, "call_id", r.CallID)
	return append(b, '}'), nil
}

// appendList appends items as a JSON list (nil: null), each as elem writes
// it; on elem's error it stops and returns the item's index.
func appendList[T any](b []byte, items []T, elem func([]byte, T) ([]byte, error)) ([]byte, int, error) {
	if items == nil {
		return append(b, "null"...), 0, nil
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = elem(b, it); err != nil {
			return b, i, err
		}
	}
	return append(b, ']'), 0, nil
}

// errNotJSON is appendPayload's refusal; its callers say whose payload.
var errNotJSON = errors.New("not valid JSON")

// appendPayload appends a raw JSON payload, null when it is empty.
func appendPayload(b, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	if !json.Valid(raw) {
		return b, errNotJSON
	}
	return append(b, raw...), nil
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
