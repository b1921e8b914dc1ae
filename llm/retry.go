package llm

import (
	"errors"
	"fmt"
	"time"

	"github.com/saucerhq/saucer/internal/backoff"
)

// RetryPolicy is how a failed call is retried: backoff.Policy's
// exponential backoff from Base with jitter, at most Max times; a server's
// Retry-After wins when it is longer, up to MaxRetryAfter, beyond which
// waiting is pointless for an interactive run and the error stands.
type RetryPolicy struct {
	Base          time.Duration
	Max           int
	MaxRetryAfter time.Duration
}

// DefaultMaxRetryAfter caps a server's Retry-After when MaxRetryAfter is 0.
const DefaultMaxRetryAfter = 2 * time.Minute

// Wait says how long to wait before retry number try (from 0) after err,
// or why not to retry.
func (p RetryPolicy) Wait(try int, err error) (time.Duration, error) {
	if !Retryable(err) {
		return 0, err
	}
	if try >= p.Max {
		return 0, fmt.Errorf("%w (gave up after %d retries)", err, p.Max)
	}
	var hint time.Duration
	var le *Error
	if errors.As(err, &le) {
		hint = le.RetryAfter
	}
	limit := p.MaxRetryAfter
	if limit <= 0 {
		limit = DefaultMaxRetryAfter
	}
	d, refused := backoff.Policy{Base: p.Base}.Hinted(try, hint, limit)
	if refused != nil {
		return 0, fmt.Errorf("%w (%v)", err, refused)
	}
	return d, nil
}

// WaitReason says, for the user, why a call waits: "rate limited",
// "the server failed", "timed out".
func WaitReason(err error) string {
	var le *Error
	if errors.As(err, &le) {
		switch le.Kind {
		case KindRateLimit:
			return "rate limited"
		case KindTimeout:
			return "timed out"
		case KindServer:
			return "the model server failed"
		}
	}
	return "the call failed"
}

// timeAfter is time.After, a seam for nothing but readability.
var timeAfter = time.After
