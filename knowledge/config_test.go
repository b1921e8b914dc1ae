package knowledge

import (
	"bytes"
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
		if r, done, err := FromConfig(ctx, cfg, mode, &warn); r != nil || err != nil {
			t.Fatalf("mode %q, empty store: %v, %v; want no retriever", mode, r, err)
		} else {
			done()
		}
	}
	if _, _, err := FromConfig(ctx, cfg, "on", &warn); err == nil || !strings.Contains(err.Error(), "saucer learn") {
		t.Fatalf("on, empty store: %v; want an error that says how to fill it", err)
	}
	if _, _, err := FromConfig(ctx, cfg, "always", &warn); err == nil || !strings.Contains(err.Error(), "auto (once the store has entries), on or off") {
		t.Fatalf("a mode that is none: %v", err)
	}
	openSample(t, dir, nil).Close()
	r, done, err := FromConfig(ctx, cfg, "", &warn)
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
	if r2, _, err := FromConfig(ctx, cfg, "auto", &warn); r2 != nil || err != nil || !strings.Contains(warn.String(), "go without what was learned") {
		t.Fatalf("auto, store held: %v, %v, warned %q", r2, err, warn.String())
	}
	if _, _, err := FromConfig(ctx, cfg, "on", &warn); err == nil || !strings.Contains(err.Error(), "open in another process") {
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
	if r, done, err := FromConfig(ctx, cfg, "auto", &warn); r != nil || err != nil {
		t.Fatalf("auto, empty database: %v, %v; want no retriever", r, err)
	} else {
		done()
	}
	_, _, err := FromConfig(ctx, cfg, "on", &warn)
	if err == nil || !strings.Contains(err.Error(), "has no entries") || !strings.Contains(err.Error(), "saucer:[redacted]@") || strings.Contains(err.Error(), pw) {
		t.Fatalf("on, empty database: %v", err)
	}
	s, err := OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	withSample(t, s).Close()
	r, done, err := FromConfig(ctx, cfg, "", &warn)
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
	if r, _, err := FromConfig(ctx, cfg, "auto", &warn); r != nil || err != nil || !strings.Contains(warn.String(), "cannot connect") {
		t.Fatalf("auto, no database: %v, %v, warned %q", r, err, warn.String())
	}
	if _, _, err := FromConfig(ctx, cfg, "on", &warn); err == nil || !strings.Contains(err.Error(), "cannot connect to the store postgres://saucer:[redacted]@127.0.0.1:1") || strings.Contains(err.Error(), pw) {
		t.Fatalf("on, no database: %v", err)
	}
	if strings.Contains(warn.String(), pw) {
		t.Errorf("the warning holds the password: %s", warn.String())
	}
}
