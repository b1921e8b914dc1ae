// Package dispatcher sends Commands to a device and brings back one Result
// per Command. Every failure, whether the tool's, the transport's or a
// timeout, comes back as a failure Result: nothing is lost.
//
// Local runs commands on a device client in the same process; WebSocket
// (AIP to a remote client) and Replay (a recorded device) will follow.
package dispatcher

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
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
		l.newID = NewUUID
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
			stopped = StoppedBy(results[i])
		}
	}
	return results
}

// StoppedBy is why the commands after one with result r do not run, or ""
// when they do: r failed, or its command was left running in the
// background (command.WithDetach), which later actions usually depend on.
func StoppedBy(r command.Result) string {
	switch {
	case r.Status == command.Failure:
		return fmt.Sprintf("skipped: an earlier command (call_id %s) failed", r.CallID)
	case r.Running():
		return fmt.Sprintf("skipped: an earlier command (call_id %s) is still running in the background", r.CallID)
	}
	return ""
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

// NewUUID returns a random (version 4) UUID string.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(&b)
}

// NewTimeUUID returns a version 7 UUID string: the time in milliseconds,
// then random bits (RFC 9562). Ids made one after another sort in the
// order they were made, so a database indexed by them adds each new one
// beside the last instead of at a random page of its index: the server's
// task ids, which key its store's tasks and journal.
func NewTimeUUID() string {
	var b [16]byte
	rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(&b)
}

// formatUUID writes a UUID in its usual form, by hand rather than with
// fmt: three ids are made per command round trip, and fmt's five %x took
// a tenth of the server's share.
func formatUUID(b *[16]byte) string {
	const hex = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(s[:])
}
