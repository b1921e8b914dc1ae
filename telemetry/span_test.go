package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The batcher sends a batch as soon as max spans wait, without waiting
// for its interval; while an export hangs it holds at most queue spans and
// drops the rest; shutdown sends what it holds.
func TestBatcherSendsFullBatchesAndBoundsItsQueue(t *testing.T) {
	batches := make(chan []*span, 10)
	release := make(chan struct{})
	export := func(ctx context.Context, spans []*span) error {
		batches <- spans
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	b := startBatcher(export, time.Hour, 2, 3)
	end := func(n int) {
		for range n {
			b.end(child(nil, "s", kindInternal, time.Now()))
		}
	}
	end(2) // a full batch: sent now, and its export hangs
	select {
	case got := <-batches:
		if len(got) != 2 {
			t.Fatalf("first batch of %d spans, want 2", len(got))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch was not sent before the interval")
	}
	end(5) // 3 held while the export hangs, 2 dropped
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for len(batches) > 0 {
		sent += len(<-batches)
	}
	if sent != 3 {
		t.Errorf("%d spans sent after the hang, want the 3 held", sent)
	}
	end(1) // after shutdown: dropped, no export
	if len(batches) != 0 {
		t.Error("a span ended after shutdown was exported")
	}
}

// A collector that fails loses its batch, not the session: the error is
// shutdown's to report.
func TestBatcherReportsAFailedExport(t *testing.T) {
	b := startBatcher(func(context.Context, []*span) error { return errors.New("refused") }, time.Hour, 100, 100)
	b.end(child(nil, "s", kindInternal, time.Now()))
	if err := b.shutdown(context.Background()); err == nil || err.Error() != "refused" {
		t.Errorf("shutdown: %v, want the export's error", err)
	}
}
