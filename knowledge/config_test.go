package knowledge

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/strategy"
)

// What a front end gives its agents, by knowledge.use or --knowledge:
// nothing under off, or under auto before the store has entries; an error
// that says how to fill it under on; the store's entries once it has
// some; and under auto, a store another process holds is a warning, not
// a failed run.
func TestFromConfigFollowsTheMode(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	t.Setenv("SAUCER_KNOWLEDGE", dir)
	cfg := config.Default()
	ask := strategy.Query{Agent: "app:shell#1", Request: "how long is data.csv?", Subtask: "count the lines of data.csv", App: "shell"}
	var warn bytes.Buffer
	for _, mode := range []string{"", "auto", "off"} {
		if r, done, err := fromConfig(ctx, cfg, mode, &warn); r != nil || err != nil {
			t.Fatalf("mode %q, empty store: %v, %v; want no retriever", mode, r, err)
		} else {
			done()
		}
	}
	if _, _, err := fromConfig(ctx, cfg, "on", &warn); err == nil || !strings.Contains(err.Error(), "saucer learn") {
		t.Fatalf("on, empty store: %v; want an error that says how to fill it", err)
	}
	if _, _, err := fromConfig(ctx, cfg, "always", &warn); err == nil || !strings.Contains(err.Error(), "auto (once the store has entries), on or off") {
		t.Fatalf("a mode that is none: %v", err)
	}
	openSample(t, dir, nil).Close()
	r, done, err := fromConfig(ctx, cfg, "", &warn)
	if err != nil || r == nil {
		t.Fatalf("auto with entries: %v, %v", r, err)
	}
	got, err := r.Retrieve(ctx, ask)
	if err != nil || !strings.Contains(got.Text, "wc -l data.csv") || len(got.Sources) == 0 || !strings.HasPrefix(got.Sources[0], "runs/a") {
		t.Fatalf("retrieved %+v, %v; want the shell experience first, its source named", got, err)
	}
	// Held by this retriever's store: under auto a warning, under on the
	// error.
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = 50 * time.Millisecond
	if r2, _, err := fromConfig(ctx, cfg, "auto", &warn); r2 != nil || err != nil || !strings.Contains(warn.String(), "go without what was learned") {
		t.Fatalf("auto, store held: %v, %v, warned %q", r2, err, warn.String())
	}
	if _, _, err := fromConfig(ctx, cfg, "on", &warn); err == nil || !strings.Contains(err.Error(), "open in another process") {
		t.Fatalf("on, store held: %v", err)
	}
	done()
	if warn.Len() == 0 || strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("warnings: %q; want the one for the held store", warn.String())
	}
}

// knowledge.store names a fleet's PostgreSQL: FromConfig follows the
// modes as with a directory, and the URL's password reaches neither the
// warning nor the error.
func TestFromConfigOpensThePostgresStore(t *testing.T) {
	ctx := testCtx(t)
	const pw = "Planted-Store-Pw"
	// Trust authentication takes any password: the URL carries one to
	// show that it goes nowhere.
	url := strings.Replace(storetest.Postgres(t), "saucer@", "saucer:"+pw+"@", 1)
	t.Setenv("SAUCER_KNOWLEDGE", "")
	cfg := config.Default()
	cfg.Knowledge.Store = url
	var warn bytes.Buffer
	if r, done, err := fromConfig(ctx, cfg, "auto", &warn); r != nil || err != nil {
		t.Fatalf("auto, empty database: %v, %v; want no retriever", r, err)
	} else {
		done()
	}
	_, _, err := fromConfig(ctx, cfg, "on", &warn)
	if err == nil || !strings.Contains(err.Error(), "has no entries") || !strings.Contains(err.Error(), "saucer:[redacted]@") || strings.Contains(err.Error(), pw) {
		t.Fatalf("on, empty database: %v", err)
	}
	s, err := OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	withSample(t, s).Close()
	r, done, err := fromConfig(ctx, cfg, "", &warn)
	if err != nil || r == nil {
		t.Fatalf("auto with entries: %v, %v", r, err)
	}
	defer done()
	got, err := r.Retrieve(ctx, strategy.Query{Agent: "app:shell#1", Request: "how long is data.csv?", Subtask: "count the lines of data.csv", App: "shell"})
	if err != nil || !strings.Contains(got.Text, "wc -l data.csv") || len(got.Sources) == 0 || !strings.HasPrefix(got.Sources[0], "runs/a") {
		t.Fatalf("retrieved %+v, %v", got, err)
	}

	// A database that does not answer: a warning under auto, the error
	// under on, neither with the password.
	cfg.Knowledge.Store = "postgres://saucer:" + pw + "@127.0.0.1:1/knowledge?sslmode=disable&connect_timeout=2"
	if r, _, err := fromConfig(ctx, cfg, "auto", &warn); r != nil || err != nil || !strings.Contains(warn.String(), "cannot connect") {
		t.Fatalf("auto, no database: %v, %v, warned %q", r, err, warn.String())
	}
	if _, _, err := fromConfig(ctx, cfg, "on", &warn); err == nil || !strings.Contains(err.Error(), "cannot connect to the store postgres://saucer:[redacted]@127.0.0.1:1") || strings.Contains(err.Error(), pw) {
		t.Fatalf("on, no database: %v", err)
	}
	if strings.Contains(warn.String(), pw) {
		t.Errorf("the warning holds the password: %s", warn.String())
	}
}

// fromConfig is FromConfig as the mode tests read it: the agents'
// retriever, and the store's release.
func fromConfig(ctx context.Context, cfg *config.Config, mode string, warn io.Writer) (strategy.Retriever, func(), error) {
	u, err := FromConfig(ctx, cfg, mode, warn)
	if err != nil {
		return nil, func() {}, err
	}
	return u.Retriever, u.Close, nil
}

// With knowledge.learn, each run is learned as it ends: the store is made
// for it even under off, the agents are given nothing under off, and
// under auto they are given what the store holds as it fills.
func TestLearnAsRunsEnd(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	t.Setenv("SAUCER_KNOWLEDGE", dir)
	cfg := config.Default()
	cfg.Knowledge.Learn = true
	run, err := filepath.Abs("../evals/suites/recordings/count-lines")
	if err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	off, err := FromConfig(ctx, cfg, "off", &warn)
	if err != nil || off.Retriever != nil {
		t.Fatalf("off with learn: %+v, %v; want a store to learn into and no retriever", off, err)
	}
	n, err := off.Learned(ctx, run)
	if err != nil || n != 2 {
		t.Fatalf("learned %d entries, %v; want the run's and its subtask's", n, err)
	}
	off.Close()
	auto, err := FromConfig(ctx, cfg, "auto", &warn)
	if err != nil || auto.Retriever == nil {
		t.Fatalf("auto with learn: %+v, %v", auto, err)
	}
	defer auto.Close()
	got, err := auto.Retriever.Retrieve(ctx, strategy.Query{Agent: "host", Request: "How many lines does data.csv have?"})
	if err != nil || !strings.Contains(got.Text, "count-lines") {
		t.Fatalf("retrieved %+v, %v; want the learned run", got, err)
	}
	// A run that did not end teaches nothing and is no error.
	cut := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(run, "trajectory.jsonl"))
	os.WriteFile(filepath.Join(cut, "trajectory.jsonl"), []byte(strings.SplitAfterN(string(data), "\n", 3)[0]), 0o644)
	if n, err := auto.Learned(ctx, cut); n != 0 || err != nil {
		t.Fatalf("a cut run: %d, %v", n, err)
	}
	// Without knowledge.learn, Learned does nothing.
	cfg.Knowledge.Learn = false
	plain, err := FromConfig(ctx, config.Default(), "off", &warn)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := plain.Learned(ctx, run); n != 0 || err != nil {
		t.Fatalf("without learn: %d, %v", n, err)
	}
	if warn.Len() != 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}
