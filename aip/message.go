// Package aip is the Agent Interaction Protocol (AIP) that Microsoft UFO's
// agent server and device clients speak, as Saucer speaks it: the message
// types, their JSON codec, the validation rules, and a connection wrapper
// over coder/websocket.
//
// The JSON is UFO's exactly: every field written, null where unset;
// missing, null and unknown fields accepted on input; enum values
// lower-case and case-sensitive. Saucer's own additions travel as extra
// JSON fields (Lifecycle on command frames, Progress on heartbeats,
// namespaces and Resends in registration metadata) that UFO peers ignore.
package aip

import (
	"math"
	"time"

	"github.com/saucerhq/saucer/command"
)

// Type is a frame's message type.
type Type string

// The message types. A ClientMessage may carry every type but command; a
// ServerMessage every type but register and command_results.
const (
	TypeRegister           Type = "register"
	TypeHeartbeat          Type = "heartbeat"
	TypeTask               Type = "task"
	TypeCommand            Type = "command"
	TypeCommandResults     Type = "command_results"
	TypeTaskEnd            Type = "task_end"
	TypeError              Type = "error"
	TypeDeviceInfoRequest  Type = "device_info_request"
	TypeDeviceInfoResponse Type = "device_info_response"
)

// ClientTypes lists the types a client may send, ServerTypes those a server
// may send.
var (
	clientTypes = map[Type]bool{TypeRegister: true, TypeHeartbeat: true, TypeTask: true, TypeCommandResults: true,
		TypeTaskEnd: true, TypeError: true, TypeDeviceInfoRequest: true, TypeDeviceInfoResponse: true}
	serverTypes = map[Type]bool{TypeHeartbeat: true, TypeTask: true, TypeCommand: true, TypeTaskEnd: true,
		TypeError: true, TypeDeviceInfoRequest: true, TypeDeviceInfoResponse: true}
)

// Status is a frame's task status.
type Status string

// The statuses.
const (
	StatusContinue  Status = "continue"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusOK        Status = "ok"
	StatusError     Status = "error"
)

// Valid reports whether s is one of the AIP statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusContinue, StatusCompleted, StatusFailed, StatusOK, StatusError:
		return true
	}
	return false
}

// ClientType says what kind of peer registered.
type ClientType string

// The client types.
const (
	ClientDevice        ClientType = "device"
	ClientConstellation ClientType = "constellation"
)

// Valid reports whether t is one of the AIP client types.
func (t ClientType) Valid() bool { return t == ClientDevice || t == ClientConstellation }

// ClientMessage is a frame from a client to the server. String fields are
// empty where the wire has null or nothing.
type ClientMessage struct {
	Type       Type
	Status     Status
	ClientType ClientType
	SessionID  string
	TaskName   string
	ClientID   string
	TargetID   string
	// Request is a task frame's request text.
	Request string
	// ActionResults are a command_results frame's results, in the order of
	// the command frame's actions.
	ActionResults []command.Result
	Timestamp     string
	RequestID     string
	// PrevResponseID is the response_id of the command frame answered.
	PrevResponseID string
	Error          string
	// Metadata is free-form: registration metadata, device info pushes.
	Metadata map[string]any

	// Progress (Saucer extension, on heartbeats) reports a command that is
	// still running on the device.
	Progress *Progress
}

// ServerMessage is a frame from the server to a client. String fields are
// empty where the wire has null or nothing.
type ServerMessage struct {
	Type        Type
	Status      Status
	UserRequest string
	AgentName   string
	ProcessName string
	RootName    string
	// Actions are a command frame's commands, run in order.
	Actions   []command.Command
	Messages  []string
	Error     string
	SessionID string
	TaskName  string
	Timestamp string
	// ResponseID identifies this frame; a command_results frame answers it
	// with the same value as prev_response_id.
	ResponseID string
	// Result is any JSON payload (task_end, device_info_response); nil
	// means null.
	Result []byte

	// Lifecycle (Saucer extension, on command frames) says when the
	// commands were queued, by whom, and when they expire.
	Lifecycle *Lifecycle
}

// Lifecycle is the durable-command information a Saucer server adds to a
// command frame (JSON field "lifecycle"). A device must not start a command
// after ExpiresAt.
type Lifecycle struct {
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	QueuedBy  string    `json:"queued_by,omitempty"`
	// DetachAfter (JSON "detach_after_ms", in milliseconds) asks the
	// device to leave a command that runs longer than this in the
	// background: it answers the frame at once with that command's Result
	// in status none (command.Running), skips the rest, and reports the
	// command's end later as a progress report with its final state.
	// Zero: every command is waited for.
	DetachAfter time.Duration `json:"-"`
	// Progress asks the device to send the commands' progress reports as
	// they come (Progress on heartbeats), not only at each heartbeat.
	Progress bool `json:"progress,omitempty"`
}

// Expired reports whether a command of this frame may no longer start.
func (l *Lifecycle) Expired(now time.Time) bool {
	return l != nil && !l.ExpiresAt.IsZero() && now.After(l.ExpiresAt)
}

// MetaToolsVersion (Saucer extension) is the registration and heartbeat
// metadata key of the device's tool list version: a number that changes
// whenever the list does. A server that sees it change asks the device
// for its tools again (get_mcp_tools, in a command frame of its own); a
// client that sends it answers that outside a task. UFO's clients send
// none.
const MetaToolsVersion = "tools_version"

// ToolsVersionOf reads MetaToolsVersion from metadata: ok is false when
// the client sent none.
func ToolsVersionOf(meta map[string]any) (v uint64, ok bool) {
	switch n := meta[MetaToolsVersion].(type) {
	case uint64:
		return n, true
	case float64:
		return uint64(n), n >= 0
	case int:
		return uint64(n), n >= 0
	}
	return 0, false
}

// MetaReconnectWithin (Saucer extension) is the registration metadata
// key of the longest a client takes, in milliseconds, to register again
// once the server can be reached: its reconnection backoff's cap plus its
// registration timeout. A server waits that long beyond its away timeout
// for a device that left, so that an outage shorter than the away timeout
// never outlasts it while the client is still in its backoff. UFO's
// clients send none.
const MetaReconnectWithin = "reconnect_within_ms"

// ReconnectWithinOf reads MetaReconnectWithin from metadata: zero when
// the client sent none, or nothing readable.
func ReconnectWithinOf(meta map[string]any) time.Duration {
	var ms float64
	switch n := meta[MetaReconnectWithin].(type) {
	case float64:
		ms = n
	case int64:
		ms = float64(n)
	case int:
		ms = float64(n)
	}
	if ms <= 0 || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// ResultStopCommands (Saucer extension) is a key of a failed task_end's
// result: true when the server gave up on the device because it stayed
// away too long, so that the task's work may be done elsewhere. A Saucer
// client that gets it stops the task's command in progress (cancel, as
// cancel_command does) and runs none of its frames still queued, instead
// of letting the running command finish.
const ResultStopCommands = "stop_commands"

// MetaResends is the registration metadata key of Resends.
const MetaResends = "resends"

// Resends (Saucer extension, registration metadata "resends") says what a
// client does with a command frame it gets again, with a response_id it
// has seen: it answers from its memory instead of running the frame
// again. A client that does not say so (UFO's) is taken to run it again,
// so a server does not send it a frame that may have reached it before.
type Resends struct {
	// Instance names this run of the client: frames it was sent by this
	// run are answered from its memory.
	Instance string `json:"instance"`
	// Journal says frames sent to earlier runs are answered too, from a
	// journal that outlives them (a run killed in the middle of a command
	// reports it interrupted instead of running it again).
	Journal bool `json:"journal"`
}

// ResendsOf reads Resends from registration metadata; nil when the client
// says nothing (or something unreadable) about resent frames.
func ResendsOf(meta map[string]any) *Resends {
	switch v := meta[MetaResends].(type) {
	case Resends:
		return &v
	case *Resends:
		return v
	case map[string]any:
		r := &Resends{}
		r.Instance, _ = v["instance"].(string)
		r.Journal, _ = v["journal"].(bool)
		if r.Instance == "" && !r.Journal {
			return nil
		}
		return r
	}
	return nil
}

// Progress is a Saucer device's report that a command is running, and how
// it is doing (JSON field "progress" on a heartbeat, which UFO servers
// simply acknowledge). A device sends one at each heartbeat while a
// command runs; to a server that asked for them (Lifecycle.Progress), one
// for each of the tool's reports too (a few a second at most), and one
// when a command left in the background ends.
type Progress struct {
	ResponseID string `json:"response_id"`
	CallID     string `json:"call_id"`
	// State is "running", or how a command left in the background ended
	// (a command.State: completed, failed, cancelled).
	State string `json:"state"`
	// Index is the command's position in its frame.
	Index int `json:"index"`
	// Elapsed is how long the command has run, in milliseconds.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Progress, Total and Message are the tool's latest report
	// (notifications/progress), when it sent one; Message is the latest
	// lines of a command's output.
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Timestamp formats t the way UFO does: ISO-8601 in UTC with microseconds
// and an explicit offset.
func Timestamp(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format("2006-01-02T15:04:05.000000+00:00")
	}
	// By hand: every frame carries one, and Format parses its layout
	// each time.
	hour, minute, sec := t.Clock()
	b := []byte("0000-00-00T00:00:00.000000+00:00")
	put := func(at, width, v int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, 4, year)
	put(5, 2, int(month))
	put(8, 2, day)
	put(11, 2, hour)
	put(14, 2, minute)
	put(17, 2, sec)
	put(20, 6, t.Nanosecond()/1000)
	return string(b)
}
