// Package clock is the time a context carries: the real one unless a
// test put a Fake there, which moves only when the test says so. Code
// whose behaviour depends on time passing (deadlines, grace periods, how
// long a device may stay away) takes its clock from its context, so that
// a test can drive it instead of sleeping.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer sends the time on C after d.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending event of a Clock.
type Timer interface {
	// C delivers the time when the timer fires (nil for AfterFunc's).
	C() <-chan time.Time
	// Stop cancels the event; it reports whether it had not fired yet.
	Stop() bool
}

type ctxKey struct{}

// With returns a context that carries c.
func With(ctx context.Context, c Clock) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From is the clock ctx carries, or the real one.
func From(ctx context.Context) Clock {
	if ctx != nil {
		if c, ok := ctx.Value(ctxKey{}).(Clock); ok {
			return c
		}
	}
	return Real
}

// Real is the system's clock.
var Real Clock = real{}

type real struct{}

func (real) Now() time.Time { return time.Now() }

func (real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Fake is a clock that moves only by Advance. Its timers fire in the
// order of their deadlines, within the Advance that reaches them.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer // armed, in no order
	armed  chan struct{}
}

// NewFake is a Fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, armed: make(chan struct{})}
}

type fakeTimer struct {
	f    *Fake
	at   time.Time
	c    chan time.Time
	fn   func()
	done bool // fired or stopped
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.f.remove(t)
	return true
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer arms a timer that fires when the clock reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.arm(d, make(chan time.Time, 1), nil)
}

// AfterFunc arms a timer that calls fn, in its own goroutine, when the
// clock reaches now+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.arm(d, nil, fn)
}

func (f *Fake) arm(d time.Duration, c chan time.Time, fn func()) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), c: c, fn: fn}
	f.timers = append(f.timers, t)
	close(f.armed) // wake those waiting for timers
	f.armed = make(chan struct{})
	return t
}

// remove drops a timer from the armed ones. Called with mu held.
func (f *Fake) remove(t *fakeTimer) {
	for i, o := range f.timers {
		if o == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return
		}
	}
}

// Advance moves the clock by d and fires the timers it reaches, earliest
// first.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	var due []*fakeTimer
	keep := f.timers[:0]
	for _, t := range f.timers {
		if t.at.After(f.now) {
			keep = append(keep, t)
			continue
		}
		t.done = true
		due = append(due, t)
	}
	f.timers = keep
	now := f.now
	f.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		if t.fn != nil {
			go t.fn()
		} else {
			t.c <- now
		}
	}
}

// WaitTimers waits until at least n timers are armed (made and neither
// fired nor stopped), so that a test advances the clock only once the
// code under test is waiting on it. It fails when ctx ends first.
func (f *Fake) WaitTimers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		armed, wake := len(f.timers), f.armed
		f.mu.Unlock()
		if armed >= n {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
