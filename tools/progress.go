package tools

import (
	"context"
	"sync"
)

// StreamProgress is the stream of progress reports, which any tool may
// send.
const StreamProgress = "progress"

// Progress is one progress report of a running tool call.
type Progress struct {
	// Progress is how far the call has come; it must grow from one report
	// to the next (MCP requires it).
	Progress float64
	// Total is the value Progress ends at, or 0 when it is not known.
	Total float64
	// Message says what is happening: a step, or an item of one of the
	// tool's declared streams (a line of output).
	Message string
}

// ReportProgress sends p to the caller of the tool call that ctx belongs
// to, if the caller asked for progress. Over MCP that is a caller that sent
// a progressToken with the call, and p becomes a notifications/progress
// carrying that token. Without such a caller, and once the handler has
// returned, it does nothing. It is safe to call from several goroutines.
func ReportProgress(ctx context.Context, p Progress) {
	if r, ok := ctx.Value(reporterKey{}).(*reporter); ok {
		r.report(p)
	}
}

type reporterKey struct{}

// reporter passes a call's progress to its caller until the call ends.
type reporter struct {
	mu    sync.Mutex
	fn    func(Progress)
	ended bool
}

func (r *reporter) report(p Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended {
		r.fn(p)
	}
}

func (r *reporter) end() {
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
}
