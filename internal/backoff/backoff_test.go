package backoff_test

import (
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/backoff"
)

func TestDelay(t *testing.T) {
	p := backoff.Policy{Base: 100 * time.Millisecond, Cap: time.Second}
	for n, full := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		full *= time.Millisecond
		seen := map[time.Duration]bool{}
		for range 50 {
			d := p.Delay(n)
			if d < full/2 || d > full {
				t.Fatalf("attempt %d: %s, want jitter in [%s, %s]", n, d, full/2, full)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("attempt %d: 50 waits all %v: no jitter", n, seen)
		}
	}
	// No cap: doubling stops at 2^16 times the base instead of wrapping.
	if d := (backoff.Policy{Base: time.Second}).Delay(1000); d < time.Second<<15 || d > time.Second<<16 {
		t.Errorf("attempt 1000 uncapped: %s", d)
	}
}

func TestHinted(t *testing.T) {
	p := backoff.Policy{Base: time.Millisecond}
	if d, err := p.Hinted(0, 12*time.Second, time.Minute); err != nil || d != 12*time.Second {
		t.Errorf("hint 12s: %s %v", d, err)
	}
	if d, err := p.Hinted(0, 0, time.Minute); err != nil || d > time.Millisecond {
		t.Errorf("no hint: %s %v", d, err)
	}
	_, err := p.Hinted(0, time.Hour, 2*time.Minute)
	if err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s before retrying, longer than the 2m0s Saucer waits") {
		t.Errorf("hint beyond the limit: %v", err)
	}
	if got := backoff.Say(12400 * time.Millisecond); got != "retrying in 12s" {
		t.Errorf("Say: %q", got)
	}
}
