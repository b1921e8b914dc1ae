package main

import (
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/llm"
)

// A wait to retry a model call is shown with its reason and length, short
// waits in milliseconds rather than as "0s".
func TestRetryLine(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12*time.Second + 300*time.Millisecond: "    rate limited, retrying in 12s (",
		120 * time.Millisecond:                "    rate limited, retrying in 120ms (",
	} {
		got := retryLine(agent.Event{Kind: agent.EventRetry, Err: &llm.Error{Kind: llm.KindRateLimit, Provider: "openai", Status: 429}, Duration: d})
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "HTTP 429") {
			t.Errorf("%s: %q, want it to start %q", d, got, want)
		}
	}
}
