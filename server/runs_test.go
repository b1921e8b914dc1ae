package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/serve"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// TestRunsThroughTheAPI: a served task's recording is listed and walked
// step by step (commands, results, tokens), replayed identically, and
// its files served by name only; an eval's reports are listed and served
// (the HTML one sandboxed), and two evals compared.
func TestRunsThroughTheAPI(t *testing.T) {
	runs, evalsDir := t.TempDir(), t.TempDir()
	cfg := scriptedConfig(t, writeScript)
	f := newFixture(t, server.Options{RunsDir: runs, EvalsDir: evalsDir, Review: serve.Review(nil),
		NewSession: server.RecordTo(runs, cfg, trajectory.Options{}, server.Sessions(cfg, session.Options{}))})
	connect(t, f.wsURL, "box", realDevice(t, t.TempDir()), nil)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "Write 'Hello over AIP' to notes/hello.txt"}, &d)
	if info := f.waitTask(t, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task: %s %s", info.Status, info.Error)
	}

	var list struct{ Runs []server.RunSummary }
	f.api(t, "GET", "/api/runs", nil, &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != d.TaskID || list.Runs[0].Task != "Write 'Hello over AIP' to notes/hello.txt" || list.Runs[0].Status != "FINISH" {
		t.Fatalf("runs: %+v", list.Runs)
	}
	var run server.RunInfo
	f.api(t, "GET", "/api/runs/"+d.TaskID, nil, &run)
	var wrote bool
	for _, st := range run.Steps {
		for _, act := range st.Actions {
			wrote = wrote || (act.Tool == "write_file" && act.Status == "success" && strings.Contains(act.Output, "hello.txt"))
		}
	}
	if !wrote || len(run.Steps) != 7 || run.Steps[0].N != 1 || run.ModelCalls != 7 || run.Usage.CachedTokens == 0 || run.Status != "FINISH" {
		t.Errorf("run: %d steps, usage %+v, status %s, write_file seen %v", len(run.Steps), run.Usage, run.Status, wrote)
	}

	var rep server.ReplayInfo
	if code := f.api(t, "POST", "/api/runs/"+d.TaskID+"/replay", nil, &rep); code != 200 || !rep.Identical || rep.Status != "FINISH" || rep.ModelCalls != 7 {
		t.Errorf("replay: %d %+v", code, rep)
	}
	// A recording changed after the fact diverges, and the diff says where.
	path := filepath.Join(runs, d.TaskID, trajectory.EventsFile)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), `"task":"Write 'Hello over AIP'`, `"task":"Write 'Goodbye'`, 1)), 0o644)
	if f.api(t, "POST", "/api/runs/"+d.TaskID+"/replay", nil, &rep); rep.Identical || rep.Diff == "" {
		t.Errorf("a replay of a changed recording: %+v", rep)
	}

	var e map[string]string
	for path, want := range map[string]int{
		"/api/runs/..%2f..": http.StatusBadRequest,
		"/api/runs/nope":    http.StatusNotFound,
		"/api/runs/" + d.TaskID + "/artifacts/passwd":                              http.StatusBadRequest,
		"/api/runs/" + d.TaskID + "/artifacts/" + strings.Repeat("a", 64) + ".png": http.StatusNotFound,
	} {
		if code := f.api(t, "GET", path, nil, &e); code != want {
			t.Errorf("GET %s: %d %v, want %d", path, code, e, want)
		}
	}

	// Two eval results: A passes its case, B fails it.
	for name, ok := range map[string]bool{"a": true, "b": false} {
		dir := filepath.Join(evalsDir, name)
		tr := &evals.TrialResult{Case: "c1", Trial: 1, Status: "FINISH", Success: ok}
		if !ok {
			tr.Status, tr.Failure = "FAIL", "wrong_answer"
		}
		succ := 0
		if ok {
			succ = 1
		}
		r := &evals.Report{Suite: "suite-" + name, Cases: []evals.CaseReport{{ID: "c1", Trials: []*evals.TrialResult{tr}, Successes: succ}},
			Metrics: evals.Metrics{Cases: 1, Trials: 1, Successes: succ, SuccessRate: float64(succ)}}
		os.MkdirAll(dir, 0o755)
		if err := evals.WriteReports(r, dir); err != nil {
			t.Fatal(err)
		}
	}
	var el struct{ Evals []server.EvalSummary }
	f.api(t, "GET", "/api/evals", nil, &el)
	if len(el.Evals) != 2 || len(el.Evals[0].Files) != 4 {
		t.Fatalf("evals: %+v", el.Evals)
	}
	req, _ := http.NewRequest("GET", f.http.URL+"/api/evals/a/report.html", nil)
	req.Header.Set("X-API-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox allow-scripts") {
		t.Errorf("report.html: %d %v", resp.StatusCode, resp.Header)
	}
	if code := f.api(t, "GET", "/api/evals/a/result.json", nil, &e); code != http.StatusNotFound {
		t.Errorf("a file that is not a report: %d", code)
	}
	var cmp struct {
		evals.Comparison
		Text string
	}
	f.api(t, "GET", "/api/evals/compare?a=a&b=b", nil, &cmp)
	if len(cmp.Regressions) != 1 || cmp.Regressions[0].ID != "c1" || !strings.Contains(cmp.Text, "REGRESSION  c1: 100% → 0%") {
		t.Errorf("compare: %+v", cmp)
	}
}

// TestReviewIsInjected: the server replays and reads evals only through
// Options.Review (it stays below package evals); without one, those
// routes say so instead of failing obscurely.
func TestReviewIsInjected(t *testing.T) {
	runs, evalsDir := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(runs, "r1"), 0o755)
	os.WriteFile(filepath.Join(runs, "r1", trajectory.EventsFile), []byte("{}\n"), 0o644)
	for _, name := range []string{"a", "b"} {
		os.MkdirAll(filepath.Join(evalsDir, name), 0o755)
		os.WriteFile(filepath.Join(evalsDir, name, "report.json"), []byte("{}"), 0o644)
	}
	f := newFixture(t, server.Options{RunsDir: runs, EvalsDir: evalsDir})
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/runs/r1/replay"}, {"GET", "/api/evals"}, {"GET", "/api/evals/compare?a=a&b=b"},
	} {
		var e map[string]string
		if code := f.api(t, c.method, c.path, nil, &e); code != http.StatusNotFound || !strings.Contains(e["error"], "server.Options.Review is not set") {
			t.Errorf("%s %s without a Review: %d %v", c.method, c.path, code, e)
		}
	}
}

// RecordToThen tells of each task's run directory once its recording is
// finished: saucer serve learns it there (knowledge.learn).
func TestRecordToThenTellsOfFinishedRuns(t *testing.T) {
	runs := t.TempDir()
	cfg := scriptedConfig(t, writeScript)
	done := make(chan string, 1)
	f := newFixture(t, server.Options{RunsDir: runs,
		NewSession: server.RecordToThen(runs, cfg, trajectory.Options{}, server.Sessions(cfg, session.Options{}),
			func(_ context.Context, runDir string) { done <- runDir })})
	connect(t, f.wsURL, "box", realDevice(t, t.TempDir()), nil)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "Write 'Hello over AIP' to notes/hello.txt"}, &d)
	select {
	case dir := <-done:
		if dir != filepath.Join(runs, d.TaskID) {
			t.Fatalf("told of %s, want %s", dir, filepath.Join(runs, d.TaskID))
		}
		tr, err := trajectory.Read(dir)
		if err != nil || tr.End() == nil {
			t.Fatalf("the recording was not finished when told: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("not told of the finished run in a minute")
	}
}
