package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/trajectory"
)

// saucer learn takes a directory of runs, a run cut short (skipped, with
// the reason) and a help file; --search prints the hits with their
// sources, --budget what an agent would be given.
func TestLearnCommand(t *testing.T) {
	store := t.TempDir()
	cut := filepath.Join(t.TempDir(), "cut-run")
	os.MkdirAll(cut, 0o755)
	data, err := os.ReadFile("../../evals/suites/recordings/moon-flight/trajectory.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(filepath.Join(cut, trajectory.EventsFile), []byte(strings.Join(lines[:3], "")), 0o644)
	moon, _ := filepath.Abs("../../evals/suites/recordings/moon-flight")
	os.Symlink(filepath.Join(moon, trajectory.ArtifactsDir), filepath.Join(cut, trajectory.ArtifactsDir))
	// A recording whose artifacts are gone is skipped too, with the reason.
	noArtifacts := filepath.Join(t.TempDir(), "no-artifacts")
	os.MkdirAll(noArtifacts, 0o755)
	os.WriteFile(filepath.Join(noArtifacts, trajectory.EventsFile), data, 0o644)
	doc := filepath.Join(t.TempDir(), "wc.md")
	os.WriteFile(doc, []byte("# wc\n\n## Counting lines\n\nwc -l FILE prints the number of newlines in FILE.\n"), 0o644)

	out, code := saucer(t, "learn", "--dir", store, "../../evals/suites/recordings", cut, noArtifacts, "--help-doc", "wc="+doc)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"recordings/count-lines: experience (succeeded), How many lines does data.csv have? (experience, 1 subtask)\n",
		"recordings/moon-flight: experience (failed: what not to do)",
		"skipped " + cut + ": the run did not end (the recording stops after event 3",
		"skipped " + noArtifacts + ": cannot read the recording: trajectory " + noArtifacts + ": line 3: artifact sha256:",
		"help for wc from " + doc + ": 1 passage\n",
		"added 7 entries (experience 6, demonstration 0, help 1; 2 runs skipped) to " + store + ", which holds 7",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	out, code = saucer(t, "learn", "--dir", store, "--search", "how many lines has report.csv", "--limit", "2")
	abs, _ := filepath.Abs("../../evals/suites/recordings/count-lines")
	if code != 0 || !strings.HasPrefix(out, "1. [") || !strings.Contains(out, "   source: "+abs+" events ") || strings.Contains(out, "\n3. [") {
		t.Errorf("search: exit %d:\n%s", code, out)
	}
	out, _ = saucer(t, "learn", "--dir", store, "--search", "count newlines", "--kind", "help")
	if !strings.Contains(out, "help: wc.md: Counting lines") || !strings.Contains(out, "source: "+doc+" § Counting lines") || strings.Contains(out, "experience") {
		t.Errorf("help search:\n%s", out)
	}
	out, _ = saucer(t, "learn", "--dir", store, "--search", "how many lines has report.csv", "--budget", "300")
	if !strings.HasPrefix(out, "## What was learned before\n") || !strings.Contains(out, "Source: "+abs) {
		t.Errorf("--budget:\n%s", out)
	}

	// Learning again replaces the same runs' entries.
	out, _ = saucer(t, "learn", "--dir", store, "../../evals/suites/recordings/count-lines/trajectory.jsonl", "--as", "demonstration")
	if !strings.Contains(out, "which holds 9 (experience 6, demonstration 2, help 1)") {
		t.Errorf("as a demonstration:\n%s", out)
	}
	s, err := knowledge.Open(t.Context(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Len(t.Context()); n != 9 {
		t.Errorf("the store holds %d entries, the command said 9", n)
	}
	s.Close()
	out, _ = saucer(t, "learn", "--dir", t.TempDir(), "../../evals/suites/recordings/count-lines")
	if !strings.Contains(out, "holds 2 (experience 2,") {
		t.Errorf("a new store:\n%s", out)
	}
}

// Bad input is a clear error that says what to do.
func TestLearnCommandErrors(t *testing.T) {
	store := t.TempDir()
	empty := t.TempDir()
	broken := t.TempDir()
	os.MkdirAll(filepath.Join(broken, knowledge.IndexDir), 0o755)
	os.WriteFile(filepath.Join(broken, knowledge.IndexDir, "index_meta.json"), []byte("{broken"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"learn", "--dir", store}, "nothing to learn: give recorded runs"},
		{[]string{"learn", "--dir", store, empty}, "holds no recording (no trajectory.jsonl in it or anywhere below it): give a recorded run's directory"},
		{[]string{"learn", "--dir", store, filepath.Join(empty, "nope")}, "give a recorded run's directory"},
		{[]string{"learn", "--dir", store, "--help-doc", "nodoc.md"}, `--help-doc "nodoc.md": give APP=PATH`},
		{[]string{"learn", "--dir", store, "--help-cmd", "tar="}, `give APP=COMMAND`},
		{[]string{"learn", "--dir", store, "--as", "help", empty}, "give experience or demonstration"},
		{[]string{"learn", "--dir", broken, "--search", "x"}, "cannot open the index " + filepath.Join(broken, knowledge.IndexDir)},
		{[]string{"learn", "--dir", store, "--search", "x", "--kind", "tips"}, "give experience, demonstration or help"},
		{[]string{"learn", "--dir", store, "--search", "x", empty}, "learn and search in two commands"},
	} {
		out, code := saucer(t, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%q: exit %d, want an error saying %q:\n%s", c.args, code, c.want, out)
		}
	}
	// A bad run argument changes nothing in the store.
	saucer(t, "learn", "--dir", store, "../../evals/suites/recordings/hello", empty)
	if out, _ := saucer(t, "learn", "--dir", store, "--search", "hello notes"); !strings.Contains(out, "no entries of") {
		t.Errorf("the store took runs from a command that failed:\n%s", out)
	}
}

// knowledge.embeddings names the model; its provider's settings reach it
// (an Ollama base_url without /v1 gets it), and a search embeds the query.
func TestLearnCommandEmbeds(t *testing.T) {
	var mu sync.Mutex
	var models []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		mu.Lock()
		models = append(models, req.Model)
		mu.Unlock()
		var data []map[string]any
		for i, text := range req.Input {
			v := make([]float32, 16)
			for _, word := range strings.Fields(strings.ToLower(text)) {
				v[len(word)%16]++
			}
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(cfg, []byte("knowledge: {embeddings: \"ollama:nomic-embed-text\"}\nproviders: {ollama: {base_url: \""+srv.URL+"\"}}\n"), 0o644)
	store := t.TempDir()
	if out, code := saucer(t, "-c", cfg, "learn", "--dir", store, "../../evals/suites/recordings/count-lines"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code := saucer(t, "-c", cfg, "learn", "--dir", store, "--search", "how many lines")
	mu.Lock()
	defer mu.Unlock()
	if code != 0 || !strings.Contains(out, "count-lines") || len(models) != 2 || models[0] != "nomic-embed-text" {
		t.Errorf("exit %d, embedding requests for %q:\n%s", code, models, out)
	}
	if _, err := os.Stat(filepath.Join(store, knowledge.VectorsFile)); err != nil {
		t.Errorf("no vectors kept: %v", err)
	}

	t.Setenv("OPENAI_API_KEY", "")
	for _, c := range []struct{ yaml, want string }{
		{"knowledge: {embeddings: nomic}\n", "is not PROVIDER:MODEL"},
		{"knowledge: {embeddings: \"openai:text-embedding-3-small\"}\n", "no API key is set"},
		{"knowledge: {embeddings: \"vllm:e5\"}\n", "set providers.vllm.base_url"},
	} {
		os.WriteFile(cfg, []byte(c.yaml), 0o644)
		if out, code := saucer(t, "-c", cfg, "learn", "--dir", t.TempDir(), "--search", "x"); code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, want %q:\n%s", c.yaml, code, c.want, out)
		}
	}
}

// saucer learn --store URL learns into a fleet's PostgreSQL and searches
// it; a second learn (another server) replaces rather than copies; the
// URL's password is not printed.
func TestLearnCommandPostgres(t *testing.T) {
	// Trust authentication takes any password: the URL carries one to
	// show that it is not printed.
	url := strings.Replace(storetest.Postgres(t), "saucer@", "saucer:Planted-Learn-Pw@", 1)
	t.Setenv("SAUCER_KNOWLEDGE", "")
	out, code := saucer(t, "learn", "--store", url, "../../evals/suites/recordings/count-lines")
	if code != 0 || !strings.Contains(out, "added 2 entries (experience 2,") || !strings.Contains(out, "to postgres://saucer:[redacted]@127.0.0.1:") || !strings.Contains(out, "which holds 2 (experience 2,") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "Planted-Learn-Pw") {
		t.Errorf("the password is printed:\n%s", out)
	}
	// Through the config, as a fleet's servers have it.
	cfgFile := filepath.Join(t.TempDir(), "saucer.yaml")
	os.WriteFile(cfgFile, []byte("knowledge:\n  store: \""+url+"\"\n"), 0o600)
	out, code = saucer(t, "--config", cfgFile, "learn", "../../evals/suites/recordings/count-lines")
	if code != 0 || !strings.Contains(out, "which holds 2 (experience 2,") {
		t.Fatalf("learning again through the config: exit %d:\n%s", code, out)
	}
	abs, _ := filepath.Abs("../../evals/suites/recordings/count-lines")
	out, code = saucer(t, "--config", cfgFile, "learn", "--search", "how many lines has report.csv", "--budget", "300")
	if code != 0 || !strings.HasPrefix(out, "## What was learned before\n") || !strings.Contains(out, "Source: "+abs) {
		t.Errorf("--budget: exit %d:\n%s", code, out)
	}
	if out, code := saucer(t, "learn", "--store", url, "--dir", t.TempDir(), "--search", "x"); code == 0 || !strings.Contains(out, "--store and --dir both name the store") {
		t.Errorf("--store and --dir: exit %d:\n%s", code, out)
	}
}

// saucer learn --psr reads a Windows Steps Recorder .zip as a
// demonstration titled with its --request, with the environment's secrets
// and the built-in patterns redacted, and --search finds it with its
// source. Pairs that do not match, and a file that is no recording, are
// errors that change nothing.
func TestLearnCommandPSR(t *testing.T) {
	const secret = "correct-horse-battery-staple" // in the fixture's step 4 comment
	t.Setenv("FILESHARE_PASSWORD", secret)
	mht, err := os.ReadFile("../../knowledge/testdata/psr/save-note.mht")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("Recording_20261207_1002.mht")
	w.Write(mht)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "save-note.zip")
	os.WriteFile(rec, buf.Bytes(), 0o644)
	notZip := filepath.Join(t.TempDir(), "notes.zip")
	os.WriteFile(notZip, []byte("not an archive"), 0o644)
	store := t.TempDir()

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--psr", rec}, "--psr and --request come in pairs, and 1 Steps Recorder file came with 0 requests"},
		{[]string{"--psr", rec, "--request", "a", "--request", "b"}, "came with 2 requests"},
		{[]string{"--psr", rec, "--request", "a", "--psr", notZip, "--request", "b"}, notZip + " is not a zip archive"},
		{[]string{"--psr", rec, "--request", "a", "--search", "x"}, "learn and search in two commands"},
	} {
		out, code := saucer(t, append([]string{"learn", "--dir", store}, c.args...)...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%q: exit %d, want an error saying %q:\n%s", c.args, code, c.want, out)
		}
	}
	if out, _ := saucer(t, "learn", "--dir", store, "--search", "save a note in notepad"); !strings.Contains(out, "no entries of") {
		t.Errorf("the store took a demonstration from a command that failed:\n%s", out)
	}

	out, code := saucer(t, "learn", "--dir", store, "--psr", rec, "--request", "Save the note as notes.txt in Documents")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"learned " + rec + ": demonstration, Save the note as notes.txt in Documents (Steps Recorder, steps 1-5 in notepad)\n",
		"added 1 entry (experience 0, demonstration 1, help 0; 0 runs skipped) to " + store + ", which holds 1 (experience 0, demonstration 1, help 0)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	out, code = saucer(t, "learn", "--dir", store, "--search", "save a note as a txt file with notepad", "--app", "notepad", "--kind", "demonstration")
	if code != 0 || !strings.HasPrefix(out, "1. [") || !strings.Contains(out, "demonstration: Save the note as notes.txt in Documents\n") ||
		!strings.Contains(out, "   source: "+rec+" § steps 1-5\n") || !strings.Contains(out, `1. notepad: Left click on "File (menu item)" in "Untitled - Notepad"`) {
		t.Errorf("search: exit %d:\n%s", code, out)
	}
	s, err := knowledge.Open(t.Context(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Entries(t.Context())
	if err != nil || len(all) != 1 {
		t.Fatalf("entries %d, %v", len(all), err)
	}
	if text := all[0].Text; strings.Contains(text, secret) || strings.Contains(text, "Hunter2-Plaice-77") || !strings.Contains(text, "signed in as [REDACTED]") {
		t.Errorf("the stored demonstration:\n%s", text)
	}
}
