package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/clock"
)

func TestFromDefaultsToReal(t *testing.T) {
	if clock.From(context.Background()) != clock.Real {
		t.Error("a context without a clock does not give the real one")
	}
	f := clock.NewFake(time.Unix(0, 0))
	if clock.From(clock.With(context.Background(), f)) != f {
		t.Error("the clock put on a context is not the one read from it")
	}
}

// TestFake: timers fire when Advance reaches them, earliest first, and
// not before; stopped ones never; WaitTimers returns once enough wait.
func TestFake(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	late := f.NewTimer(2 * time.Second)
	early := f.NewTimer(time.Second)
	stopped := f.NewTimer(time.Second)
	called := make(chan time.Time, 1)
	f.AfterFunc(1500*time.Millisecond, func() { called <- f.Now() })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop should report true once, then false")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.WaitTimers(ctx, 3); err != nil {
		t.Fatal(err)
	}

	f.Advance(999 * time.Millisecond)
	select {
	case <-early.C():
		t.Fatal("a timer fired before its time")
	default:
	}
	f.Advance(time.Second) // now start+1.999s
	if got := <-early.C(); !got.Equal(start.Add(1999 * time.Millisecond)) {
		t.Errorf("fired with %v", got)
	}
	select {
	case now := <-called:
		if !now.Equal(start.Add(1999 * time.Millisecond)) {
			t.Errorf("AfterFunc saw %v", now)
		}
	case <-ctx.Done():
		t.Fatal("AfterFunc was not called")
	}
	select {
	case <-late.C():
		t.Fatal("the later timer fired early")
	case <-stopped.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if late.Stop() != true {
		t.Error("an armed timer could not be stopped")
	}
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if err := f.WaitTimers(short, 1); err == nil {
		t.Error("WaitTimers returned with no timer armed")
	}
}
