package knowledge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	bbolt "go.etcd.io/bbolt"
)

// The files of a store's directory.
const (
	EntriesFile = "entries.jsonl"
	VectorsFile = "vectors.jsonl"
	IndexDir    = "index.bleve"
)

// lockWait is how long Open waits for another process's hold on the index.
var lockWait = 10 * time.Second

// Options configure a Store; a nil *Options is lexical search only.
type Options struct {
	// Embedder, when set, embeds every entry as it is added (and those
	// added before without a vector of its model) and every query: a
	// search fuses the vector ranking with the lexical one.
	Embedder Embedder
}

// DirStore holds entries in a directory: entries.jsonl (the entries, one
// a line, the store's truth), index.bleve (the lexical index, rebuilt from
// the entries when missing) and vectors.jsonl (the embeddings, when an
// Embedder was given). It is safe for concurrent use within one process;
// one process at a time holds it (a fleet shares a PostgresStore).
type DirStore struct {
	dir string
	emb Embedder

	mu      sync.RWMutex
	idx     bleve.Index
	entries map[string]Entry
	// vectors are the entries' embeddings by id, all from vecModel.
	vectors  map[string][]float32
	vecModel string
	closed   bool
}

// Open opens (or creates) the store in dir. A missing index is built from
// the entries; a damaged entries file or an index that will not open is
// an error that says what to do.
func Open(ctx context.Context, dir string, opts *Options) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("knowledge: no store directory: set knowledge.dir in the config or give --dir")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("knowledge: cannot create the store directory: %w", err)
	}
	s := &DirStore{dir: dir, entries: map[string]Entry{}, vectors: map[string][]float32{}}
	if opts != nil {
		s.emb = opts.Embedder
	}
	if err := s.readEntries(); err != nil {
		return nil, err
	}
	if err := s.readVectors(); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, IndexDir)
	// The index is locked while open: another process that holds it (a
	// saucer learn, a session) is waited for, but not for ever.
	runtime := map[string]any{"bolt_timeout": lockWait.String()}
	idx, err := bleve.OpenUsing(path, runtime)
	switch {
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		if idx, err = bleve.NewUsing(path, indexMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, runtime); err != nil {
			return nil, fmt.Errorf("knowledge: cannot create the index %s: %w", path, err)
		}
	case errors.Is(err, bbolt.ErrTimeout):
		return nil, fmt.Errorf("knowledge: the store %s is open in another process (saucer learn, or a session using it): try again when it is done", dir)
	case err != nil:
		return nil, fmt.Errorf("knowledge: cannot open the index %s: %v; remove that directory and the store rebuilds it from %s when next opened", path, err, EntriesFile)
	}
	s.idx = idx
	// An index that lost entries (made before a crash, or removed) is
	// brought level with the entries file, the store's truth.
	n, err := idx.DocCount()
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("knowledge: cannot read the index %s: %v; remove that directory and the store rebuilds it", path, err)
	}
	if int(n) != len(s.entries) {
		if err := s.reindex(); err != nil {
			idx.Close()
			return nil, err
		}
	}
	if s.emb != nil {
		if err := s.embedMissing(ctx); err != nil {
			idx.Close()
			return nil, err
		}
	}
	return s, nil
}

// Dir is the store's directory.
func (s *DirStore) Dir() string { return s.dir }

// Name is the store's directory.
func (s *DirStore) Name() string { return s.dir }

// Close closes the index; closing again does nothing.
func (s *DirStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.idx.Close()
}

// Len is how many entries the store holds.
func (s *DirStore) Len(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.entries), nil
}

// Get returns the entry with the id.
func (s *DirStore) Get(id string) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[id]
	return e, ok
}

// Entries returns every entry, by id.
func (s *DirStore) Entries(context.Context) ([]Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.sorted(), nil
}

func indexMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false
	text.IncludeTermVectors = false
	kw := bleve.NewKeywordFieldMapping()
	kw.Analyzer = keyword.Name
	kw.Store = false
	kw.IncludeInAll = false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("title", text)
	doc.AddFieldMappingsAt("text", text)
	doc.AddFieldMappingsAt("kind", kw)
	doc.AddFieldMappingsAt("app", kw)
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = en.AnalyzerName
	m.ScoringModel = index.BM25Scoring
	return m
}

// doc is what the index holds of an entry: its words and its filters.
// App holds the entry's app, or a whole run's apps.
func doc(e Entry) map[string]any {
	apps := e.Apps
	if e.App != "" {
		apps = []string{e.App}
	}
	return map[string]any{"title": e.Title, "text": e.Text, "kind": string(e.Kind), "app": apps}
}

// Add stores entries, replacing those with the same ids, and indexes
// them. With an Embedder, they are embedded first: an embedding error
// leaves the store as it was.
func (s *DirStore) Add(ctx context.Context, entries ...Entry) error {
	for _, e := range entries {
		if err := e.check(); err != nil {
			return err
		}
	}
	var vecs [][]float32
	if s.emb != nil && len(entries) > 0 {
		var err error
		if vecs, err = embedEntries(ctx, s.emb, entries); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.idx.NewBatch()
	for _, e := range entries {
		if err := b.Index(e.ID, doc(e)); err != nil {
			return fmt.Errorf("knowledge: indexing %s: %w", e.ID, err)
		}
	}
	if err := s.idx.Batch(b); err != nil {
		return fmt.Errorf("knowledge: indexing: %w", err)
	}
	for i, e := range entries {
		s.entries[e.ID] = e
		if vecs != nil {
			s.vectors[e.ID] = vecs[i]
		}
	}
	if vecs != nil {
		s.vecModel = s.emb.Model()
	}
	if err := s.writeEntries(); err != nil {
		return err
	}
	if vecs != nil {
		return s.writeVectors()
	}
	return nil
}

// reindex indexes every entry anew.
func (s *DirStore) reindex() error {
	ids := make([]string, 0, len(s.entries))
	for id := range s.entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// What the index holds that the entries do not goes.
	if n, _ := s.idx.DocCount(); n > 0 {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), int(n), 0, false)
		res, err := s.idx.Search(req)
		if err != nil {
			return fmt.Errorf("knowledge: reading the index: %w", err)
		}
		b := s.idx.NewBatch()
		for _, h := range res.Hits {
			if _, ok := s.entries[h.ID]; !ok {
				b.Delete(h.ID)
			}
		}
		if err := s.idx.Batch(b); err != nil {
			return fmt.Errorf("knowledge: reindexing: %w", err)
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		b := s.idx.NewBatch()
		for _, id := range ids[:n] {
			if err := b.Index(id, doc(s.entries[id])); err != nil {
				return fmt.Errorf("knowledge: indexing %s: %w", id, err)
			}
		}
		if err := s.idx.Batch(b); err != nil {
			return fmt.Errorf("knowledge: reindexing: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}

// Search finds the entries that fit the query, best first; ties go by id,
// so the same store and query give the same hits in the same order.
func (s *DirStore) Search(ctx context.Context, q Query) ([]Hit, error) {
	return search(ctx, s.emb, q, s)
}

// lexical is the BM25 ranking of the entries that pass q's filters.
func (s *DirStore) lexical(ctx context.Context, q Query, pool int) ([]Hit, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	words := []query.Query{field(bleve.NewMatchQuery(q.Text), "text", 1), field(bleve.NewMatchQuery(q.Text), "title", 2)}
	must := []query.Query{bleve.NewDisjunctionQuery(words...)}
	if len(q.Kinds) > 0 {
		var ks []query.Query
		for _, k := range q.Kinds {
			ks = append(ks, term(string(k), "kind"))
		}
		must = append(must, bleve.NewDisjunctionQuery(ks...))
	}
	if q.App != "" {
		must = append(must, term(q.App, "app"))
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(must...), pool, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	res, err := s.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("knowledge: searching %s: %w", s.dir, err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		if e, ok := s.entries[h.ID]; ok {
			hits = append(hits, Hit{Entry: e, Score: h.Score})
		}
	}
	return hits, nil
}

func field(q *query.MatchQuery, name string, boost float64) query.Query {
	q.SetField(name)
	q.SetBoost(boost)
	return q
}

func term(t, name string) query.Query {
	q := bleve.NewTermQuery(t)
	q.SetField(name)
	return q
}

// nearest ranks the entries that pass the query's filters by cosine
// similarity to v and returns the first n.
func (s *DirStore) nearest(_ context.Context, v []float32, q Query, n int) ([]Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var all []scored
	vn := norm(v)
	for id, w := range s.vectors {
		e, ok := s.entries[id]
		if !ok || !passes(e, q) {
			continue
		}
		if sim, ok := cosine(v, vn, w); ok {
			all = append(all, scored{e, sim})
		}
	}
	return best(all, n), nil
}

func (s *DirStore) readEntries() error {
	path := filepath.Join(s.dir, EntriesFile)
	return readLines(path, func(n int, line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("knowledge: %s line %d is not an entry (%v): mend or remove the line, or remove the store directory and learn again", path, n, err)
		}
		if err := e.check(); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		s.entries[e.ID] = e
		return nil
	})
}

type vectorLine struct {
	ID     string    `json:"id"`
	Model  string    `json:"model"`
	Vector []float32 `json:"vector"`
}

func (s *DirStore) readVectors() error {
	path := filepath.Join(s.dir, VectorsFile)
	return readLines(path, func(n int, line []byte) error {
		var v vectorLine
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("knowledge: %s line %d is not a vector (%v): remove the file and the store embeds its entries again", path, n, err)
		}
		// Vectors of another model than the embedder's do not compare
		// with its queries: they are embedded again.
		if s.emb != nil && v.Model != s.emb.Model() {
			return nil
		}
		if _, ok := s.entries[v.ID]; ok {
			s.vectors[v.ID] = v.Vector
			s.vecModel = v.Model
		}
		return nil
	})
}

// readLines calls line with each line of the JSON Lines file at path,
// numbered from 1; a missing file has none.
func readLines(path string, line func(n int, b []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("knowledge: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if err := line(n, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("knowledge: reading %s: %w", path, err)
	}
	return nil
}

// embedMissing embeds the entries that have no vector of the embedder's
// model (added without an embedder, or with another model).
func (s *DirStore) embedMissing(ctx context.Context) error {
	var missing []Entry
	for _, e := range s.sorted() {
		if _, ok := s.vectors[e.ID]; !ok {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	vecs, err := embedEntries(ctx, s.emb, missing)
	if err != nil {
		return err
	}
	for i, e := range missing {
		s.vectors[e.ID] = vecs[i]
	}
	s.vecModel = s.emb.Model()
	return s.writeVectors()
}

func (s *DirStore) writeEntries() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range s.sorted() {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(s.dir, EntriesFile), buf.Bytes())
}

func (s *DirStore) writeVectors() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range s.sorted() {
		if v, ok := s.vectors[e.ID]; ok {
			if err := enc.Encode(vectorLine{ID: e.ID, Model: s.vecModel, Vector: v}); err != nil {
				return err
			}
		}
	}
	return writeFile(filepath.Join(s.dir, VectorsFile), buf.Bytes())
}

// sorted is the entries by id; the caller holds mu.
func (s *DirStore) sorted() []Entry {
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// writeFile replaces path whole: a crash leaves the old file or the new.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("knowledge: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("knowledge: %w", err)
	}
	return nil
}
