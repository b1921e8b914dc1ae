package constellation

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/saucerhq/saucer/server/store"
)

// MemoryStore keeps graphs in memory (copies: a caller's later changes
// do not reach it).
type MemoryStore struct {
	mu     sync.Mutex
	graphs map[string]*Graph
}

// NewMemoryStore is an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{graphs: map[string]*Graph{}} }

func (m *MemoryStore) Save(_ context.Context, g *Graph) error {
	c := g.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.graphs[g.ID] = c
	return nil
}

func (m *MemoryStore) Load(_ context.Context, id string) (*Graph, error) {
	m.mu.Lock()
	g, ok := m.graphs[id]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: no constellation %q", store.ErrNotFound, id)
	}
	return g.Clone(), nil
}

// Summaries summarizes the graphs in place, without copying them.
func (m *MemoryStore) Summaries(context.Context, func(string) bool) ([]Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Summary, 0, len(m.graphs))
	for _, g := range m.graphs {
		out = append(out, Summarize(g))
	}
	return out, nil
}

func (m *MemoryStore) List(ctx context.Context) ([]*Graph, error) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.graphs))
	for id := range m.graphs {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	out := make([]*Graph, 0, len(ids))
	for _, id := range ids {
		g, err := m.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// ServerStore keeps graphs in the agent server's store (SQLite by
// default), so that a restarted server resumes them. It writes through
// the store's journals, which need no schema of their own: the journal
// "constellations" lists the ids, and the journal "constellation:ID"
// holds the graph's versions, each written durably before the
// orchestrator acts on it (the newest is the graph).
type ServerStore struct {
	st  store.Store
	mu  sync.Mutex
	seq map[string]int // next seq per journal, once read
	// sums are the constellations' summaries as this process last saved
	// or read them, for the list (smu guards them).
	smu  sync.Mutex
	sums map[string]Summary
}

// NewServerStore keeps graphs in st.
func NewServerStore(st store.Store) *ServerStore {
	return &ServerStore{st: st, seq: map[string]int{}, sums: map[string]Summary{}}
}

func (s *ServerStore) remember(g *Graph) {
	sum := Summarize(g)
	s.smu.Lock()
	defer s.smu.Unlock()
	if c, ok := s.sums[g.ID]; ok && c.Version > sum.Version {
		return // a save that raced ahead of this read
	}
	s.sums[g.ID] = sum
}

// Summaries lists the constellations' summaries from the store's index
// and the summaries this process keeps of what it saved and read: a
// graph is read only when this process has not seen it yet, or it was
// running and reread says so (another server of a cluster may be running
// it), so that a list costs a read of the index, not of every graph.
func (s *ServerStore) Summaries(ctx context.Context, reread func(id string) bool) ([]Summary, error) {
	es, err := s.st.Journal(ctx, indexJournal)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(es))
	for _, e := range es {
		s.smu.Lock()
		c, ok := s.sums[e.Key]
		s.smu.Unlock()
		if !ok || (c.Status == Running && reread(e.Key)) {
			g, err := s.Load(ctx, e.Key)
			if err != nil {
				return nil, err
			}
			c = Summarize(g)
		}
		out = append(out, c)
	}
	return out, nil
}

const indexJournal = "constellations"

func graphJournal(id string) string { return "constellation:" + id }

// next is the next seq of a journal. Called with mu held.
func (s *ServerStore) next(ctx context.Context, journal string) (int, error) {
	n, ok := s.seq[journal]
	if !ok {
		es, err := s.st.Journal(ctx, journal)
		if err != nil {
			return 0, err
		}
		for _, e := range es {
			n = max(n, e.Seq)
		}
	}
	n++
	s.seq[journal] = n
	return n, nil
}

func (s *ServerStore) Save(ctx context.Context, g *Graph) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := graphJournal(g.ID)
	_, known := s.seq[j]
	seq, err := s.next(ctx, j)
	if err != nil {
		return fmt.Errorf("constellation store: %w", err)
	}
	if !known && seq == 1 {
		iseq, err := s.next(ctx, indexJournal)
		if err != nil {
			return fmt.Errorf("constellation store: %w", err)
		}
		if err := s.st.Append(ctx, indexJournal, store.Entry{Seq: iseq, Kind: "constellation", Key: g.ID, Data: json.RawMessage(`{}`)}, true); err != nil {
			return fmt.Errorf("constellation store: listing %s: %w", g.ID, err)
		}
	}
	err = s.st.Append(ctx, j, store.Entry{Seq: seq, Kind: "graph", Key: strconv.Itoa(g.Version), Data: b}, true)
	if err != nil {
		return fmt.Errorf("constellation store: saving %s: %w", g.ID, err)
	}
	s.remember(g)
	return nil
}

func (s *ServerStore) Load(ctx context.Context, id string) (*Graph, error) {
	es, err := s.st.Journal(ctx, graphJournal(id))
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%w: no constellation %q", store.ErrNotFound, id)
	}
	var g Graph
	if err := json.Unmarshal(es[len(es)-1].Data, &g); err != nil {
		return nil, fmt.Errorf("constellation store: %s is unreadable: %w", id, err)
	}
	s.remember(&g)
	return &g, nil
}

// Versions returns every saved version of a constellation, oldest first.
func (s *ServerStore) Versions(ctx context.Context, id string) ([]*Graph, error) {
	es, err := s.st.Journal(ctx, graphJournal(id))
	if err != nil {
		return nil, err
	}
	out := make([]*Graph, 0, len(es))
	for _, e := range es {
		var g Graph
		if err := json.Unmarshal(e.Data, &g); err != nil {
			return nil, err
		}
		out = append(out, &g)
	}
	return out, nil
}

func (s *ServerStore) List(ctx context.Context) ([]*Graph, error) {
	es, err := s.st.Journal(ctx, indexJournal)
	if err != nil {
		return nil, err
	}
	out := make([]*Graph, 0, len(es))
	for _, e := range es {
		g, err := s.Load(ctx, e.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}
