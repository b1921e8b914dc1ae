// Package backoff is Saucer's one way of waiting before trying again:
// exponential backoff from a base, capped, with jitter, and a server's own
// hint (Retry-After) honoured up to a limit. Model calls (llm.RetryPolicy)
// and the device's connection to a server (client/remote) both wait by it,
// so that they behave, and read, alike. It imports nothing of Saucer's.
package backoff

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy says how long to wait before attempt n+1 after n failures.
type Policy struct {
	// Base is the first wait; zero means a second.
	Base time.Duration
	// Cap bounds a wait before jitter; zero means no bound beyond 2^16
	// times Base.
	Cap time.Duration
}

// Delay is the wait after attempt n (from 0): Base doubled n times, capped,
// then drawn uniformly from its upper half, so that many clients cut off
// together do not come back together.
func (p Policy) Delay(n int) time.Duration {
	d := p.Base
	if d <= 0 {
		d = time.Second
	}
	for i := 0; i < min(n, 16) && (p.Cap <= 0 || d < p.Cap); i++ {
		d *= 2
	}
	if p.Cap > 0 {
		d = min(d, p.Cap)
	}
	return d/2 + rand.N(d/2+1)
}

// Hinted is the wait after attempt n when the server asked for hint (0 for
// none): the longer of the two. A hint beyond limit is refused with the
// reason, for a caller that would rather fail than wait that long.
func (p Policy) Hinted(n int, hint, limit time.Duration) (time.Duration, error) {
	d := p.Delay(n)
	if hint <= 0 {
		return d, nil
	}
	if limit > 0 && hint > limit {
		return 0, fmt.Errorf("the server asks to wait %s before retrying, longer than the %s Saucer waits; try again later", hint.Round(time.Second), limit)
	}
	return max(d, hint), nil
}

// Say is how a wait is shown to a person: "retrying in 12s", rounded so
// that it reads (milliseconds below a second).
func Say(d time.Duration) string {
	if d < time.Second {
		return "retrying in " + d.Round(time.Millisecond).String()
	}
	return "retrying in " + d.Round(time.Second).String()
}
