package knowledge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// sample is a handful of entries of each kind, shaped like learned ones.
func sample() []Entry {
	return []Entry{
		{ID: "e-1", Kind: Experience, Apps: []string{"shell"}, Title: "How many lines does data.csv have?", Outcome: Succeeded,
			Text:   "Request: How many lines does data.csv have?\nSteps that worked:\n- shell.execute_command `wc -l data.csv` → 4 data.csv\nAnswer: 4",
			Source: Source{Recording: "runs/a", Agent: "host", Events: [2]int{1, 26}}},
		{ID: "e-2", Kind: Experience, App: "shell", Title: "Count the lines of data.csv with wc -l.", Outcome: Succeeded,
			Text:   "Subtask for shell: Count the lines of data.csv with wc -l.\nTools in order: execute_command",
			Source: Source{Recording: "runs/a", Agent: "app:shell#1", Events: [2]int{6, 17}, Steps: []int{1}}},
		{ID: "e-3", Kind: Experience, App: "files", Title: "Write a note to notes/hello.txt", Outcome: Failed,
			Text:   "Subtask for files: Write a note to notes/hello.txt\nFailed attempts (1; avoid):\n- write_file path=/root/notes/hello.txt → permission denied",
			Source: Source{Recording: "runs/b", Agent: "app:files#1", Events: [2]int{6, 12}}},
		{ID: "d-1", Kind: Demonstration, App: "files", Title: "Archive the logs folder", Outcome: Succeeded,
			Text:   "Steps that worked:\n- execute_command `tar czf logs.tgz logs` → ok",
			Source: Source{Recording: "runs/c", Agent: "host"}},
		{ID: "h-1", Kind: Help, App: "tar", Title: "man tar: DESCRIPTION", Text: "tar saves many files together into a single tape or disk archive, and can restore individual files from the archive.",
			Source: Source{Path: "man tar", Section: "DESCRIPTION"}},
		{ID: "h-2", Kind: Help, App: "wc", Title: "wc --help", Text: "Print newline, word, and byte counts for each FILE. -l, --lines print the newline counts",
			Source: Source{Path: "wc --help"}},
	}
}

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Entry.ID)
	}
	return out
}

func openSample(t *testing.T, dir string, opts *Options) *DirStore {
	t.Helper()
	s, err := Open(testCtx(t), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Add(testCtx(t), sample()...); err != nil {
		t.Fatal(err)
	}
	return s
}

// opener gives a handle on a test's one store (its directory, or its
// database), closed when the test ends. A DirStore's next handle is
// opened once the last is closed (one process at a time holds it);
// PostgreSQL handles may be open at once, as a fleet's servers are.
type opener func(t *testing.T, opts *Options) Store

// eachStore runs f on a directory store and on a PostgreSQL store (a
// real server in a temporary directory; skipped where PostgreSQL is not
// installed, failed under CI), so both behave the same.
func eachStore(t *testing.T, f func(t *testing.T, open opener)) {
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		f(t, func(t *testing.T, opts *Options) Store {
			t.Helper()
			s, err := Open(testCtx(t), dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := storetest.Postgres(t)
		f(t, func(t *testing.T, opts *Options) Store {
			t.Helper()
			s, err := OpenPostgres(testCtx(t), url, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// withSample is s with the sample entries added.
func withSample(t *testing.T, s Store) Store {
	t.Helper()
	if err := s.Add(testCtx(t), sample()...); err != nil {
		t.Fatal(err)
	}
	return s
}

func count(t *testing.T, s Store) int {
	t.Helper()
	n, err := s.Len(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The lexical ranking (BM25, or PostgreSQL's ts_rank_cd) puts the
// entries that share the most words first, and the search filters by
// kind and app; a whole run counts for each of its apps.
func TestSearchRanksAndFilters(t *testing.T) { eachStore(t, testSearchRanksAndFilters) }

func testSearchRanksAndFilters(t *testing.T, open opener) {
	s := withSample(t, open(t, nil))
	ctx := testCtx(t)

	hits, err := s.Search(ctx, Query{Text: "count the lines of data.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) < 2 || !slices.Contains(ids(hits[:2]), "e-1") || !slices.Contains(ids(hits[:2]), "e-2") {
		t.Fatalf("hits %v: want the two line-counting entries first", ids(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("hit %d scores %f above hit %d's %f", i, hits[i].Score, i-1, hits[i-1].Score)
		}
	}
	if hits[0].Lexical != 1 || hits[0].Vector != 0 {
		t.Errorf("lexical only: ranks %d/%d", hits[0].Lexical, hits[0].Vector)
	}

	hits, _ = s.Search(ctx, Query{Text: "archive files with tar", Kinds: []Kind{Help}})
	if len(hits) == 0 || hits[0].Entry.ID != "h-1" {
		t.Errorf("help only: %v, want h-1 first", ids(hits))
	}
	for _, h := range hits {
		if h.Entry.Kind != Help {
			t.Errorf("help only: %s is %s", h.Entry.ID, h.Entry.Kind)
		}
	}
	hits, _ = s.Search(ctx, Query{Text: "lines csv notes archive", App: "shell"})
	if got := ids(hits); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"e-1", "e-2"}) {
		t.Errorf("app shell: %v, want e-1 (a run that used shell) and e-2", got)
	}
	hits, _ = s.Search(ctx, Query{Text: "notes hello archive", Kinds: []Kind{Experience, Demonstration}, App: "files"})
	if got := ids(hits); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"d-1", "e-3"}) {
		t.Errorf("files experience and demonstrations: %v", got)
	}
	if hits, _ = s.Search(ctx, Query{Text: "lines", Limit: 1}); len(hits) != 1 {
		t.Errorf("limit 1: %d hits", len(hits))
	}
	if _, err := s.Search(ctx, Query{Text: "  "}); err == nil || !strings.Contains(err.Error(), "give the request") {
		t.Errorf("empty search: %v", err)
	}
}

// Entries and the index last; a lost index is rebuilt from the entries;
// adding the same id again replaces the entry.
func TestStorePersistsAndRebuilds(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	s := openSample(t, dir, nil)
	changed := sample()[0]
	changed.Text += "\nNote: zebra"
	if err := s.Add(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s); n != len(sample()) {
		t.Fatalf("%d entries after replacing one, want %d", n, len(sample()))
	}
	s.Close()

	s2, err := Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s2.Search(ctx, Query{Text: "zebra"})
	if err != nil || !slices.Equal(ids(hits), []string{"e-1"}) {
		t.Fatalf("after reopening: %v %v", ids(hits), err)
	}
	s2.Close()

	if err := os.RemoveAll(filepath.Join(dir, IndexDir)); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if hits, err := s3.Search(ctx, Query{Text: "zebra"}); err != nil || !slices.Equal(ids(hits), []string{"e-1"}) {
		t.Fatalf("after the index was removed: %v %v", ids(hits), err)
	}
	if hits, _ := s3.Search(ctx, Query{Text: "tar archive"}); len(hits) == 0 {
		t.Fatal("the rebuilt index lost the help entries")
	}
}

// A damaged store says what is wrong and what to do.
func TestDamagedStoreIsAClearError(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, EntriesFile), []byte(`{"id":"e-1","kind":"experience","title":"x","text":"y"}`+"\nnot json\n"), 0o644)
	_, err := Open(ctx, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "remove") {
		t.Errorf("damaged entries: %v", err)
	}

	dir = t.TempDir()
	os.MkdirAll(filepath.Join(dir, IndexDir), 0o755)
	os.WriteFile(filepath.Join(dir, IndexDir, "index_meta.json"), []byte("{broken"), 0o644)
	_, err = Open(ctx, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot open the index") || !strings.Contains(err.Error(), "remove that directory") {
		t.Errorf("damaged index: %v", err)
	}

	s, err := Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(ctx, Entry{ID: "x", Kind: "tips", Title: "t", Text: "t"}); err == nil || !strings.Contains(err.Error(), "experience, demonstration or help") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Open(ctx, "", nil); err == nil || !strings.Contains(err.Error(), "knowledge.dir") {
		t.Errorf("no dir: %v", err)
	}
}

// The hits fit the token budget: whole ones first, the next cut to fit.
func TestSearchFitsTheTokenBudget(t *testing.T) { eachStore(t, testSearchFitsTheTokenBudget) }

func testSearchFitsTheTokenBudget(t *testing.T, open opener) {
	ctx := testCtx(t)
	s := open(t, nil)
	long := strings.Repeat("The backup script copies the reports folder to the archive disk and checks the sums. ", 40)
	var es []Entry
	for i, id := range []string{"a", "b", "c"} {
		es = append(es, Entry{ID: id, Kind: Experience, Title: "backup reports " + id, Text: long[:len(long)-i*10], Outcome: Succeeded, Source: Source{Recording: "runs/" + id}})
	}
	if err := s.Add(ctx, es...); err != nil {
		t.Fatal(err)
	}
	all, _ := s.Search(ctx, Query{Text: "backup the reports"})
	if len(all) != 3 {
		t.Fatalf("%d hits", len(all))
	}
	one := tokensOf(render(1, all[0]))
	hits, _ := s.Search(ctx, Query{Text: "backup the reports", TokenBudget: one + one/2})
	if len(hits) != 2 || hits[0].Cut || !hits[1].Cut {
		t.Fatalf("budget of 1.5 entries: %d hits (cut %v)", len(hits), func() (c []bool) {
			for _, h := range hits {
				c = append(c, h.Cut)
			}
			return
		}())
	}
	total := 0
	for i, h := range hits {
		total += tokensOf(render(i+1, h))
	}
	if total > one+one/2 {
		t.Errorf("the hits take %d tokens, budget %d", total, one+one/2)
	}
	if hits, _ := s.Search(ctx, Query{Text: "backup the reports", TokenBudget: 10}); len(hits) != 0 {
		t.Errorf("a budget of 10 tokens took %d hits", len(hits))
	}
}

// A store held open elsewhere is waited for, then refused with the reason.
func TestStoreHeldElsewhere(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s, err := Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = 100 * time.Millisecond
	if _, err := Open(ctx, dir, nil); err == nil || !strings.Contains(err.Error(), "open in another process") {
		t.Fatalf("a second open: %v", err)
	}
}

// Agents search at once while entries are added.
func TestConcurrentSearchAndAdd(t *testing.T) { eachStore(t, testConcurrentSearchAndAdd) }

func testConcurrentSearchAndAdd(t *testing.T, open opener) {
	ctx := testCtx(t)
	s := withSample(t, open(t, nil))
	want, _, err := s.ForPrompt(ctx, "count the lines of data.csv", "shell", 500)
	if err != nil || want == "" {
		t.Fatal(want, err)
	}
	errs := make(chan error, 9)
	for range 8 {
		go func() {
			for range 20 {
				got, _, err := s.ForPrompt(ctx, "count the lines of data.csv", "shell", 500)
				// Scores move as entries come (BM25's statistics), so the
				// order may too; the shell entries stay.
				if err == nil && (!strings.HasPrefix(got, promptHead) || strings.Count(got, "Source: runs/a") != strings.Count(want, "Source: runs/a")) {
					err = errors.New("the shell entries went missing while help entries were added:\n" + got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		for i := range 20 {
			if err := s.Add(ctx, Entry{ID: "h-x" + string(rune('a'+i)), Kind: Help, App: "gimp", Title: "scale an image", Text: "Image > Scale Image sets the size in pixels.", Source: Source{Path: "gimp.html"}}); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range 9 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s); n != len(sample())+20 {
		t.Errorf("%d entries", n)
	}
}
