package telemetry

import (
	"context"
	"log"
	"math/rand/v2"
	"sync"
	"time"
)

// Saucer makes its spans itself rather than through OpenTelemetry's SDK:
// its sessions need spans with a parent, a kind, attributes and an error
// status, sent in batches, and the SDK with the API, metrics, logs and
// propagation it links took 1.2 MB of a 31 MB binary.

// spanKind numbers kinds as OTLP (and OpenTelemetry's API) do.
type spanKind uint64

const (
	kindInternal spanKind = 1
	kindClient   spanKind = 3
)

// attr is one attribute: its value a string, an int64 or a []string.
type attr struct {
	key   string
	value any
}

func str(k, v string) attr            { return attr{k, v} }
func integer(k string, v int) attr    { return attr{k, int64(v)} }
func strs(k string, v ...string) attr { return attr{k, v} }

// span is one span; it goes to its exporter when it ends. Its fields
// are the session Tracer's to change, under its lock.
type span struct {
	traceID    [16]byte
	id, parent [8]byte // parent zero: a root
	name       string
	kind       spanKind
	start, end time.Time
	attrs      []attr
	failed     bool   // an error status, with message
	message    string // the error's reason
}

// set adds attributes, replacing those of the same key.
func (s *span) set(attrs ...attr) {
	for _, a := range attrs {
		i := 0
		for i < len(s.attrs) && s.attrs[i].key != a.key {
			i++
		}
		if i == len(s.attrs) {
			s.attrs = append(s.attrs, a)
		} else {
			s.attrs[i] = a
		}
	}
}

// child opens a span under s (nil: a root of a new trace).
func child(s *span, name string, kind spanKind, start time.Time, attrs ...attr) *span {
	c := &span{name: name, kind: kind, start: start, attrs: attrs}
	if s != nil {
		c.traceID, c.parent = s.traceID, s.id
	} else {
		fill(c.traceID[:])
	}
	fill(c.id[:])
	return c
}

// fill makes a random, non-zero id (zero means none in OTLP).
func fill(id []byte) {
	for {
		for i := range id {
			id[i] = byte(rand.Uint32())
		}
		for _, b := range id {
			if b != 0 {
				return
			}
		}
	}
}

// batcher sends ended spans in batches: at most every interval, or at
// once when max are waiting. Spans beyond queue while an export is slow
// are dropped (and counted in the next error), so that a dead collector
// never holds a session up or its memory without bound.
type batcher struct {
	export   func(context.Context, []*span) error
	interval time.Duration
	max      int // spans that start an export at once
	queue    int // spans held at most

	mu      sync.Mutex
	spans   []*span
	dropped int
	closed  bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// newBatcher starts a batcher with OpenTelemetry's defaults: every 5 s
// or 512 spans, 2048 held at most.
func newBatcher(export func(context.Context, []*span) error) *batcher {
	return startBatcher(export, 5*time.Second, 512, 2048)
}

func startBatcher(export func(context.Context, []*span) error, interval time.Duration, max, queue int) *batcher {
	b := &batcher{export: export, interval: interval, max: max, queue: queue,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// end hands an ended span over.
func (b *batcher) end(s *span) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return
	case len(b.spans) >= b.queue:
		b.dropped++
		return
	}
	b.spans = append(b.spans, s)
	if len(b.spans) >= b.max {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	defer close(b.done)
	tick := time.NewTicker(b.interval)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		case <-b.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b.flush(ctx)
		cancel()
	}
}

// flush exports what is waiting; an export that fails is logged: traces
// are an aid, never a reason to stop a session.
func (b *batcher) flush(ctx context.Context) error {
	b.mu.Lock()
	spans, dropped := b.spans, b.dropped
	b.spans, b.dropped = nil, 0
	b.mu.Unlock()
	if len(spans) == 0 {
		return nil
	}
	err := b.export(ctx, spans)
	if err != nil {
		log.Printf("telemetry: %d spans lost: %v", len(spans)+dropped, err)
	} else if dropped > 0 {
		log.Printf("telemetry: %d spans dropped while the collector was slow", dropped)
	}
	return err
}

// shutdown sends what is left; later spans are dropped.
func (b *batcher) shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.flush(ctx)
}
