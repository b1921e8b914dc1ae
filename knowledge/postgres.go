package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/strategy"
)

// PostgresStore keeps entries in a PostgreSQL database that a fleet of
// servers shares: the table knowledge_entries (the Entry fields, kind and
// app indexed), a generated tsvector of title (weight A) and text (B)
// with a GIN index for the lexical ranking (ts_rank weighted by inverse
// document frequency, the English configuration, the title counting
// twice), knowledge_terms (how many entries hold each word, for that
// frequency and to take a search's candidates from its rarer words, see
// pgTerms), and with an Embedder each
// entry's vector as real[] beside its model, ranked by cosine in Go over
// the entries that pass the filters. Several processes may Add and Search
// at once: an Add is one transaction of upserts by id, in id order, and
// Adds take turns (an advisory lock) so that the word counts stay exact;
// searches never wait for them.
type PostgresStore struct {
	pool *pgxpool.Pool
	emb  Embedder
	name string   // the URL without its password
	pws  []string // the password, as written and decoded: in no error
}

// The PostgreSQL schema: made (if missing) by OpenPostgres under an
// advisory lock, so that servers starting together make it once.
const (
	pgLock   = 0x6b6e6f77 // "know"
	pgAdds   = pgLock + 1 // held by each Add's transaction
	pgSchema = `
CREATE TABLE IF NOT EXISTS knowledge_entries (
	id text PRIMARY KEY,
	kind text NOT NULL,
	app text NOT NULL DEFAULT '',
	apps text[] NOT NULL DEFAULT '{}',
	title text NOT NULL,
	body text NOT NULL,
	outcome text NOT NULL DEFAULT '',
	source jsonb NOT NULL,
	words tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')) STORED,
	embedding real[],
	embedding_model text,
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS knowledge_entries_words ON knowledge_entries USING gin (words);
CREATE INDEX IF NOT EXISTS knowledge_entries_kind ON knowledge_entries (kind);
CREATE INDEX IF NOT EXISTS knowledge_entries_app ON knowledge_entries (app);
CREATE INDEX IF NOT EXISTS knowledge_entries_apps ON knowledge_entries USING gin (apps);
CREATE TABLE IF NOT EXISTS knowledge_terms (
	lexeme text PRIMARY KEY,
	ndoc integer NOT NULL
);
`
)

// OpenPostgres connects to the PostgreSQL database at url
// (postgres://user:password@host/db?sslmode=...) and makes the table and
// its indexes when missing. With opts.Embedder, entries without a vector
// of its model are embedded first (as Open does). The URL's password is
// in no error and not in Name.
func OpenPostgres(ctx context.Context, url string, opts *Options) (*PostgresStore, error) {
	s := &PostgresStore{name: config.RedactURL(url), pws: passwords(url)}
	if opts != nil {
		s.emb = opts.Embedder
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, s.errorf("knowledge: the store URL %s is not one PostgreSQL reads (%w): give postgres://USER:PASSWORD@HOST:PORT/DATABASE", s.name, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.errorf("knowledge: the store %s: %w", s.name, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, s.errorf("knowledge: cannot connect to the store %s (%w): check the URL, that PostgreSQL runs and accepts this user", s.name, err)
	}
	s.pool = pool
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if s.emb != nil {
		if err := s.embedMissing(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *PostgresStore) migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, pgSchema)
		return err
	})
	if err != nil {
		return s.errorf("knowledge: making the table knowledge_entries in %s: %w (the user needs CREATE on the database's public schema)", s.name, err)
	}
	return nil
}

// errorf is fmt.Errorf with the URL's password, should a driver's message
// repeat it, replaced.
func (s *PostgresStore) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	msg := err.Error()
	for _, pw := range s.pws {
		msg = strings.ReplaceAll(msg, pw, "[redacted]")
	}
	if msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// Name is the store's URL without its password.
func (s *PostgresStore) Name() string { return s.name }

// Close closes the store's connections.
func (s *PostgresStore) Close() error {
	s.pool.Close()
	return nil
}

// Len is how many entries the store holds.
func (s *PostgresStore) Len(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM knowledge_entries`).Scan(&n); err != nil {
		return 0, s.errorf("knowledge: counting the entries of %s: %w", s.name, err)
	}
	return n, nil
}

const pgColumns = `id, kind, app, apps, title, body, outcome, source`

// Entries returns every entry, by id.
func (s *PostgresStore) Entries(ctx context.Context) ([]Entry, error) {
	return s.query(ctx, `SELECT `+pgColumns+` FROM knowledge_entries ORDER BY id`)
}

func (s *PostgresStore) query(ctx context.Context, sql string, args ...any) ([]Entry, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.errorf("knowledge: reading %s: %w", s.name, err)
	}
	var out []Entry
	for rows.Next() {
		e, _, err := scanEntry(rows)
		if err != nil {
			rows.Close()
			return nil, s.errorf("knowledge: reading %s: %w", s.name, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("knowledge: reading %s: %w", s.name, err)
	}
	return out, nil
}

// scanEntry reads pgColumns, and a score when the row has one more.
func scanEntry(rows pgx.Rows) (Entry, float64, error) {
	var (
		e             Entry
		kind, outcome string
		source        []byte
		score         float64
		apps          []string
	)
	dest := []any{&e.ID, &kind, &e.App, &apps, &e.Title, &e.Text, &outcome, &source}
	if len(rows.FieldDescriptions()) > len(dest) {
		dest = append(dest, &score)
	}
	if err := rows.Scan(dest...); err != nil {
		return e, 0, err
	}
	e.Kind, e.Outcome = Kind(kind), Outcome(outcome)
	if len(apps) > 0 {
		e.Apps = apps
	}
	if err := json.Unmarshal(source, &e.Source); err != nil {
		return e, 0, fmt.Errorf("entry %s has a damaged source (%v)", e.ID, err)
	}
	return e, score, nil
}

// pgUpsert stores an entry, replacing the one with its id. A vector is
// kept when the new entry comes without one and its title and text are
// unchanged (a server without an embedder learned the same run again).
const pgUpsert = `
INSERT INTO knowledge_entries (id, kind, app, apps, title, body, outcome, source, embedding, embedding_model)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (id) DO UPDATE SET
	kind = EXCLUDED.kind, app = EXCLUDED.app, apps = EXCLUDED.apps, title = EXCLUDED.title,
	body = EXCLUDED.body, outcome = EXCLUDED.outcome, source = EXCLUDED.source,
	embedding = CASE WHEN EXCLUDED.embedding IS NOT NULL THEN EXCLUDED.embedding
		WHEN knowledge_entries.title = EXCLUDED.title AND knowledge_entries.body = EXCLUDED.body THEN knowledge_entries.embedding END,
	embedding_model = CASE WHEN EXCLUDED.embedding IS NOT NULL THEN EXCLUDED.embedding_model
		WHEN knowledge_entries.title = EXCLUDED.title AND knowledge_entries.body = EXCLUDED.body THEN knowledge_entries.embedding_model END,
	updated_at = now()`

// pgCountWords adds $2 (1 or -1) to the count of each word of the
// entries $1, and to the count of entries (kept under the empty lexeme,
// which no word is).
const pgCountWords = `
INSERT INTO knowledge_terms (lexeme, ndoc)
SELECT l, $2::integer * count(*) FROM (
	SELECT unnest(tsvector_to_array(words)) AS l FROM knowledge_entries WHERE id = ANY($1::text[])
	UNION ALL SELECT '' FROM knowledge_entries WHERE id = ANY($1::text[])) AS w
GROUP BY l ORDER BY l
ON CONFLICT (lexeme) DO UPDATE SET ndoc = knowledge_terms.ndoc + EXCLUDED.ndoc`

// pgBatch is how many upserts go to the server at once.
const pgBatch = 1000

// Add stores entries, replacing those with the same ids, in one
// transaction: another process sees all of them or none. With an
// Embedder, they are embedded first: an embedding error leaves the store
// as it was. The upserts go in id order, so two processes adding the
// same entries at once do not deadlock.
func (s *PostgresStore) Add(ctx context.Context, entries ...Entry) error {
	for _, e := range entries {
		if err := e.check(); err != nil {
			return err
		}
	}
	// The last of an id wins, as in a DirStore.
	byID := map[string]Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	es := make([]Entry, 0, len(byID))
	for _, e := range byID {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	if len(es) == 0 {
		return nil
	}
	var vecs [][]float32
	var model *string
	if s.emb != nil {
		var err error
		if vecs, err = embedEntries(ctx, s.emb, es); err != nil {
			return err
		}
		m := s.emb.Model()
		model = &m
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgAdds); err != nil {
			return err
		}
		// The words of the entries replaced stop counting.
		if _, err := tx.Exec(ctx, pgCountWords, ids, -1); err != nil {
			return err
		}
		for i := 0; i < len(es); i += pgBatch {
			b := &pgx.Batch{}
			for j, e := range es[i:min(i+pgBatch, len(es))] {
				source, err := json.Marshal(e.Source)
				if err != nil {
					return err
				}
				apps := e.Apps
				if apps == nil {
					apps = []string{}
				}
				var vec []float32
				if vecs != nil {
					vec = vecs[i+j]
				}
				b.Queue(pgUpsert, e.ID, string(e.Kind), e.App, apps, e.Title, e.Text, string(e.Outcome), source, vec, model)
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, pgCountWords, ids, 1)
		return err
	})
	if err != nil {
		return s.errorf("knowledge: adding %d entries to %s: %w", len(es), s.name, err)
	}
	return nil
}

// Search finds the entries that fit the query, best first; ties go by id,
// so the same store and query give the same hits in the same order.
func (s *PostgresStore) Search(ctx context.Context, q Query) ([]Hit, error) {
	return search(ctx, s.emb, q, s)
}

// ForPrompt is what an agent is given for its request or subtask (see
// DirStore.ForPrompt: the same search, budget and text).
func (s *PostgresStore) ForPrompt(ctx context.Context, request, app string, budgetTokens int) (string, []Source, error) {
	return forPrompt(ctx, s, request, app, budgetTokens)
}

// Retriever is what the store gives agents (see DirStore.Retriever).
func (s *PostgresStore) Retriever(budget int) strategy.Retriever { return retriever(s, budget) }

// pgFilter keeps the kinds in $2 (none: all) and the entries about the
// app $3 (empty: all; a whole run counts for each of its apps), as passes
// does.
const pgFilter = `(cardinality($2::text[]) = 0 OR kind = ANY($2::text[]))
	AND ($3::text = '' OR app = $3::text OR (app = '' AND apps @> ARRAY[$3::text]))`

// The lexical ranking, as BM25 does in the directory store: the query's
// English lexemes (pgTerms, with how many entries hold each), and for
// each entry that holds one, the sum over the words of its ts_rank (the
// title, weight A 1.0, counting twice the text, B 0.5; divided by 1 + the
// log of the entry's length) times the word's inverse document frequency
// (BM25's, ln(1 + (N - n + 0.5) / (n + 0.5)), from the exact counts in
// knowledge_terms), so that a rare word (a file's name) outweighs common
// ones ("count", "file").
//
// The candidates are the entries that hold one of the query's rarer
// words: those in at most a fifth of the entries (or 200), and, rarest
// first, as many more as it takes to reach the pool between them. A word
// most entries hold adds to the rank of the entries found but finds none
// by itself: ranking every entry that holds one cost 115 ms for the
// host's search at 10,000 entries. When the filters (an app, kinds) leave
// fewer than the pool, every entry holding any of the words is a
// candidate. The counts are exact, so the same store and query give the
// same hits.
const pgTerms = `
SELECT t.l, coalesce(k.ndoc, 0), coalesce((SELECT ndoc FROM knowledge_terms WHERE lexeme = ''), 0)
FROM unnest(tsvector_to_array(to_tsvector('english', $1::text))) AS t(l)
LEFT JOIN knowledge_terms k ON k.lexeme = t.l
ORDER BY t.l`

// pgTerm is a word of a query: its lexeme and how many entries hold it.
type pgTerm struct {
	lexeme string
	df     int
}

func (s *PostgresStore) lexical(ctx context.Context, q Query, pool int) ([]Hit, error) {
	rows, err := s.pool.Query(ctx, pgTerms, q.Text)
	if err != nil {
		return nil, s.errorf("knowledge: searching %s: %w", s.name, err)
	}
	var terms []pgTerm
	var n int
	var t pgTerm
	if _, err := pgx.ForEachRow(rows, []any{&t.lexeme, &t.df, &n}, func() error {
		terms = append(terms, t)
		return nil
	}); err != nil {
		return nil, s.errorf("knowledge: searching %s: %w", s.name, err)
	}
	if len(terms) == 0 {
		return nil, nil // stop words only
	}
	// The rarer words, rarest first (ties by lexeme).
	byDF := slices.Clone(terms)
	sort.SliceStable(byDF, func(i, j int) bool { return byDF[i].df < byDF[j].df })
	var found []pgTerm
	before := 0
	for _, t := range byDF {
		if before < pool || t.df <= max(200, n/5) {
			found = append(found, t)
		}
		before += t.df
	}
	hits, err := s.rank(ctx, q, pool, terms, found, n)
	if err != nil || len(hits) >= pool || len(found) == len(terms) {
		return hits, err
	}
	return s.rank(ctx, q, pool, terms, terms, n)
}

// rank ranks the entries holding one of found that pass q's filters by
// the sum of each term's ts_rank times its inverse document frequency
// among n entries.
func (s *PostgresStore) rank(ctx context.Context, q Query, pool int, terms, found []pgTerm, n int) ([]Hit, error) {
	args := []any{tsOr(found), kindNames(q.Kinds), q.App, pool}
	var score strings.Builder
	for i, t := range terms {
		if i > 0 {
			score.WriteString(" + ")
		}
		idf := math.Log(1 + (float64(max(n-t.df, 0))+0.5)/(float64(t.df)+0.5))
		fmt.Fprintf(&score, "$%d::float8 * ts_rank('{0.1, 0.2, 0.5, 1.0}', words, $%d::tsquery, 1)", len(args)+1, len(args)+2)
		args = append(args, idf, tsOr([]pgTerm{t}))
	}
	sql := `SELECT ` + pgColumns + `, (` + score.String() + `)::float8 AS score
FROM knowledge_entries
WHERE words @@ $1::tsquery AND ` + pgFilter + `
ORDER BY score DESC, id
LIMIT $4`
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.errorf("knowledge: searching %s: %w", s.name, err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		e, score, err := scanEntry(rows)
		if err != nil {
			return nil, s.errorf("knowledge: searching %s: %w", s.name, err)
		}
		hits = append(hits, Hit{Entry: e, Score: score})
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("knowledge: searching %s: %w", s.name, err)
	}
	return hits, nil
}

// tsOr is a tsquery of the terms' lexemes joined by OR, each quoted (a
// quote or backslash in one escaped), so that PostgreSQL takes them as
// they are, not parsed again.
func tsOr(terms []pgTerm) string {
	var b strings.Builder
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString("'" + r.Replace(t.lexeme) + "'")
	}
	return b.String()
}

func kindNames(ks []Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// nearest reads the vectors of the embedder's model of the entries that
// pass the filters, ranks them by cosine in Go, and reads the best n
// entries.
func (s *PostgresStore) nearest(ctx context.Context, v []float32, q Query, n int) ([]Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, embedding FROM knowledge_entries
		WHERE embedding_model = $1 AND `+pgFilter, s.emb.Model(), kindNames(q.Kinds), q.App)
	if err != nil {
		return nil, s.errorf("knowledge: searching the vectors of %s: %w", s.name, err)
	}
	var all []scored
	vn := norm(v)
	var id string
	var w []float32
	_, err = pgx.ForEachRow(rows, []any{&id, &w}, func() error {
		if sim, ok := cosine(v, vn, w); ok {
			all = append(all, scored{Entry{ID: id}, sim})
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf("knowledge: searching the vectors of %s: %w", s.name, err)
	}
	top := best(all, n)
	if len(top) == 0 {
		return nil, nil
	}
	ids := make([]string, len(top))
	for i, e := range top {
		ids[i] = e.ID
	}
	found, err := s.query(ctx, `SELECT `+pgColumns+` FROM knowledge_entries WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	// In the ranking's order; an entry gone since is left out.
	out := make([]Entry, 0, len(found))
	for _, id := range ids {
		if i := slices.IndexFunc(found, func(e Entry) bool { return e.ID == id }); i >= 0 {
			out = append(out, found[i])
		}
	}
	return out, nil
}

// embedMissing embeds the entries that have no vector of the embedder's
// model, embedBatch at a time; an entry changed meanwhile keeps its new
// text's vector (the update matches title and text).
func (s *PostgresStore) embedMissing(ctx context.Context) error {
	missing, err := s.query(ctx, `SELECT `+pgColumns+` FROM knowledge_entries
		WHERE embedding_model IS DISTINCT FROM $1 OR embedding IS NULL ORDER BY id`, s.emb.Model())
	if err != nil {
		return err
	}
	for i := 0; i < len(missing); i += embedBatch {
		part := missing[i:min(i+embedBatch, len(missing))]
		vecs, err := embedEntries(ctx, s.emb, part)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for j, e := range part {
			b.Queue(`UPDATE knowledge_entries SET embedding = $2, embedding_model = $3
				WHERE id = $1 AND title = $4 AND body = $5`, e.ID, vecs[j], s.emb.Model(), e.Title, e.Text)
		}
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return s.errorf("knowledge: storing vectors in %s: %w", s.name, err)
		}
	}
	return nil
}

// passwords is the URL's password as written and decoded; none when it
// has none.
func passwords(s string) []string {
	var out []string
	at, scheme := strings.LastIndex(s, "@"), strings.Index(s, "://")
	if at > scheme && scheme >= 0 {
		if _, p, ok := strings.Cut(s[scheme+3:at], ":"); ok && p != "" {
			out = append(out, p)
		}
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if p, _ := u.User.Password(); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
