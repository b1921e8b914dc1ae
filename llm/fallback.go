package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Named is a model with the spec that opened it ("openai:gpt-4o").
type Named struct {
	Spec  string
	Model Model
}

// Fallback is a Model that asks its models in order: when one is
// unavailable (a retryable failure that outlasted Retry, or an auth or
// model error) or its context is too small for the request, the next one
// is asked. OnSwitch, when set, is told of each switch so that it can be
// shown and recorded; the reply's Model names who answered.
//
// A model whose context was too small for a request is not asked again
// for one as large or larger (a conversation only grows); one that was
// unavailable is asked again at the next call, as it may be back.
type Fallback struct {
	Models []Named
	Retry  RetryPolicy
	// OnSwitch is told when a model is passed over, with why.
	OnSwitch func(from, to string, err error)

	mu sync.Mutex
	// tooLong holds, per model, the size of the smallest request its
	// context could not take.
	tooLong map[int]int
}

var _ Model = (*Fallback)(nil)

// Complete asks the models in order until one answers.
func (f *Fallback) Complete(ctx context.Context, req *Request) (*Response, error) {
	return f.each(ctx, req, func(m Model) (*Response, error) { return m.Complete(ctx, req) })
}

// Stream is Complete, streaming the reply of the model that answers.
func (f *Fallback) Stream(ctx context.Context, req *Request, onChunk func(Chunk)) (*Response, error) {
	return f.each(ctx, req, func(m Model) (*Response, error) { return m.Stream(ctx, req, onChunk) })
}

func (f *Fallback) each(ctx context.Context, req *Request, call func(Model) (*Response, error)) (*Response, error) {
	var errs []error
	_, size := SharedPrefix(nil, req)
	for i, n := range f.Models {
		if i < len(f.Models)-1 && f.tooSmall(i, size) {
			continue // passed over before, for a shorter request; said then
		}
		resp, err := f.try(ctx, n, call)
		if err == nil {
			if resp.Model == "" {
				resp.Model = n.Spec
			}
			resp.Spec = n.Spec
			return resp, nil
		}
		if errors.Is(err, ErrContextLength) {
			f.mu.Lock()
			if f.tooLong == nil {
				f.tooLong = map[int]int{}
			}
			if old, ok := f.tooLong[i]; !ok || size < old {
				f.tooLong[i] = size
			}
			f.mu.Unlock()
		}
		errs = append(errs, fmt.Errorf("%s: %w", n.Spec, err))
		if ctx.Err() != nil || !switchable(err) || i == len(f.Models)-1 {
			return nil, errors.Join(errs...)
		}
		if f.OnSwitch != nil {
			f.OnSwitch(n.Spec, f.Models[i+1].Spec, err)
		}
	}
	return nil, errors.New("llm: a fallback chain with no models")
}

// tooSmall reports whether model i's context already proved too small for
// a request of size bytes.
func (f *Fallback) tooSmall(i, size int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit, ok := f.tooLong[i]
	return ok && size >= limit
}

// try asks one model, retrying what may pass by the policy.
func (f *Fallback) try(ctx context.Context, n Named, call func(Model) (*Response, error)) (*Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := call(n.Model)
		if err == nil || !Retryable(err) {
			return resp, err
		}
		d, stop := f.Retry.Wait(attempt, err)
		if stop != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-timeAfter(d):
		}
	}
}

// switchable reports whether another model may do better after err.
func switchable(err error) bool {
	var le *Error
	if !errors.As(err, &le) {
		return false
	}
	switch le.Kind {
	case KindContextLength, KindRateLimit, KindServer, KindTimeout, KindAuth, KindEmptyReply:
		return true
	}
	return le.Status == 404 // the model does not exist there
}

// SupportsComputer reports whether every model of f offers a native
// computer-use tool: a switch to one without would fail the request.
func (f *Fallback) SupportsComputer() bool {
	for _, n := range f.Models {
		if !SupportsComputer(n.Model) {
			return false
		}
	}
	return len(f.Models) > 0
}
