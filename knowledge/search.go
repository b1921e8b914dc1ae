package knowledge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/strategy"
)

// Store is what callers use of a knowledge store: the directory store
// (DirStore, Open), one process at a time, or the PostgreSQL store
// (PostgresStore, OpenPostgres) that a fleet of servers shares. Both
// search, fuse, filter, fit and render the same way (one code path for
// each); only where the entries and their indexes live differs.
type Store interface {
	// Add stores entries, replacing those with the same ids.
	Add(ctx context.Context, entries ...Entry) error
	// Search finds the entries that fit the query, best first, ties by id.
	Search(ctx context.Context, q Query) ([]Hit, error)
	// ForPrompt is what an agent is given for its request or subtask.
	ForPrompt(ctx context.Context, request, app string, budgetTokens int) (string, []Source, error)
	// Retriever gives agents ForPrompt's text within budget tokens.
	Retriever(budget int) strategy.Retriever
	// Entries is every entry, by id; Len how many there are.
	Entries(ctx context.Context) ([]Entry, error)
	Len(ctx context.Context) (int, error)
	// Name says where the store is, for messages: its directory, or its
	// URL without the password.
	Name() string
	Close() error
}

var (
	_ Store = (*DirStore)(nil)
	_ Store = (*PostgresStore)(nil)
)

// Query is what to search for.
type Query struct {
	// Text is the request or subtask, in words.
	Text string
	// App keeps entries about that app (a whole run counts for each of
	// its apps); empty keeps all.
	App string
	// Kinds keeps entries of these kinds; empty keeps all.
	Kinds []Kind
	// Limit bounds the hits (0: 5).
	Limit int
	// TokenBudget bounds the hits' tokens as ForPrompt renders them (0:
	// no bound). The last hit that does not fit whole is cut to fit.
	TokenBudget int
}

// Hit is an entry found, with its score and ranks.
type Hit struct {
	Entry Entry
	// Score is the lexical score (BM25 in a DirStore, ts_rank_cd in a
	// PostgresStore), or with embeddings the reciprocal rank fusion of
	// the lexical and vector ranks.
	Score float64
	// Lexical and Vector are the entry's ranks (from 1) in each ranking,
	// 0 when it was not in one.
	Lexical, Vector int
	// Cut says the text was shortened to fit the token budget.
	Cut bool
}

// rrfK is the rank constant of reciprocal rank fusion (Cormack et al.).
const rrfK = 60

// ranker is what a store contributes to a search: its two rankings of the
// entries that pass the query's filters, best first, at most pool each.
type ranker interface {
	// lexical ranks by the words (Hit.Score set, best first, ties by id).
	lexical(ctx context.Context, q Query, pool int) ([]Hit, error)
	// nearest ranks by cosine similarity to v (best first, ties by id);
	// nothing when the store holds no vectors.
	nearest(ctx context.Context, v []float32, q Query, pool int) ([]Entry, error)
}

// search is every store's Search: the query checked and embedded (with
// emb), the store's rankings fused by reciprocal rank when there are
// vectors, the hits sorted (ties by id), limited and fitted to the budget.
func search(ctx context.Context, emb Embedder, q Query, r ranker) ([]Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, errors.New("knowledge: empty search: give the request or subtask to search for")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	pool := max(4*limit, 20)
	var qvec []float32
	if emb != nil {
		vs, err := emb.Embed(ctx, []string{q.Text})
		if err != nil {
			return nil, fmt.Errorf("knowledge: embedding the query: %w", err)
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("knowledge: the embedder gave %d vectors for one query", len(vs))
		}
		qvec = vs[0]
	}
	lex, err := r.lexical(ctx, q, pool)
	if err != nil {
		return nil, err
	}
	var near []Entry
	if qvec != nil {
		if near, err = r.nearest(ctx, qvec, q, pool); err != nil {
			return nil, err
		}
	}
	return fuse(lex, near, limit, q.TokenBudget), nil
}

// fuse merges a lexical ranking (scores set) and a vector one: with no
// vector ranking the lexical scores stand, else each hit scores the
// reciprocal rank fusion of its ranks. The best limit hits, ties by id,
// are fitted to budget tokens (0: no bound).
func fuse(lex []Hit, near []Entry, limit, budget int) []Hit {
	byID := map[string]*Hit{}
	hits := make([]*Hit, 0, len(lex)+len(near))
	for i := range lex {
		h := lex[i]
		h.Lexical = i + 1
		byID[h.Entry.ID] = &h
		hits = append(hits, &h)
	}
	if len(near) > 0 {
		for i, e := range near {
			h := byID[e.ID]
			if h == nil {
				h = &Hit{Entry: e}
				byID[e.ID] = h
				hits = append(hits, h)
			}
			h.Vector = i + 1
		}
		for _, h := range hits {
			h.Score = 0
			if h.Lexical > 0 {
				h.Score += 1 / float64(rrfK+h.Lexical)
			}
			if h.Vector > 0 {
				h.Score += 1 / float64(rrfK+h.Vector)
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Entry.ID < hits[j].Entry.ID
	})
	out := make([]Hit, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, *h)
	}
	if budget > 0 {
		out = fit(out, budget)
	}
	return out
}

// scored is an entry and its similarity to a query's vector.
type scored struct {
	e   Entry
	sim float64
}

// cosine is the cosine similarity of v (whose norm is vn) and w; false
// when they do not compare (other lengths, a zero vector) or have nothing
// in common.
func cosine(v []float32, vn float64, w []float32) (float64, bool) {
	if len(w) != len(v) {
		return 0, false
	}
	var dot float64
	for i := range v {
		dot += float64(v[i]) * float64(w[i])
	}
	d := vn * norm(w)
	if d == 0 || dot <= 0 {
		return 0, false
	}
	return dot / d, true
}

// best is the n most similar, ties by id.
func best(all []scored, n int) []Entry {
	sort.Slice(all, func(i, j int) bool {
		if all[i].sim != all[j].sim {
			return all[i].sim > all[j].sim
		}
		return all[i].e.ID < all[j].e.ID
	})
	out := make([]Entry, 0, min(n, len(all)))
	for _, sc := range all[:min(n, len(all))] {
		out = append(out, sc.e)
	}
	return out
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// passes says whether an entry passes a query's kind and app filters.
func passes(e Entry, q Query) bool {
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, e.Kind) {
		return false
	}
	if q.App != "" && e.App != q.App && !(e.App == "" && slices.Contains(e.Apps, q.App)) {
		return false
	}
	return true
}

// tokenModel is the model whose tokenizer counts budgets (o200k_base).
const tokenModel = "gpt-4o"

// fit keeps the hits whose rendered text fits budget tokens; the first
// that does not fit whole is cut to what is left (when that is worth
// having) and ends the list.
func fit(hits []Hit, budget int) []Hit {
	used := 0
	for i := range hits {
		n := tokens.Count(tokenModel, render(i+1, hits[i]))
		if used+n <= budget {
			used += n
			continue
		}
		left := budget - used
		head := tokens.Count(tokenModel, render(i+1, Hit{Entry: Entry{Kind: hits[i].Entry.Kind, Outcome: hits[i].Entry.Outcome, Title: hits[i].Entry.Title, Source: hits[i].Entry.Source}}))
		if left-head < 40 {
			return hits[:i]
		}
		h := hits[i]
		h.Entry.Text = cutTokens(h.Entry.Text, left-head-2)
		h.Cut = true
		return append(hits[:i:i], h)
	}
	return hits
}

// cutTokens shortens text to about n tokens, at a line or word end. It
// guesses the cut from the text's tokens per byte and counts again only
// to step back: two or three counts, not a search.
func cutTokens(text string, n int) string {
	total := tokens.Count(tokenModel, text)
	if total <= n {
		return text
	}
	at := len(text) * n / total
	for at > 0 && tokens.Count(tokenModel, text[:at]) > n {
		at = at * 9 / 10
	}
	cut := strings.ToValidUTF8(text[:at], "")
	if i := strings.LastIndexAny(cut, "\n "); i > len(cut)/2 {
		cut = cut[:i]
	}
	return cut + " …"
}

// embedBatch is how many texts go in one embeddings request.
const embedBatch = 64

// embedEntries embeds the entries (title and text), embedBatch a request.
func embedEntries(ctx context.Context, emb Embedder, entries []Entry) ([][]float32, error) {
	out := make([][]float32, 0, len(entries))
	for i := 0; i < len(entries); i += embedBatch {
		part := entries[i:min(i+embedBatch, len(entries))]
		texts := make([]string, len(part))
		for j, e := range part {
			texts[j] = e.Title + "\n" + e.Text
		}
		vs, err := emb.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("knowledge: embedding entries with %s: %w", emb.Model(), err)
		}
		if len(vs) != len(texts) {
			return nil, fmt.Errorf("knowledge: %s gave %d vectors for %d texts", emb.Model(), len(vs), len(texts))
		}
		out = append(out, vs...)
	}
	return out, nil
}
