package trajectory_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/trajectory"
)

// recordRun writes a run of about size bytes into runs/name, ended or
// not, last written at when.
func recordRun(t *testing.T, runs, name string, size int, ended bool, when time.Time) {
	t.Helper()
	dir := filepath.Join(runs, name)
	w, err := trajectory.Create(dir, trajectory.Options{ArtifactThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(trajectory.Event{Type: trajectory.TypeSessionStart, Session: &trajectory.Session{Format: trajectory.Format, Task: strings.Repeat("x", size)}})
	if ended {
		w.Write(trajectory.Event{Type: trajectory.TypeSessionEnd, End: &trajectory.End{Status: "FINISH", Answer: strings.Repeat("long answer ", 1000)}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, trajectory.EventsFile), when, when)
}

func names(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return out
}

// TestPrune: record.keep removes runs by age and by total size, the
// oldest first, and never a run that may be running, the one named as
// starting, or anything in the runs folder that is not a run.
func TestPrune(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) string {
		runs := t.TempDir()
		recordRun(t, runs, "old-done", 30000, true, now.Add(-40*24*time.Hour))
		recordRun(t, runs, "old-cut", 30000, false, now.Add(-30*24*time.Hour)) // cut short long ago: not running
		recordRun(t, runs, "week-done", 30000, true, now.Add(-7*24*time.Hour))
		recordRun(t, runs, "running", 30000, false, now.Add(-2*time.Hour))
		recordRun(t, runs, "new-done", 30000, true, now.Add(-time.Hour))
		os.WriteFile(filepath.Join(runs, "saucer-server.db"), []byte(strings.Repeat("d", 100000)), 0o644)
		os.MkdirAll(filepath.Join(runs, "saucer-server.db-tasklog"), 0o755)
		os.Chtimes(filepath.Join(runs, "saucer-server.db"), now.Add(-90*24*time.Hour), now.Add(-90*24*time.Hour))
		return runs
	}
	t.Run("age", func(t *testing.T) {
		runs := setup(t)
		removed, err := trajectory.Prune(runs, trajectory.Keep{Age: 10 * 24 * time.Hour}, now)
		if err != nil || !slices.Equal(names(removed), []string{"old-cut", "old-done"}) {
			t.Fatalf("removed %v, %v", names(removed), err)
		}
		for _, keep := range []string{"week-done", "running", "new-done", "saucer-server.db", "saucer-server.db-tasklog"} {
			if _, err := os.Stat(filepath.Join(runs, keep)); err != nil {
				t.Errorf("%s is gone", keep)
			}
		}
	})
	t.Run("size", func(t *testing.T) {
		runs := setup(t)
		// Five runs of about 30 KB, the three ended ones with 12 KB answers
		// more: 187 KB in all. Within 120 KB, the two oldest go; week-done
		// is starting (named) and stays, as does the running one.
		removed, err := trajectory.Prune(runs, trajectory.Keep{Size: 120000}, now, "week-done")
		if err != nil || !slices.Equal(names(removed), []string{"old-cut", "old-done"}) {
			t.Fatalf("removed %v, %v", names(removed), err)
		}
		removed, err = trajectory.Prune(runs, trajectory.Keep{Size: 1}, now)
		if err != nil || !slices.Equal(names(removed), []string{"new-done", "week-done"}) {
			t.Fatalf("removed %v, %v", names(removed), err)
		}
		if _, err := os.Stat(filepath.Join(runs, "running", trajectory.EventsFile)); err != nil {
			t.Error("a run that may be running was removed")
		}
	})
	t.Run("none", func(t *testing.T) {
		runs := setup(t)
		if removed, err := trajectory.Prune(runs, trajectory.Keep{}, now); err != nil || len(removed) != 0 {
			t.Fatalf("keep all removed %v, %v", removed, err)
		}
		if removed, err := trajectory.Prune(filepath.Join(runs, "absent"), trajectory.Keep{Age: time.Hour}, now); err != nil || len(removed) != 0 {
			t.Fatalf("an absent folder: %v, %v", removed, err)
		}
	})
}
