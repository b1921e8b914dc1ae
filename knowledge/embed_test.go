package knowledge

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// synonyms make the test's embedding model see meaning that words alone
// do not show: a folder is a directory, to erase is to delete.
var synonyms = map[string]string{"folder": "directory", "dir": "directory", "erase": "delete", "remove": "delete", "wipe": "delete", "scratch": "temporary", "tmp": "temporary"}

// bagOfWords is the test model: each word (after synonyms) hashed into
// one of 64 dimensions.
func bagOfWords(text string) []float32 {
	v := make([]float32, 64)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		w = strings.TrimSuffix(w, "s")
		if s, ok := synonyms[w]; ok {
			w = s
		}
		if len(w) < 3 || w == "the" || w == "and" {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%64]++
	}
	return v
}

// embeddingServer speaks OpenAI's embeddings API on loopback and records
// what it was asked.
type embeddingServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
}

func newEmbeddingServer(t *testing.T) *embeddingServer {
	es := &embeddingServer{}
	es.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		es.mu.Lock()
		es.requests = append(es.requests, req)
		es.mu.Unlock()
		type datum struct {
			Object    string    `json:"object"`
			Embedding []float32 `json:"embedding"`
			Index     int       `json:"index"`
		}
		out := struct {
			Object string         `json:"object"`
			Data   []datum        `json:"data"`
			Model  string         `json:"model"`
			Usage  map[string]int `json:"usage"`
		}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 1, "total_tokens": 1}}
		// In reverse: the client puts them in order by index.
		for i := len(req.Input) - 1; i >= 0; i-- {
			out.Data = append(out.Data, datum{"embedding", bagOfWords(req.Input[i]), i})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(es.Close)
	return es
}

func (es *embeddingServer) inputs() (calls, texts int) {
	es.mu.Lock()
	defer es.mu.Unlock()
	for _, r := range es.requests {
		texts += len(r.Input)
	}
	return len(es.requests), texts
}

// With an embedder, a search finds by meaning what words miss, and fuses
// both rankings; the vectors are kept and not asked for again.
func TestEmbeddingsFuseWithLexicalSearch(t *testing.T) {
	eachStore(t, testEmbeddingsFuseWithLexicalSearch)
}

func testEmbeddingsFuseWithLexicalSearch(t *testing.T, open opener) {
	ctx := testCtx(t)
	es := newEmbeddingServer(t)
	emb := NewOpenAIEmbedder(es.URL+"/v1", "k-test", "test-embed", nil)
	s := withSample(t, open(t, &Options{Embedder: emb}))
	extra := Entry{ID: "e-9", Kind: Experience, App: "shell", Title: "Delete the temporary directory build/cache", Outcome: Succeeded,
		Text: "Steps that worked:\n- execute_command `rm -r build/cache` → ok", Source: Source{Recording: "runs/d"}}
	if err := s.Add(ctx, extra); err != nil {
		t.Fatal(err)
	}
	if calls, texts := es.inputs(); calls != 2 || texts != len(sample())+1 {
		t.Fatalf("%d embedding requests of %d texts, want 2 of %d", calls, texts, len(sample())+1)
	}
	if es.requests[0].Model != "test-embed" || !slices.ContainsFunc(es.requests[0].Input, func(in string) bool { return strings.HasPrefix(in, sample()[0].Title+"\n") }) {
		t.Fatalf("first request: model %q, input %q", es.requests[0].Model, es.requests[0].Input)
	}

	// No word in common but for stop words: only the vectors find it.
	hits, err := s.Search(ctx, Query{Text: "wipe the scratch dir"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Entry.ID != "e-9" || hits[0].Lexical != 0 || hits[0].Vector != 1 {
		t.Fatalf("by meaning: %+v", hits)
	}
	// Words and meaning agree: both ranks, fused.
	hits, _ = s.Search(ctx, Query{Text: "how many lines in data.csv"})
	if len(hits) == 0 || hits[0].Lexical == 0 || hits[0].Vector == 0 {
		t.Fatalf("both: %+v", hits)
	}
	if want := 1/float64(rrfK+hits[0].Lexical) + 1/float64(rrfK+hits[0].Vector); hits[0].Score != want {
		t.Errorf("fused score %f, want %f", hits[0].Score, want)
	}
	// Filters hold for the vector side too.
	hits, _ = s.Search(ctx, Query{Text: "wipe the scratch dir", Kinds: []Kind{Help}})
	for _, h := range hits {
		if h.Entry.Kind != Help {
			t.Errorf("help only, by meaning: %s", h.Entry.ID)
		}
	}
	s.Close()

	calls, _ := es.inputs()
	s2 := open(t, &Options{Embedder: emb})
	if now, _ := es.inputs(); now != calls {
		t.Errorf("reopening embedded again: %d requests, had %d", now, calls)
	}
	if hits, _ := s2.Search(ctx, Query{Text: "wipe the scratch dir"}); len(hits) == 0 || hits[0].Entry.ID != "e-9" {
		t.Errorf("after reopening: %v", ids(hits))
	}
	s2.Close()

	// Another model's vectors are not compared with this one's queries.
	_, before := es.inputs()
	open(t, &Options{Embedder: NewOpenAIEmbedder(es.URL+"/v1", "k", "other-embed", nil)})
	if _, after := es.inputs(); after-before != len(sample())+1 {
		t.Errorf("a new model embedded %d entries, want all %d", after-before, len(sample())+1)
	}
}

// An embeddings endpoint that fails leaves the store as it was, and says so.
func TestEmbeddingErrorLeavesTheStore(t *testing.T) {
	eachStore(t, testEmbeddingErrorLeavesTheStore)
}

func testEmbeddingErrorLeavesTheStore(t *testing.T, open opener) {
	ctx := testCtx(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"message":"model \"nomic\" not found","type":"not_found"}}`))
	}))
	defer srv.Close()
	s := open(t, &Options{Embedder: NewOpenAIEmbedder(srv.URL+"/v1", "", "nomic", nil)})
	err := s.Add(ctx, sample()...)
	if err == nil || !strings.Contains(err.Error(), "nomic") || !strings.Contains(err.Error(), "base_url") {
		t.Fatalf("add: %v", err)
	}
	if n := count(t, s); n != 0 {
		t.Errorf("%d entries kept after the embedder failed", n)
	}
}
