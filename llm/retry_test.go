package llm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm"
)

func TestRetryPolicy(t *testing.T) {
	p := llm.RetryPolicy{Base: time.Second, Max: 3, MaxRetryAfter: time.Minute}
	server := &llm.Error{Kind: llm.KindServer}
	for try := range 3 {
		d, err := p.Wait(try, server)
		full := time.Second << try
		if err != nil || d < full/2 || d > full {
			t.Errorf("try %d: %s %v, want jitter in [%s, %s]", try, d, err, full/2, full)
		}
	}
	if _, err := p.Wait(3, server); err == nil || !strings.Contains(err.Error(), "gave up after 3 retries") {
		t.Errorf("past Max: %v", err)
	}
	if d, err := p.Wait(0, &llm.Error{Kind: llm.KindRateLimit, RetryAfter: 12 * time.Second}); err != nil || d != 12*time.Second {
		t.Errorf("Retry-After 12s: %s %v", d, err)
	}
	_, err := p.Wait(0, &llm.Error{Kind: llm.KindRateLimit, RetryAfter: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s before retrying, longer than the 1m0s Saucer waits") || !errors.Is(err, llm.ErrRateLimit) {
		t.Errorf("Retry-After 1h: %v", err)
	}
	if _, err := p.Wait(0, &llm.Error{Kind: llm.KindAuth}); !errors.Is(err, llm.ErrAuth) {
		t.Errorf("auth is not retried: %v", err)
	}
	if got := llm.WaitReason(&llm.Error{Kind: llm.KindRateLimit}); got != "rate limited" {
		t.Errorf("reason %q", got)
	}
}
