package remote

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
)

// ProgressEvery is the least time between two progress frames of one
// command: a tool that reports faster has its latest report sent.
const ProgressEvery = 50 * time.Millisecond

// progressOut sends the tools' progress reports to the server as
// heartbeats with a progress field, from a goroutine of its own so that a
// slow connection never holds a tool: each command's latest report waits
// in a mailbox, and goes at most once per ProgressEvery. The goroutine is
// started by the first report (a device that never reports progress, as
// most idle ones, has none).
type progressOut struct {
	mu      sync.Mutex
	pending map[string]*aip.Progress // the latest unsent report, by call id
	last    map[string]time.Time     // when a report of the call was last sent
	wake    chan struct{}
	// sender starts the sending goroutine (set by Client.Run); sending
	// says it has been started.
	sender  func()
	sending bool
}

// newProgressOut makes an empty mailbox. Its maps are made by the first
// report: most devices are idle and never report.
func newProgressOut() *progressOut {
	return &progressOut{wake: make(chan struct{}, 1)}
}

// put leaves a report in the mailbox.
func (o *progressOut) put(p *aip.Progress) {
	o.mu.Lock()
	if o.pending == nil {
		o.pending, o.last = map[string]*aip.Progress{}, map[string]time.Time{}
	}
	o.pending[p.CallID] = p
	start := !o.sending && o.sender != nil
	o.sending = o.sending || start
	sender := o.sender
	o.mu.Unlock()
	if start {
		sender()
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// forget drops what is known of a call that has ended.
func (o *progressOut) forget(callID string) {
	o.mu.Lock()
	delete(o.pending, callID)
	delete(o.last, callID)
	o.mu.Unlock()
}

// due takes the reports that may go now, and says when the next one may.
func (o *progressOut) due(now time.Time) (out []*aip.Progress, next time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	next = -1
	for id, p := range o.pending {
		wait := ProgressEvery - now.Sub(o.last[id])
		if wait <= 0 {
			out = append(out, p)
			o.last[id] = now
			delete(o.pending, id)
			continue
		}
		if next < 0 || wait < next {
			next = wait
		}
	}
	return out, next
}

// sendProgress sends reports until ctx ends.
func (c *Client) sendProgress(ctx context.Context) {
	o := c.progress
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		case <-timer.C:
		}
		out, next := o.due(time.Now())
		for _, p := range out {
			c.send(ctx, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: c.opts.ClientID,
				Timestamp: aip.Timestamp(time.Now()), Progress: p})
		}
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// reporter returns the progress callback of command index of frame m:
// while the command runs, its reports go to a server that asked for them
// (Lifecycle.Progress); when a command left in the background ends, the
// server is told (queued across reconnections, as results are), and the
// command is no longer the session's to cancel.
func (c *Client) reporter(ctx context.Context, m *aip.ServerMessage, index int) func(command.Progress) {
	stream := m.Lifecycle != nil && m.Lifecycle.Progress
	return func(p command.Progress) {
		ap := &aip.Progress{ResponseID: m.ResponseID, CallID: p.CallID, State: string(p.State), Index: index,
			ElapsedMS: p.ElapsedMS, Progress: p.Progress, Total: p.Total, Message: p.Message}
		if !p.State.Terminal() {
			if stream {
				c.progress.put(ap)
			}
			return
		}
		c.progress.forget(p.CallID)
		c.mu.Lock()
		delete(c.background, p.CallID)
		c.mu.Unlock()
		c.opts.Logf("command %s (call %s) ended in the background: %s", p.Tool, p.CallID, p.State)
		c.deliver(ctx, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: c.opts.ClientID,
			SessionID: m.SessionID, Timestamp: aip.Timestamp(time.Now()), Progress: ap})
	}
}

// cancelBackground stops the commands a session left running in the
// background: its task has ended.
func (c *Client) cancelBackground(ctx context.Context, sessionID string) {
	c.mu.Lock()
	var ids []string
	for id, sid := range c.background {
		if sid == sessionID {
			ids = append(ids, id)
			delete(c.background, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		go func() {
			r := c.dev.Execute(ctx, command.Command{ToolName: command.CancelCommand, ToolType: command.Action,
				Parameters: map[string]any{"call_id": id}, CallID: "cancel-" + id})
			c.opts.Logf("task %s ended: cancelled its background command %s: %s", sessionID, id, resultLine(r))
		}()
	}
}

func resultLine(r command.Result) string {
	if r.OK() {
		return "ok"
	}
	return fmt.Sprintf("%s: %s", r.Status, r.Error)
}
