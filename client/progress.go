package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/saucerhq/saucer/command"
)

// Progress is one progress report of a running tool call: an MCP
// notifications/progress, tagged with the command it belongs to.
type Progress = command.Progress

// WithProgress returns a context under which every tool call reports its
// progress to fn while it runs (command.WithProgress). The dispatcher
// passes the context through, so a dispatcher's caller sets it to stream
// progress as events. fn is called on the connection's reader goroutine:
// it must return quickly.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return command.WithProgress(ctx, fn)
}

// progressFrom returns the callback set by WithProgress, or nil.
func progressFrom(ctx context.Context) func(Progress) { return command.ProgressFrom(ctx) }

// deliverProgress routes a notifications/progress to the call that asked
// for it, by its token. Reports for calls that have ended are dropped.
func (cn *conn) deliverProgress(fields map[string]any) {
	token := fmt.Sprint(fields["progressToken"])
	cn.progressMu.Lock()
	fn := cn.progress[token]
	cn.progressMu.Unlock()
	if fn == nil {
		return
	}
	p := Progress{}
	p.Progress = number(fields["progress"])
	p.Total = number(fields["total"])
	p.Message, _ = fields["message"].(string)
	fn(p)
}

// number reads a JSON number however the transport decoded it.
func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return 0
}
