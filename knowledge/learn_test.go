package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The recordings in the repository (the demo suite's and the served
// task's) each give one entry for the run and one per app agent, with
// their steps, outcome and sources.
func TestLearnFromTheRepositorysRecordings(t *testing.T) {
	ctx := ctxFor(t)
	learn := func(dir string) []knowledge.Entry {
		t.Helper()
		es, err := knowledge.LearnDir(ctx, dir, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		return es
	}
	count := learn("../evals/suites/recordings/count-lines")
	if len(count) != 2 {
		t.Fatalf("count-lines: %d entries, want the run and its shell subtask", len(count))
	}
	run, shell := count[0], count[1]
	for _, want := range []string{"Request: How many lines does data.csv have?", "Outcome: succeeded (FINISH)",
		"1. shell: Count the lines of data.csv with wc -l. → FINISH: data.csv has 4 lines.",
		"shell.execute_command `wc -l data.csv` → 4 data.csv", "Answer: data.csv has 4 lines: a header and three rows."} {
		if !strings.Contains(run.Text, want) {
			t.Errorf("the run's entry lacks %q:\n%s", want, run.Text)
		}
	}
	if run.Kind != knowledge.Experience || run.Outcome != knowledge.Succeeded || run.App != "" || !slices.Equal(run.Apps, []string{"shell"}) {
		t.Errorf("the run's entry: %s %s app %q apps %v", run.Kind, run.Outcome, run.App, run.Apps)
	}
	if s := run.Source; s.Recording != "../evals/suites/recordings/count-lines" || s.Agent != "host" || s.Events != [2]int{1, 26} || s.Session != "trajectory" {
		t.Errorf("the run's source: %+v", s)
	}
	if shell.App != "shell" || shell.Title != "Count the lines of data.csv with wc -l." || !strings.Contains(shell.Text, "Tools in order: execute_command") ||
		shell.Source.Agent != "app:shell#1" || shell.Source.Events != [2]int{6, 17} || !slices.Equal(shell.Source.Steps, []int{1}) {
		t.Errorf("the subtask's entry: %+v", shell)
	}

	hello := learn("../evals/suites/recordings/hello")
	if len(hello) != 3 || !slices.Equal(hello[0].Apps, []string{"files", "shell"}) || hello[1].App != "files" || hello[2].App != "shell" {
		t.Errorf("hello: %d entries, apps %v", len(hello), hello[0].Apps)
	}
	moon := learn("../evals/suites/recordings/moon-flight")
	if len(moon) != 1 || moon[0].Outcome != knowledge.Failed || !strings.Contains(moon[0].Label(), "what not to do") || !strings.Contains(moon[0].Text, "no one flies to the Moon") {
		t.Errorf("moon-flight: %+v", moon)
	}
	served := learn("../trajectory/testdata/served-task/trajectory.jsonl")
	if len(served) != 2 || served[1].App != "bench" || !strings.Contains(served[1].Text, "noop note=once") {
		t.Errorf("served task: %+v", served)
	}

	// The same run learned again keeps its ids: a store replaces it.
	if again := learn("../evals/suites/recordings/count-lines"); again[0].ID != run.ID || again[1].ID != shell.ID || run.ID == shell.ID {
		t.Errorf("ids changed: %s %s, then %s %s", run.ID, shell.ID, again[0].ID, again[1].ID)
	}
	as, err := knowledge.LearnDir(ctx, "../evals/suites/recordings/count-lines", nil, &knowledge.LearnOptions{Kind: knowledge.Demonstration})
	if err != nil || as[0].Kind != knowledge.Demonstration || as[0].ID == run.ID {
		t.Errorf("as a demonstration: %v %v", as, err)
	}

	s, err := knowledge.Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(ctx, slices.Concat(count, hello, moon, served)...); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, knowledge.Query{Text: "how many lines are in report.csv"})
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Entry.Source.Recording, "count-lines") {
		t.Fatalf("search: %v %v", hits, err)
	}
}

// A recording cut short, or no recording at all, teaches nothing, and
// says why.
func TestLearnSkipsWhatDidNotEnd(t *testing.T) {
	ctx := ctxFor(t)
	src := "../evals/suites/recordings/count-lines"
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(src, trajectory.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	os.WriteFile(filepath.Join(dir, trajectory.EventsFile), []byte(strings.Join(lines[:12], "")), 0o644)
	os.Symlink(filepath.Join(mustAbs(t, src), trajectory.ArtifactsDir), filepath.Join(dir, trajectory.ArtifactsDir))
	_, err = knowledge.LearnDir(ctx, dir, nil, nil)
	var skip *knowledge.SkipError
	if !errors.As(err, &skip) || !strings.Contains(skip.Reason, "did not end") || !strings.Contains(skip.Reason, "event 12") {
		t.Errorf("a run cut short: %v", err)
	}
	if _, err := knowledge.LearnDir(ctx, t.TempDir(), nil, nil); err == nil || !strings.Contains(err.Error(), "recorded run directory") {
		t.Errorf("no recording: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The planted secrets: an API key in the config (which the model repeats),
// a password in a file a command prints, a token in the environment.
const (
	plantedKey      = "kx-Planted-ApiKey-5150"
	plantedPassword = "Hunter2-Planted-Pw"
	plantedToken    = "tok-Planted-Env-8080"
)

// recordRun runs a task through session.Run with the scripted model on a
// local device in a temporary directory and records it with nothing
// redacted (so that the recording holds the planted secrets and Learn is
// what must remove them). It returns the run's directory and the config.
func recordRun(t *testing.T, task, script string) (string, *config.Config) {
	t.Helper()
	ctx := ctxFor(t)
	t.Setenv("DEPLOY_TOKEN", plantedToken)
	cfgYAML := fmt.Sprintf("model: openai:gpt-4o\nproviders: {openai: {api_key: %s}}\nrecord: {redact: [%s]}\n", plantedKey, plantedPassword)
	cfg, err := config.FromYAML([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "deploy-notes.txt"), []byte("database host db1\ndb password: "+plantedPassword+"\n"), 0o644)
	// The shell scrubs *_TOKEN variables from commands' environment; the
	// token reaches a command's output the way it leaks in practice, from
	// a file someone saved it in.
	os.WriteFile(filepath.Join(work, "token.txt"), []byte(os.Getenv("DEPLOY_TOKEN")+"\n"), 0o644)
	dev, err := local.Device(ctx, cfg, work)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	sc, err := scripted.Parse([]byte(script), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	nothing, err := trajectory.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	apps := map[string]string{}
	for _, ns := range dev.Namespaces() {
		apps[ns.Name] = ns.Description
	}
	runDir := filepath.Join(t.TempDir(), "run")
	rec, err := record.Start(runDir, trajectory.Session{ID: "planted", Task: task, Model: "scripted", Mode: "tools", Apps: apps}, trajectory.Options{Redactor: nothing})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.New(cfg, session.Options{Device: dev, Model: scripted.New(*sc), Observers: []func(agent.Event){rec.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, task)
	if err := rec.Finish(out); err != nil {
		t.Fatal(err)
	}
	return runDir, cfg
}

const deployScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Read the deploy notes and the deploy token (the provider key is ` + plantedKey + `)."}}]
  - text: "The notes are in deploy-notes.txt."
    tool_calls: [{name: execute_command, arguments: {command: "cat deploy-notes.txt token.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "cat missing-notes.txt"}}]
  - expect: "No such file"
    tool_calls: [{name: finish_task, arguments: {result: "The database is db1; its password is ` + plantedPassword + ` and the token ` + plantedToken + `."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Read the notes: database db1, password ` + plantedPassword + `, key ` + plantedKey + `."}}]
`

const failScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Restart the deploy service"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "systemctl restart deploy-planted.service; cat token.txt >&2; exit 3"}}]
  - tool_calls: [{name: fail_task, arguments: {reason: "systemctl could not restart it (token ` + plantedToken + `)"}}]
  - tool_calls: [{name: fail_task, arguments: {reason: "The deploy service would not restart."}}]
`

// Secrets planted in recorded runs reach no entry and no search result,
// though the recordings hold them; a failed run is learned as what not to
// do, and failed commands are summed up.
func TestLearnedEntriesHoldNoPlantedSecret(t *testing.T) {
	ctx := ctxFor(t)
	okRun, cfg := recordRun(t, "Read the deploy notes", deployScript)
	failRun, _ := recordRun(t, "Restart the deploy service", failScript)
	planted := []string{plantedKey, plantedPassword, plantedToken}

	// The recordings hold them: the test would prove nothing otherwise.
	for _, dir := range []string{okRun, failRun} {
		raw, err := os.ReadFile(filepath.Join(dir, trajectory.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), plantedToken) {
			t.Fatalf("%s does not hold the planted token: the test cannot show it is removed", dir)
		}
		if dir == okRun && (!strings.Contains(string(raw), plantedPassword) || !strings.Contains(string(raw), plantedKey)) {
			t.Fatalf("the run does not hold the planted password and key")
		}
		// In the commands' output, not only in what the model wrote.
		tr, err := trajectory.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		var outputs string
		for _, e := range tr.Of(trajectory.TypeStep) {
			for _, r := range e.Results {
				outputs += string(r.Result)
			}
		}
		if !strings.Contains(outputs, plantedToken) || dir == okRun && !strings.Contains(outputs, plantedPassword) {
			t.Fatalf("the commands' output in %s lacks the planted secrets: %s", dir, outputs)
		}
	}

	red, err := trajectory.NewRedactor(cfg.Secrets(nil, nil), append(trajectory.DefaultPatterns(), cfg.Record.RedactPatterns...))
	if err != nil {
		t.Fatal(err)
	}
	ok, err := knowledge.LearnDir(ctx, okRun, red, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := knowledge.LearnDir(ctx, failRun, red, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(ok, failed)
	for _, e := range all {
		for _, s := range planted {
			if strings.Contains(e.Title+e.Text+e.Source.String(), s) {
				t.Errorf("entry %s (%s) holds the planted %q:\n%s", e.ID, e.Title, s, e.Text)
			}
		}
	}
	// What the run did is still there, secrets replaced.
	if len(ok) != 2 || ok[0].Outcome != knowledge.Succeeded || !strings.Contains(ok[0].Text, "cat deploy-notes.txt") ||
		!strings.Contains(ok[0].Text, "db password: "+trajectory.Redacted) {
		t.Errorf("the run's entry:\n%s", ok[0].Text)
	}
	if !strings.Contains(ok[1].Text, "Failed attempts (1; avoid):") || !strings.Contains(ok[1].Text, "`cat missing-notes.txt` → exit 1: cat: missing-notes.txt: No such file") {
		t.Errorf("the failed command is not summed up:\n%s", ok[1].Text)
	}
	if len(failed) != 2 || failed[0].Outcome != knowledge.Failed || failed[1].Outcome != knowledge.Failed ||
		!strings.Contains(failed[1].Text, "exit 3") {
		t.Errorf("the failed run: %+v", failed)
	}

	s, err := knowledge.Open(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	searchHoldsNoSecret(t, s, all, planted)

	// A fleet's PostgreSQL store: not in the table either, in any column.
	t.Run("postgres", func(t *testing.T) {
		url := storetest.Postgres(t)
		s, err := knowledge.OpenPostgres(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		searchHoldsNoSecret(t, s, all, planted)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var table string
		if err := conn.QueryRow(ctx, `SELECT string_agg(k::text, E'\n') FROM knowledge_entries k`).Scan(&table); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(table, "cat deploy-notes.txt") || !strings.Contains(table, "deploy-planted.service") {
			t.Fatalf("the table does not hold the runs' entries:\n%s", table)
		}
		for _, sec := range planted {
			if strings.Contains(table, sec) {
				t.Errorf("the table holds the planted %q", sec)
			}
		}
	})
}

// searchHoldsNoSecret adds the entries to s and searches them for what
// the runs did and for the secrets themselves: no hit and no prompt text
// holds a planted secret, and the failed run is found first for its own
// request.
func searchHoldsNoSecret(t *testing.T, s knowledge.Store, all []knowledge.Entry, planted []string) {
	t.Helper()
	ctx := ctxFor(t)
	if err := s.Add(ctx, all...); err != nil {
		t.Fatal(err)
	}
	for _, q := range append([]string{"deploy notes password token", "restart the deploy service"}, planted...) {
		hits, err := s.Search(ctx, knowledge.Query{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		text, _, err := s.ForPrompt(ctx, q, "", 2000)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			text += h.Entry.Title + h.Entry.Text
		}
		for _, sec := range planted {
			if strings.Contains(text, sec) {
				t.Errorf("searching %q brings back the planted %q", q, sec)
			}
		}
	}
	if hits, _ := s.Search(ctx, knowledge.Query{Text: "restart the deploy service"}); len(hits) == 0 || hits[0].Entry.Outcome != knowledge.Failed {
		t.Errorf("the failed run is not found first for its own request: %v", hits)
	}
}

// summariser stands in for a model that writes an entry's text, and leaks
// what it was given.
type summariser struct{}

func (summariser) Summarise(_ context.Context, tr *trajectory.Trajectory, draft knowledge.Entry) (string, error) {
	return "In short: " + tr.Session().Task + " (the key was " + plantedKey + ")", nil
}

// A summariser writes the text; what it writes is redacted too.
func TestSummariserTextIsRedacted(t *testing.T) {
	red, err := trajectory.NewRedactor([]string{plantedKey}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	es, err := knowledge.LearnDir(ctxFor(t), "../evals/suites/recordings/count-lines", red, &knowledge.LearnOptions{Summariser: summariser{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "In short: How many lines does data.csv have? (the key was " + trajectory.Redacted + ")"; es[0].Text != want {
		t.Errorf("text %q, want %q", es[0].Text, want)
	}
}
