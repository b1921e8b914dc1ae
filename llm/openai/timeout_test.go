package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/openai"
)

// A server that never answers, or stalls mid-stream, is a timeout: typed,
// retryable, with the bound that was hit and the setting that raises it.
func TestRequestTimeouts(t *testing.T) {
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // accepts, never answers
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	stalls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"He"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select { // then nothing more
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stalls.Close()
	defer close(release) // first: the handlers return, then the servers close

	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
	for _, tc := range []struct {
		name, url string
		stream    bool
		bounds    llm.Timeouts
		want      string
	}{
		{"first byte", silent.URL, false, llm.Timeouts{FirstByte: 100 * time.Millisecond}, "first_byte 100ms"},
		{"total", silent.URL, false, llm.Timeouts{FirstByte: time.Minute, Total: 150 * time.Millisecond}, "total 150ms"},
		{"idle gap in a stream", stalls.URL, true, llm.Timeouts{Idle: 100 * time.Millisecond}, "idle timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := openai.New(openai.Config{BaseURL: tc.url, Model: "m", Timeouts: tc.bounds, ProviderName: "ollama"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.stream {
				_, err = m.Stream(context.Background(), req, nil)
			} else {
				_, err = m.Complete(context.Background(), req)
			}
			if !errors.Is(err, llm.ErrTimeout) || !llm.Retryable(err) {
				t.Fatalf("err = %v, want a retryable timeout", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "raise providers.ollama.timeouts") {
				t.Errorf("err = %v, want it to name %q and the setting", err, tc.want)
			}
		})
	}
}
