// Package dispatcher sends Commands to a device and brings back one Result
// per Command. Every failure, whether the tool's, the transport's or a
// timeout, comes back as a failure Result: nothing is lost.
//
// Local runs commands on a device client in the same process; WebSocket
// (AIP to a remote client) and Replay (a recorded device) will follow.
package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/uuid"
)

// Dispatcher runs a batch of commands. It returns exactly one Result per
// Command, in the same order, each carrying its Command's call id.
type Dispatcher interface {
	Execute(ctx context.Context, cmds []command.Command) []command.Result
}

// Executor runs one command on a device; *client.Client is one. It reports
// every outcome as a Result.
type Executor interface {
	Execute(ctx context.Context, cmd command.Command) command.Result
}

// DefaultTimeout bounds one command when LocalOptions.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// LocalOptions configures a Local dispatcher. The zero value is usable.
type LocalOptions struct {
	// Timeout bounds each command; zero means DefaultTimeout.
	Timeout time.Duration
	// NewID makes call ids for commands that have none; nil means random
	// UUIDv4 strings.
	NewID func() string
}

// Local runs commands one after another on an Executor in the same
// process. It is safe for concurrent use if its Executor is.
type Local struct {
	exec    Executor
	timeout time.Duration
	newID   func() string
}

var _ Dispatcher = (*Local)(nil)

// NewLocal returns a dispatcher that runs commands on exec.
func NewLocal(exec Executor, opts LocalOptions) *Local {
	l := &Local{exec: exec, timeout: opts.Timeout, newID: opts.NewID}
	if l.timeout <= 0 {
		l.timeout = DefaultTimeout
	}
	if l.newID == nil {
		l.newID = uuid.New
	}
	return l
}

// Execute runs cmds in order and returns their Results in the same order.
//
// A command without a call id gets a fresh one; results[i].CallID is the id
// of cmds[i] (the caller's slice is not modified).
//
// Cancellation is honoured between commands, never in the middle of one: a
// command that has started runs to its end or its timeout, under a context
// that ctx's cancellation does not reach. Once ctx is done, the commands
// not yet started are Skipped with "cancelled before it ran: <cause>".
//
// A command that outlasts the timeout gets a failure Result "timed out
// after X" at the deadline, even if its executor ignores its context.
//
// After a command fails, the rest are Skipped, naming the failed call id:
// later actions usually depend on earlier ones, as in UFO's client. The
// same goes after a command left running in the background (its Result
// has status none: see command.WithDetach, which ctx may carry to the
// executor).
func (l *Local) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	results := make([]command.Result, len(cmds))
	ids := make([]string, len(cmds))
	for i, cmd := range cmds {
		ids[i] = cmd.CallID
		if ids[i] == "" {
			ids[i] = l.newID()
		}
	}
	stopped := ""
	for i, cmd := range cmds {
		cmd.CallID = ids[i]
		switch {
		case ctx.Err() != nil:
			results[i] = skipped(cmd, fmt.Sprintf("cancelled before it ran: %v", context.Cause(ctx)))
		case stopped != "":
			results[i] = skipped(cmd, stopped)
		default:
			results[i] = l.run(ctx, cmd)
			stopped = command.StoppedBy(results[i])
		}
	}
	return results
}

func skipped(cmd command.Command, why string) command.Result {
	r := command.SkippedResult(cmd.CallID, why)
	r.Namespace = cmd.Namespace
	return r
}

// run executes one command under its own timeout, detached from ctx's
// cancellation. The executor runs in a goroutine so that the timeout holds
// even when it ignores its context; such a goroutine finishes on its own.
func (l *Local) run(ctx context.Context, cmd command.Command) command.Result {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	done := make(chan command.Result, 1) // buffered: a late result must not block its goroutine
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- command.Failed(cmd.CallID, fmt.Sprintf("%s crashed the executor: %v", cmd.ToolName, p))
			}
		}()
		done <- l.exec.Execute(ctx, cmd)
	}()
	var r command.Result
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // finished at the deadline; keep its own result
		default:
			r = command.Failed(cmd.CallID, fmt.Sprintf("%s timed out after %s", cmd.ToolName, l.timeout))
		}
	}
	if ctx.Err() != nil && r.Status != command.Success && !strings.HasPrefix(r.Error, cmd.ToolName+" timed out") {
		// The executor noticed the deadline first; say which deadline it was.
		r.Error = fmt.Sprintf("%s timed out after %s: %s", cmd.ToolName, l.timeout, r.Error)
	}
	r.CallID = cmd.CallID // an executor that loses the id must not break the pairing
	if r.Namespace == "" {
		r.Namespace = cmd.Namespace
	}
	return r
}
