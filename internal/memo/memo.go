// Package memo remembers what a pure function made of some bytes, so that
// the same bytes met again (a replayed device's tool list, a tool's
// schema: the same in every case of a suite) are not decoded again.
package memo

import "sync"

// Max is how many inputs a Bytes remembers; past it, it forgets them all
// and starts again (a cache that only needs to catch repeats).
const Max = 512

// Bytes remembers f's answer for each input. The answers are shared by
// every caller that passes the same bytes: f's results must be treated as
// read-only. The zero value is ready to use; safe for concurrent use.
type Bytes[T any] struct {
	mu   sync.Mutex
	seen map[string]T
}

// Get returns f(b), computed once for each distinct b. An error is not
// remembered.
func (m *Bytes[T]) Get(b []byte, f func([]byte) (T, error)) (T, error) {
	m.mu.Lock()
	v, ok := m.seen[string(b)] // no copy of b to look up
	m.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := f(b)
	if err != nil {
		return v, err
	}
	m.mu.Lock()
	if m.seen == nil || len(m.seen) >= Max {
		m.seen = map[string]T{}
	}
	m.seen[string(b)] = v
	m.mu.Unlock()
	return v, nil
}
