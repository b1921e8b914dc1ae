package command

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Names of the commands that look after a command left running in the
// background (see WithDetach). A Saucer device client answers them itself,
// at once, even while other commands run.
const (
	// CommandStatus reports how a command is doing: its latest progress
	// while it runs, its result once it has ended; parameters {call_id,
	// wait?} (wait: seconds to wait for the command to end first).
	CommandStatus = "command_status"
	// CancelCommand stops a running command (the tool is cancelled, a
	// shell command killed with every process it started) and reports how
	// it ended; parameters {call_id}.
	CancelCommand = "cancel_command"
)

// IsBackgroundControl reports whether name is one of the commands that
// look after background commands.
func IsBackgroundControl(name string) bool { return name == CommandStatus || name == CancelCommand }

// Progress is one progress report of a running command: what its tool
// said (MCP's notifications/progress), tagged with the command it belongs
// to. A report with a final State says that a command left running in the
// background has ended.
type Progress struct {
	CallID    string `json:"call_id"`
	Namespace string `json:"namespace,omitempty"`
	Tool      string `json:"tool_name,omitempty"`
	// Progress is how far the command has come; it grows from one report
	// to the next. Total is the value it ends at, zero when unknown.
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	// Message says what is happening: a step, or the latest lines of
	// output (one per line).
	Message string `json:"message,omitempty"`
	// State is running, or how a background command ended.
	State State `json:"state,omitempty"`
	// ElapsedMS is how long the command had run at this report.
	ElapsedMS int64 `json:"elapsed_ms,omitempty"`
}

type progressKey struct{}

// WithProgress returns a context under which the commands run on it report
// their progress to fn: a dispatcher passes the context to its device, a
// device client to each tool call. fn is called from the goroutine that
// reads the tool's reports, possibly after the call that set it returned
// (a background command goes on reporting): it must return quickly and be
// safe for concurrent use.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressFrom returns the callback set by WithProgress, or nil.
func ProgressFrom(ctx context.Context) func(Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn
}

type detachKey struct{}

// WithDetach returns a context under which a command that runs longer
// than after is left running in the background: its Result, with status
// none, says that it is still running and how it is doing (a Status), and
// the commands after it in the same batch are skipped. CommandStatus and
// CancelCommand then look after it. Zero or less: commands are waited for.
func WithDetach(ctx context.Context, after time.Duration) context.Context {
	return context.WithValue(ctx, detachKey{}, after)
}

// DetachFrom returns the duration set by WithDetach, or 0.
func DetachFrom(ctx context.Context) time.Duration {
	d, _ := ctx.Value(detachKey{}).(time.Duration)
	return d
}

// Status is what a device knows of a command it runs or ran: the answer to
// CommandStatus and CancelCommand, and the payload of the Result of a
// command left running in the background.
type Status struct {
	CallID    string `json:"call_id"`
	Namespace string `json:"namespace,omitempty"`
	Tool      string `json:"tool_name"`
	// State is running, or how the command ended (completed, failed,
	// cancelled).
	State     State `json:"state"`
	ElapsedMS int64 `json:"elapsed_ms"`
	// The latest progress report, if the tool sent any.
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
	// Result is the command's result once it has ended.
	Result *Result `json:"result,omitempty"`
	// Note tells the model what it can do next.
	Note string `json:"note,omitempty"`
}

// Running is the Result of a command left running in the background:
// status none (AIP's "no result"; Saucer's "not yet") with its Status as
// the payload.
func Running(s Status) Result {
	b, err := json.Marshal(s)
	if err != nil {
		return Failed(s.CallID, fmt.Sprintf("encode the status of %s: %v", s.Tool, err))
	}
	return Result{Status: None, Result: b, Namespace: s.Namespace, CallID: s.CallID}
}

// Running reports whether the command has not ended: it was left running
// in the background (see WithDetach). Status none alone does not say so:
// UFO's result statuses include none, so a UFO device may send it for a
// command that has ended; the result must carry a Status of a running
// command (as Running makes it).
func (r Result) Running() bool {
	if r.Status != None || len(r.Result) == 0 {
		return false
	}
	var s struct {
		State State `json:"state"`
	}
	return json.Unmarshal(r.Result, &s) == nil && s.State == StateRunning
}
