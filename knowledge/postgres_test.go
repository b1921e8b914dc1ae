package knowledge

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/storetest"
)

// Two servers of a fleet, each with its own handle on one database, add
// and search at once: each sees what the other learned, nothing is lost
// or doubled, and entries both add (the same run learned twice) end as
// one row.
func TestTwoServersShareOnePostgres(t *testing.T) {
	ctx := testCtx(t)
	url := storetest.Postgres(t)
	a, err := OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	withSample(t, a)

	// What one adds, the other finds.
	zebra := Entry{ID: "e-zebra", Kind: Experience, App: "shell", Title: "Feed the zebra in the zoo report", Outcome: Succeeded,
		Text: "Steps that worked:\n- execute_command `zoo feed zebra` → fed", Source: Source{Recording: "runs/zebra"}}
	if err := a.Add(ctx, zebra); err != nil {
		t.Fatal(err)
	}
	hits, err := b.Search(ctx, Query{Text: "zebra", App: "shell"})
	if err != nil || !slices.Equal(ids(hits), []string{"e-zebra"}) || hits[0].Entry.Source.Recording != "runs/zebra" {
		t.Fatalf("server b searching what a added: %v %v", ids(hits), err)
	}

	const rounds = 15
	server := func(s Store, name string, errs chan<- error) {
		for i := range rounds {
			own := Entry{ID: fmt.Sprintf("h-%s-%02d", name, i), Kind: Help, App: "gimp", Title: "scale an image " + name,
				Text: "Image > Scale Image sets the size in pixels.", Source: Source{Path: "gimp.html", Section: name}}
			// Both learn the same run again: an upsert, not a copy.
			shared := sample()[1]
			shared.Text += fmt.Sprintf("\nSeen by %s, round %d.", name, i)
			if err := s.Add(ctx, own, shared); err != nil {
				errs <- fmt.Errorf("%s adding: %w", name, err)
				return
			}
			text, used, err := s.ForPrompt(ctx, "count the lines of data.csv", "shell", 500)
			if err != nil {
				errs <- fmt.Errorf("%s searching: %w", name, err)
				return
			}
			if !strings.HasPrefix(text, promptHead) || !slices.ContainsFunc(used, func(src Source) bool { return src.Recording == "runs/a" }) {
				errs <- fmt.Errorf("%s lost the shell entries:\n%s", name, text)
				return
			}
		}
		errs <- nil
	}
	errs := make(chan error, 2)
	go server(a, "a", errs)
	go server(b, "b", errs)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := len(sample()) + 1 + 2*rounds
	for name, s := range map[string]Store{"a": a, "b": b} {
		if n := count(t, s); n != want {
			t.Errorf("server %s counts %d entries, want %d", name, n, want)
		}
	}
	// Each finds the other's help passages.
	for name, s := range map[string]Store{"a": b, "b": a} {
		hits, err := s.Search(ctx, Query{Text: "scale an image " + name, Kinds: []Kind{Help}, Limit: 40})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range hits {
			if h.Entry.Source.Section == name {
				n++
			}
		}
		if n != rounds {
			t.Errorf("the other server finds %d of %s's %d passages", n, name, rounds)
		}
	}
	// The word counts a search's candidates come from are exact after
	// the replacements and the concurrent adds: as PostgreSQL counts them.
	var wrong int
	err = a.pool.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT word, ndoc FROM ts_stat('SELECT words FROM knowledge_entries')
		UNION ALL SELECT '', count(*)::integer FROM knowledge_entries) AS want
		FULL JOIN (SELECT lexeme, ndoc FROM knowledge_terms WHERE ndoc <> 0) AS got ON got.lexeme = want.word
		WHERE got.ndoc IS DISTINCT FROM want.ndoc`).Scan(&wrong)
	if err != nil || wrong != 0 {
		t.Errorf("%d words miscounted (%v)", wrong, err)
	}
	es, err := a.Entries(ctx)
	if err != nil || len(es) != want || !slices.IsSortedFunc(es, func(x, y Entry) int { return strings.Compare(x.ID, y.ID) }) {
		t.Errorf("entries: %d (%v), want %d by id", len(es), err, want)
	}
}

// The table has what the plan names: kind and app indexed, the words in a
// GIN index over a generated tsvector, vectors as real[].
func TestPostgresSchema(t *testing.T) {
	ctx := testCtx(t)
	url := storetest.Postgres(t)
	s, err := OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A second open finds the table made and changes nothing.
	s, err = OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_entries' ORDER BY indexname`)
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(defs, "\n")
	for _, want := range []string{"USING gin (words)", "USING btree (kind)", "USING btree (app)", "USING gin (apps)", "USING btree (id)"} {
		if !strings.Contains(all, want) {
			t.Errorf("no index %q among:\n%s", want, all)
		}
	}
	var typ string
	if err := conn.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'knowledge_entries'::regclass AND attname = 'embedding'`).Scan(&typ); err != nil || typ != "real[]" {
		t.Errorf("embedding column: %q %v", typ, err)
	}
}

// A store URL's password is in no error and not in the store's name.
func TestPostgresURLPasswordStaysOut(t *testing.T) {
	ctx := testCtx(t)
	// A port nobody listens on: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	const pw = "S3cret-Planted-Pw"
	for _, url := range []string{
		fmt.Sprintf("postgres://saucer:%s@127.0.0.1:%d/knowledge?sslmode=disable&connect_timeout=2", pw, port),
		fmt.Sprintf("postgresql://saucer:%s@127.0.0.1:%d/knowledge?sslmode=nonsense", pw, port),
		fmt.Sprintf("postgres://saucer:%s@127.0.0.1:%d/knowledge?sslmode=disable&connect_timeout=2", strings.ReplaceAll(pw, "-", "%2D"), port),
	} {
		_, err := OpenStore(ctx, url, nil)
		if err == nil {
			t.Fatalf("%s opened", config.RedactURL(url))
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "%2D") {
			t.Errorf("the error repeats the password: %v", err)
		}
		if !strings.Contains(err.Error(), "saucer:[redacted]@127.0.0.1") {
			t.Errorf("the error does not name the store: %v", err)
		}
	}
	if got := config.RedactURL("postgres://saucer:" + pw + "@db/k"); got != "postgres://saucer:[redacted]@db/k" {
		t.Errorf("redacted: %s", got)
	}
	s := &PostgresStore{pws: passwords("postgres://u:" + pw + "@h/d")}
	if err := s.errorf("driver said: password %s is wrong: %w", pw, errors.New("no")); strings.Contains(err.Error(), pw) {
		t.Errorf("errorf kept it: %v", err)
	}
}

// A search's candidates are the entries holding one of its rarer words:
// a word in more than 200 entries (and a fifth of them) finds none by
// itself once the rarer words found the pool, but it does when they did
// not, so a rare word still gives a full page.
func TestPostgresCandidatesComeFromRarerWords(t *testing.T) {
	ctx := testCtx(t)
	s, err := OpenPostgres(ctx, storetest.Postgres(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var es []Entry
	for i := range 300 {
		es = append(es, Entry{ID: fmt.Sprintf("h-%03d", i), Kind: Help, App: "wc", Title: "count the report lines",
			Text: fmt.Sprintf("wc counts the lines of report %d.", i), Source: Source{Path: "wc --help"}})
	}
	for i := range 25 {
		es = append(es, Entry{ID: fmt.Sprintf("q-%02d", i), Kind: Experience, App: "shell", Title: "feed the quokka",
			Text: "The quokka report was written.", Source: Source{Recording: fmt.Sprintf("runs/q%d", i)}})
	}
	es = append(es, Entry{ID: "z-1", Kind: Experience, App: "shell", Title: "Sail to zanzibar", Text: "The zanzibar report.", Source: Source{Recording: "runs/z"}})
	if err := s.Add(ctx, es...); err != nil {
		t.Fatal(err)
	}
	// "quokka" is in 25 entries, more than the pool of 20: the entries
	// found by "count" and "report" alone (in 300 and 326) are not
	// ranked, and a rare word outweighs common ones.
	hits, err := s.Search(ctx, Query{Text: "count the quokka report"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || !slices.ContainsFunc(hits, func(h Hit) bool { return strings.HasPrefix(h.Entry.ID, "q-") }) ||
		slices.ContainsFunc(hits, func(h Hit) bool { return !strings.HasPrefix(h.Entry.ID, "q-") }) {
		t.Errorf("the quokka search: %v, want five quokka entries", ids(hits))
	}
	// "zanzibar" is in one: the next rarest word ("count") fills the page,
	// and the one entry with the rare word comes first.
	hits, err = s.Search(ctx, Query{Text: "count the zanzibar report"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || hits[0].Entry.ID != "z-1" {
		t.Errorf("the zanzibar search: %v, want z-1 first and four more", ids(hits))
	}
	// An app none of whose entries holds the rare word: its entries with
	// the common ones are still found.
	hits, err = s.Search(ctx, Query{Text: "count the quokka report", App: "wc"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || !strings.HasPrefix(hits[0].Entry.ID, "h-") {
		t.Errorf("the quokka search for wc: %v, want five wc entries", ids(hits))
	}
}
