package knowledge

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/internal/storetest"
)

// The benchmarks' entries: 10,000 shaped like those Learn and the help
// readers make from real recordings and manuals (see the count-lines and
// hello recordings: request, plan, steps with commands and outputs,
// answer; subtasks with their tool sequences; help passages of up to 200
// words), over a vocabulary with a long tail of file and project names.
var (
	benchOnce    sync.Once
	benchEntries []Entry
)

var (
	bVerbs   = []string{"count", "list", "archive", "compress", "copy", "move", "rename", "delete", "find", "search", "replace", "sort", "summarise", "convert", "download", "back up", "restore", "check", "install", "update", "configure", "open", "edit", "write", "read", "print", "merge", "split", "extract", "compare", "resize", "crop", "email", "schedule", "translate", "tag", "encrypt", "sign", "upload", "clean"}
	bObjects = []string{"the lines of", "the rows of", "the log files in", "the CSV report", "the images under", "the invoices in", "the notes about", "the spreadsheet", "the slides for", "the database dump of", "the photos from", "the PDF manual of", "the config of", "the backups of", "the errors in", "the meeting notes for", "the contacts in", "the budget sheet for", "the release notes of", "the test results of"}
	bApps    = []string{"shell", "files", "desktop", "browser", "mail", "calc", "writer", "gimp", "git", "docker"}
	bTools   = map[string][]string{
		"shell": {"execute_command"}, "files": {"read_file", "write_file", "list_directory", "move_file", "search_files"},
		"desktop": {"click", "type_text", "press_key", "screenshot", "scroll"}, "browser": {"navigate", "click", "fill", "snapshot"},
		"mail": {"search_mail", "send_mail", "read_mail"}, "calc": {"open_sheet", "set_cell", "read_range", "save"},
		"writer": {"open_document", "insert_text", "export_pdf"}, "gimp": {"open_image", "scale_image", "export_image"},
		"git": {"status", "commit", "diff", "log"}, "docker": {"ps", "logs", "restart"},
	}
	bCommands = []string{"wc -l %s", "tar czf %s.tgz %s", "grep -c ERROR %s", "sort -u %s", "cut -d, -f2 %s", "du -sh %s", "find . -name '%s'", "head -n 20 %s", "sha256sum %s", "gzip -k %s", "ls -l %s", "cp %s backup/", "sed -i 's/old/new/g' %s", "awk -F, '{s+=$3} END {print s}' %s", "xz -d %s"}
	bSyll     = []string{"ka", "lo", "mi", "ra", "ten", "vo", "su", "pe", "dri", "zan", "qu", "bel", "nor", "fi", "gam", "hol", "ix", "jun", "wy", "tor"}
	bWords    = strings.Fields("the a of to and in for with from on by at as is was that this it be are or an which not but have has were their they file files folder report data list name names line lines count total number first last new old every each all only before after when then into over under sort order sum average largest smallest error errors warning log logs archive backup copy user users project projects date month year week day time size bytes page pages table column columns row rows value values text word words image images photo document documents sheet cell cells mail message messages address server service option options setting settings path directory")
)

func benchName(r *rand.Rand) string {
	n := 2 + r.IntN(2)
	var b strings.Builder
	for range n {
		b.WriteString(bSyll[r.IntN(len(bSyll))])
	}
	return b.String()
}

func benchFile(r *rand.Rand) string {
	exts := []string{".csv", ".log", ".txt", ".pdf", ".xlsx", ".png", ".md", ".json"}
	dirs := []string{"", "data/", "logs/", "notes/", "reports/", "photos/", "exports/"}
	return dirs[r.IntN(len(dirs))] + benchName(r) + fmt.Sprint(r.IntN(100)) + exts[r.IntN(len(exts))]
}

func benchSentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		if r.IntN(8) == 0 {
			w[i] = benchName(r)
		} else {
			w[i] = bWords[r.IntN(len(bWords))]
		}
	}
	return strings.Join(w, " ")
}

func benchRequest(r *rand.Rand) (string, string) {
	file := benchFile(r)
	return fmt.Sprintf("%s %s %s and %s", strings.ToUpper(bVerbs[r.IntN(len(bVerbs))][:1])+bVerbs[r.IntN(len(bVerbs))][1:], bObjects[r.IntN(len(bObjects))], file, benchSentence(r, 4+r.IntN(6))), file
}

func benchSteps(r *rand.Rand, app, file string, n int) (string, []string) {
	var b strings.Builder
	var seq []string
	b.WriteString("Steps that worked:\n")
	for range n {
		tools := bTools[app]
		tool := tools[r.IntN(len(tools))]
		seq = append(seq, tool)
		if app == "shell" {
			c := bCommands[r.IntN(len(bCommands))]
			cmd := fmt.Sprintf(c, file, file)
			if i := strings.Index(cmd, "%!"); i >= 0 {
				cmd = cmd[:i]
			}
			fmt.Fprintf(&b, "- %s `%s` → %d %s\n", tool, cmd, r.IntN(5000), file)
		} else {
			fmt.Fprintf(&b, "- %s path=%s → %s\n", tool, file, benchSentence(r, 5+r.IntN(10)))
		}
	}
	if r.IntN(4) == 0 {
		fmt.Fprintf(&b, "Failed attempts (1; avoid):\n- %s path=%s → exit 1: %s: No such file or directory\n", seq[0], benchFile(r), file)
	}
	return b.String(), seq
}

func benchMake() []Entry {
	benchOnce.Do(func() {
		r := rand.New(rand.NewPCG(36, 10000))
		for len(benchEntries) < 10000 {
			i := len(benchEntries)
			req, file := benchRequest(r)
			app := bApps[r.IntN(len(bApps))]
			outcome := Succeeded
			if r.IntN(5) == 0 {
				outcome = Failed
			}
			src := Source{Recording: fmt.Sprintf("/home/ops/runs/20261207-%06d-%s", i, benchName(r)), Session: benchName(r), Agent: "host", Events: [2]int{1, 20 + r.IntN(200)}}
			switch k := r.IntN(10); {
			case k < 4: // a whole run
				sub := fmt.Sprintf("%s %s %s.", strings.ToUpper(bVerbs[r.IntN(len(bVerbs))][:1])+bVerbs[r.IntN(len(bVerbs))][1:], bObjects[r.IntN(len(bObjects))], file)
				steps, _ := benchSteps(r, app, file, 1+r.IntN(6))
				text := fmt.Sprintf("Request: %s\nOutcome: %s (FINISH)\nPlan:\n1. %s: %s → FINISH: %s\n%sAnswer: %s\n", req, outcome, app, sub, benchSentence(r, 8), steps, benchSentence(r, 12))
				benchEntries = append(benchEntries, Entry{ID: idOf(Experience, src.Recording, "host"), Kind: Experience, Apps: []string{app}, Title: req, Text: text, Outcome: outcome, Source: src})
			case k < 8: // a subtask, or a demonstration
				kind := Experience
				if k == 7 {
					kind = Demonstration
				}
				steps, seq := benchSteps(r, app, file, 1+r.IntN(8))
				sub := fmt.Sprintf("%s %s %s.", bVerbs[r.IntN(len(bVerbs))], bObjects[r.IntN(len(bObjects))], file)
				text := fmt.Sprintf("Subtask for %s: %s\nPart of the request: %s\nTools in order: %s\n%sOutcome: %s (FINISH): %s\n", app, sub, req, strings.Join(seq, " → "), steps, outcome, benchSentence(r, 10))
				src.Agent, src.Steps = "app:"+app+"#1", []int{1, 2}
				benchEntries = append(benchEntries, Entry{ID: idOf(kind, src.Recording, src.Agent), Kind: kind, App: app, Title: sub, Text: text, Outcome: outcome, Source: src})
			default: // a help passage
				var paras []string
				for range 2 + r.IntN(4) {
					paras = append(paras, fmt.Sprintf("--%s, -%c  %s", benchName(r), 'a'+rune(r.IntN(26)), benchSentence(r, 15+r.IntN(30))))
				}
				sec := strings.ToUpper(bWords[r.IntN(len(bWords))])
				path := "man " + app
				benchEntries = append(benchEntries, Entry{ID: idOf(Help, app, path, sec, fmt.Sprint(i)), Kind: Help, App: app, Title: path + ": " + sec,
					Text: strings.Join(paras, "\n\n"), Source: Source{Path: path, Section: sec}})
			}
		}
	})
	return benchEntries
}

// benchRequestText is a typical request an agent is given.
const benchRequestText = "Count the lines of the CSV reports in data/ and write the total to notes/summary.txt"

// benchStore builds a store of the 10,000 entries, closes it and opens it
// again, as a session finds it: built earlier by saucer learn, its index
// persisted (not still merging the segments of the build). One search
// before the timer loads the token counter's vocabulary, once per
// process.
func benchStore(b *testing.B, opts *Options) *DirStore {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	s, err := Open(ctx, dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Add(ctx, benchMake()...); err != nil {
		b.Fatal(err)
	}
	s.Close()
	if s, err = Open(ctx, dir, opts); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, _, err := s.ForPrompt(ctx, benchRequestText, "", 1000); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSearch10k: one search of 10,000 entries for a typical request,
// as ForPrompt makes it for an app agent (its app, 5 hits, 1,000 tokens).
// The bound is 20 ms per agent.
func BenchmarkSearch10k(b *testing.B) {
	s := benchStore(b, nil)
	ctx := context.Background()
	for b.Loop() {
		text, used, err := s.ForPrompt(ctx, benchRequestText, "shell", 1000)
		if err != nil || len(used) == 0 || text == "" {
			b.Fatalf("%d hits, %v", len(used), err)
		}
	}
}

// BenchmarkSearch10kHost: the host's search, over every app.
func BenchmarkSearch10kHost(b *testing.B) {
	s := benchStore(b, nil)
	ctx := context.Background()
	for b.Loop() {
		hits, err := s.Search(ctx, Query{Text: benchRequestText, Limit: 5, TokenBudget: 1000})
		if err != nil || len(hits) == 0 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}

// localEmbedder is the test's bag-of-words model in process: the fused
// search's own cost (the query's vector against 10,000), without the
// provider's round trip.
type localEmbedder struct{}

func (localEmbedder) Model() string { return "bag-of-words" }
func (localEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = bagOfWords(t)
	}
	return out, nil
}

// BenchmarkSearch10kFused: lexical and vector rankings fused (64-dimension
// vectors; a provider's are 768 to 3,072, and its round trip comes on top).
func BenchmarkSearch10kFused(b *testing.B) {
	s := benchStore(b, &Options{Embedder: localEmbedder{}})
	ctx := context.Background()
	for b.Loop() {
		hits, err := s.Search(ctx, Query{Text: benchRequestText, App: "shell", Limit: 5, TokenBudget: 1000})
		if err != nil || len(hits) == 0 || hits[0].Vector == 0 && hits[0].Lexical == 0 {
			b.Fatalf("%v, %v", hits, err)
		}
	}
}

// BenchmarkBuild10k: a new store of 10,000 entries, indexed and written
// (entries.jsonl and the bleve index). The bound is one minute.
func BenchmarkBuild10k(b *testing.B) {
	es := benchMake()
	ctx := context.Background()
	var dir string
	for b.Loop() {
		dir = b.TempDir()
		s, err := Open(ctx, dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Add(ctx, es...); err != nil {
			b.Fatal(err)
		}
		if n, _ := s.Len(ctx); n != len(es) {
			b.Fatalf("%d entries", n)
		}
		s.Close()
	}
	var size int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	b.ReportMetric(float64(size)/(1<<20), "MiB/store")
}

// BenchmarkOpen10k: opening a store of 10,000 entries (reading
// entries.jsonl, opening the persisted index), once per session.
func BenchmarkOpen10k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := Open(ctx, dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Add(ctx, benchMake()...); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := Open(ctx, dir, nil)
		if n, _ := s.Len(ctx); err != nil || n != 10000 {
			b.Fatalf("%v", err)
		}
		s.Close()
	}
}

// pgBenchStore is a PostgresStore holding the 10,000 entries, on a server
// started for the benchmark; one search before the timer loads the token
// counter's vocabulary.
func pgBenchStore(b *testing.B, opts *Options) *PostgresStore {
	b.Helper()
	ctx := context.Background()
	s, err := OpenPostgres(ctx, storetest.Postgres(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.Add(ctx, benchMake()...); err != nil {
		b.Fatal(err)
	}
	// As a server finds a table its fleet filled: analysed.
	if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE knowledge_entries`); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.ForPrompt(ctx, benchRequestText, "", 1000); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPostgresSearch10k: BenchmarkSearch10k on a PostgresStore (an
// app agent's ForPrompt: its app, 5 hits, 1,000 tokens), over loopback.
// The bound is the same 20 ms.
func BenchmarkPostgresSearch10k(b *testing.B) {
	s := pgBenchStore(b, nil)
	ctx := context.Background()
	for b.Loop() {
		text, used, err := s.ForPrompt(ctx, benchRequestText, "shell", 1000)
		if err != nil || len(used) == 0 || text == "" {
			b.Fatalf("%d hits, %v", len(used), err)
		}
	}
}

// BenchmarkPostgresSearch10kHost: the host's search, over every app.
func BenchmarkPostgresSearch10kHost(b *testing.B) {
	s := pgBenchStore(b, nil)
	ctx := context.Background()
	for b.Loop() {
		text, used, err := s.ForPrompt(ctx, benchRequestText, "", 1000)
		if err != nil || len(used) == 0 || text == "" {
			b.Fatalf("%d hits, %v", len(used), err)
		}
	}
}

// BenchmarkPostgresSearch10kFused: lexical and vector rankings fused, the
// vectors (64 dimensions, real[]) read from the table and ranked by
// cosine in Go.
func BenchmarkPostgresSearch10kFused(b *testing.B) {
	s := pgBenchStore(b, &Options{Embedder: localEmbedder{}})
	ctx := context.Background()
	for b.Loop() {
		hits, err := s.Search(ctx, Query{Text: benchRequestText, App: "shell", Limit: 5, TokenBudget: 1000})
		if err != nil || len(hits) == 0 || hits[0].Vector == 0 && hits[0].Lexical == 0 {
			b.Fatalf("%v, %v", hits, err)
		}
	}
}

// BenchmarkPostgresBuild10k: the table made and 10,000 entries added (one
// transaction), from nothing.
func BenchmarkPostgresBuild10k(b *testing.B) {
	es := benchMake()
	ctx := context.Background()
	url := storetest.Postgres(b)
	var size int64
	for b.Loop() {
		s, err := OpenPostgres(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Add(ctx, es...); err != nil {
			b.Fatal(err)
		}
		if n, err := s.Len(ctx); err != nil || n != len(es) {
			b.Fatalf("%d entries, %v", n, err)
		}
		b.StopTimer()
		if err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('knowledge_entries')`).Scan(&size); err != nil {
			b.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `DROP TABLE knowledge_entries`); err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/table")
}
