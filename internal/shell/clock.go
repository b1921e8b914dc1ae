package shell

import (
	"context"
	"time"
)

// clock is where the shell's timeouts come from. A test carries its own
// on the context (withClock) and moves it by hand, so that a timeout fires
// when the test says, not when a busy machine gets round to it.
type clock interface {
	// AfterFunc calls f once d has passed; stop cancels that if it has
	// not happened yet.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type clockKey struct{}

// withClock returns ctx carrying c.
func withClock(ctx context.Context, c clock) context.Context {
	return context.WithValue(ctx, clockKey{}, c)
}

// clockOf is the clock ctx carries, or the real one.
func clockOf(ctx context.Context) clock {
	if c, ok := ctx.Value(clockKey{}).(clock); ok {
		return c
	}
	return realClock{}
}

type realClock struct{}

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// withTimeout is context.WithTimeoutCause on ctx's clock: ctx is
// cancelled with cause once d has passed on it.
func withTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := clockOf(ctx).AfterFunc(d, func() { cancel(cause) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}
