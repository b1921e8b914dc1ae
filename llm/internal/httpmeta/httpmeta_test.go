package httpmeta_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 8, 18, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	}
	for _, tt := range tests {
		if got := httpmeta.RetryAfter(tt.header, now); got != tt.want {
			t.Errorf("httpmeta.RetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}
