package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// oldRun writes a finished recorded run named name into runs, last
// written age ago.
func oldRun(t *testing.T, runs, name string, age time.Duration) {
	t.Helper()
	dir := filepath.Join(runs, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, trajectory.EventsFile)
	lines := `{"seq":1,"type":"session_start"}` + "\n" + `{"seq":2,"type":"session_end"}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	age1(t, path, age)
}

// age1 sets path's times to age ago.
func age1(t *testing.T, path string, age time.Duration) {
	t.Helper()
	then := time.Now().Add(-age)
	if err := os.Chtimes(path, then, then); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestServerPrunesRunsWhileItServes: a server prunes its runs directory
// as record.keep says when it starts and again every PruneEvery while it
// serves (a server runs for weeks), and never removes the recording of a
// task it is running, however old its last line is.
func TestServerPrunesRunsWhileItServes(t *testing.T) {
	const month = 30 * 24 * time.Hour
	runs := t.TempDir()
	oldRun(t, runs, "start-old-1", 2*month)
	oldRun(t, runs, "start-old-2", 3*month)
	oldRun(t, runs, "recent", time.Hour)
	cfg := scriptedConfig(t, askScript)
	f := newFixture(t, server.Options{RunsDir: runs, KeepRuns: trajectory.Keep{Age: month}, PruneEvery: time.Hour,
		NewSession: server.RecordTo(runs, cfg, trajectory.Options{}, server.Sessions(cfg, session.Options{})), AskTimeout: time.Minute})

	// At start.
	f.logs.waitFor(t, 1, "record.keep removed 2 old runs from "+runs)
	if exists(filepath.Join(runs, "start-old-1")) || exists(filepath.Join(runs, "start-old-2")) || !exists(filepath.Join(runs, "recent")) {
		t.Fatal("the prune at start did not remove exactly the runs older than record.keep's age")
	}

	// A task that waits for a person, its recording last written long ago
	// (a question unanswered for weeks), is kept; an old ended run beside
	// it is not.
	connect(t, f.wsURL, "box", realDevice(t, t.TempDir()), nil)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d)
	q := f.waitPending(t, d.TaskID, 1)[0]
	taskRun := filepath.Join(runs, d.TaskID)
	if !exists(filepath.Join(taskRun, trajectory.EventsFile)) {
		t.Fatalf("the task's run %s is not recorded", taskRun)
	}
	age1(t, filepath.Join(taskRun, trajectory.EventsFile), 2*month)
	oldRun(t, runs, "later-old", 2*month)
	removed := f.srv.PruneRuns()
	if !slices.Equal(removed, []string{filepath.Join(runs, "later-old")}) || !exists(taskRun) {
		t.Fatalf("pruned %v while the task ran (its run exists: %v)", removed, exists(taskRun))
	}

	// Once it has ended, its run is as any other.
	var got server.PendingInfo
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+q.ID, map[string]string{"answer": "out.txt"}, &got)
	a := f.waitPending(t, d.TaskID, 2)[1]
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+a.ID, map[string]bool{"approve": true}, &got)
	if info := f.waitTask(t, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task %s: %s", info.Status, info.Error)
	}
	// Its recording was closed before the task read as ended.
	age1(t, filepath.Join(taskRun, trajectory.EventsFile), 2*month)
	if removed := f.srv.PruneRuns(); !slices.Equal(removed, []string{taskRun}) {
		t.Fatalf("pruned %v after the task ended, want its run", removed)
	}
}

// TestServerPrunesOnItsOwn: the pruning repeats every PruneEvery without
// anyone asking.
func TestServerPrunesOnItsOwn(t *testing.T) {
	runs := t.TempDir()
	f := newFixture(t, server.Options{RunsDir: runs, KeepRuns: trajectory.Keep{Age: time.Hour}, PruneEvery: 5 * time.Millisecond})
	for i := range 3 {
		oldRun(t, runs, fmt.Sprintf("old-%d", i), 2*time.Hour)
		f.logs.waitFor(t, i+1, "record.keep removed 1 old runs from "+runs)
		if exists(filepath.Join(runs, fmt.Sprintf("old-%d", i))) {
			t.Fatalf("old-%d was said removed but is there", i)
		}
	}
}
