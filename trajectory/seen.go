package trajectory

import (
	"hash/maphash"
	"sync"
)

// seenSet remembers values by their content, up to about maxSeen bytes:
// when that fills, the newer half is kept and the older dropped, so that
// what comes back in every task stays. Safe for concurrent use.
type seenSet[V any] struct {
	mu       sync.Mutex
	now, old map[uint64]seenEntry[V]
	bytes    int
}

type seenEntry[V any] struct {
	key string // the content, compared on a hit: a hash is not proof
	v   V
}

// maxSeen bounds what a seenSet holds, in bytes of content.
const maxSeen = 4 << 20

var seenSeed = maphash.MakeSeed()

func (s *seenSet[V]) get(h uint64, key []byte) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.now[h]
	if !ok {
		if e, ok = s.old[h]; ok && e.key == string(key) {
			s.keep(h, e)
		}
	}
	if !ok || e.key != string(key) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (s *seenSet[V]) add(h uint64, key []byte, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep(h, seenEntry[V]{string(key), v})
}

func (s *seenSet[V]) keep(h uint64, e seenEntry[V]) {
	if s.now == nil || s.bytes+len(e.key) > maxSeen/2 {
		s.old, s.now, s.bytes = s.now, map[uint64]seenEntry[V]{}, 0
	}
	s.now[h] = e
	s.bytes += len(e.key)
}

// encodings are the JSON encodings of long strings and raw values, by
// content, for all writers: a session's config, its agents' prompts and
// tool definitions come back in every task a server records.
var (
	stringEncodings seenSet[[]byte]
	rawEncodings    seenSet[[]byte]
)

// minSeen is the shortest value whose encoding is remembered: shorter
// ones cost less to encode than to look up.
const minSeen = 256
