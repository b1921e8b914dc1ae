package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server/store"
)

// locked opens the SQLite store at path as saucer serve does: held.
func locked(t *testing.T, path string) (*store.SQL, error) {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*store.SQL)
	if err := s.Lock(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return s, nil
}

// TestEndedTaskDropsItsJournal: only a running task is resumed, so a
// task's journal goes once its record says it ended, but not when the
// record did not land (another server runs the task now).
func TestEndedTaskDropsItsJournal(t *testing.T) {
	ctx := context.Background()
	for name, spec := range map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "e.db"), "postgres": storetest.Postgres(t)} {
		t.Run(name, func(t *testing.T) {
			s, err := store.Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			put := func(id, server, status string, wait bool) {
				t.Helper()
				if err := s.PutTask(ctx, store.Task{ID: id, ClientID: "dev", Status: status, Server: server, CreatedAt: time.Now(), Data: json.RawMessage(`{}`)}, wait); err != nil {
					t.Fatal(err)
				}
			}
			journal := func(id string) int {
				t.Helper()
				j, err := s.Journal(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return len(j)
			}
			for _, id := range []string{"mine", "moved"} {
				put(id, "a", "running", false)
				for seq := 1; seq <= 3; seq++ {
					if err := s.Append(ctx, id, store.Entry{Seq: seq, Kind: "round", Key: "k", Data: json.RawMessage(`[]`)}, seq == 3); err != nil {
						t.Fatal(err)
					}
				}
			}
			put("mine", "a", "completed", true)
			if n := journal("mine"); n != 0 {
				t.Errorf("an ended task kept its journal: %d entries", n)
			}
			// b no longer runs "moved" (a does): its word that the task
			// ended lands nowhere, and takes nothing with it.
			put("moved", "b", "failed", true)
			if got, _ := s.Task(ctx, "moved"); got.Status != "running" {
				t.Fatalf("another server's write landed: %+v", got)
			}
			if n := journal("moved"); n != 3 {
				t.Errorf("a running task's journal after another server said it ended: %d entries, want 3", n)
			}
		})
	}
}

// TestReplaysATaskLogAKilledServerLeft: a store that a server of the
// release with a task log left when it was killed (made by that release:
// testdata/killed-with-tasklog) is taken over with nothing lost: what
// only the log held is in the database, the journals of tasks that ended
// or were deleted are gone, and so is the log.
func TestReplaysATaskLogAKilledServerLeft(t *testing.T) {
	path := copyKilled(t, nil)
	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	checkReplayed(t, s, true)
	if _, err := os.Stat(path + "-tasklog"); !os.IsNotExist(err) {
		t.Errorf("the task log is still there after the replay: %v", err)
	}
}

// TestTaskLogTornAtTheEnd: a log whose last record was cut short by the
// kill is applied up to that record.
func TestTaskLogTornAtTheEnd(t *testing.T) {
	path := copyKilled(t, func(seg []byte) []byte { return seg[:len(seg)-5] })
	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	checkReplayed(t, s, false) // the last record, "theirs", is left out
}

// TestTaskLogThatCannotBeApplied: a log the database does not take stays
// where it is, and the server is refused with what to do; once the
// cause is fixed the next start applies it.
func TestTaskLogThatCannotBeApplied(t *testing.T) {
	path := copyKilled(t, nil)
	raw, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db := raw.(*store.SQL).DB()
	if _, err := db.Exec(`ALTER TABLE journal RENAME TO journal_away`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := locked(t, path); err == nil || !strings.Contains(err.Error(), "could not be moved into the database") || !strings.Contains(err.Error(), "fix the cause and start again") {
		t.Fatalf("Lock with a log the database refuses: %v", err)
	}
	if _, err := os.Stat(path + "-tasklog"); err != nil {
		t.Fatalf("the log went although the database did not take it: %v", err)
	}
	raw, err = store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.(*store.SQL).DB().Exec(`ALTER TABLE journal_away RENAME TO journal`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	checkReplayed(t, s, true)
}

// copyKilled copies testdata/killed-with-tasklog to a temporary
// directory, its log segment through edit when it is not nil, and
// returns the database's path there.
func copyKilled(t *testing.T, edit func([]byte) []byte) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	db, err := os.ReadFile("testdata/killed-with-tasklog/state.db")
	if err != nil {
		t.Fatal(err)
	}
	seg, err := os.ReadFile("testdata/killed-with-tasklog/state.db-tasklog/0000000000000002.log")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		seg = edit(seg)
	}
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path+"-tasklog", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+"-tasklog", "0000000000000002.log"), seg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkReplayed checks what the killed server had written, as the
// testdata's maker (the release with the task log) wrote it: before a
// checkpoint, "old-running" and "old-ending" with two journal entries
// each; only in the log, three more entries and a new record for
// "old-running", the end of "old-ending", a new running task with two
// entries, a task written and deleted, and another server's task
// (theirs, the log's last record, which a second server's write did not
// replace).
func checkReplayed(t *testing.T, s store.Store, theirs bool) {
	t.Helper()
	ctx := context.Background()
	status := map[string]string{}
	all, err := s.Tasks(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range all {
		status[task.ID] = task.Status
	}
	want := map[string]string{"old-running": "running", "old-ending": "completed", "new-running": "running"}
	if theirs {
		want["theirs"] = "running"
	}
	if fmt.Sprint(status) != fmt.Sprint(want) {
		t.Errorf("tasks after the replay: %v, want %v", status, want)
	}
	if got, _ := s.Task(ctx, "old-running"); string(got.Data) != `{"id":"old-running","status":"running","v":2}` {
		t.Errorf("old-running's record is not the log's: %s", got.Data)
	}
	for id, n := range map[string]int{"old-running": 5, "new-running": 2, "old-ending": 0, "new-gone": 0} {
		j, err := s.Journal(ctx, id)
		if err != nil || len(j) != n {
			t.Errorf("journal of %s: %d entries (%v), want %d", id, len(j), err, n)
			continue
		}
		for i, e := range j {
			if e.Seq != i+1 || string(e.Data) != fmt.Sprintf(`{"task":%q,"seq":%d}`, id, i+1) {
				t.Errorf("journal of %s, entry %d: %+v", id, i, e)
			}
		}
	}
}

// TestSQLiteSurvivesAKill: a process that writes tasks and journals is
// killed; every write it waited for, and every write of the task before
// one, is in the database it left (SQLite's WAL is the only log).
func TestSQLiteSurvivesAKill(t *testing.T) {
	if path := os.Getenv("SAUCER_KILLED_WRITER"); path != "" {
		killedWriter(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteSurvivesAKill$")
	cmd.Env = append(os.Environ(), "SAUCER_KILLED_WRITER="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "written" {
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if running, err := s.Tasks(ctx, "running", 0); err != nil || len(running) != 9 {
		t.Fatalf("running tasks after the kill: %d, %v; want 9", len(running), err)
	}
	if done, _ := s.Tasks(ctx, "completed", 0); len(done) != 10 {
		t.Fatalf("completed tasks after the kill: %d, want 10", len(done))
	}
	if _, err := s.Task(ctx, "task-07"); err == nil {
		t.Error("a deleted task came back")
	}
	for i := range 20 {
		id := fmt.Sprintf("task-%02d", i)
		j, err := s.Journal(ctx, id)
		if i == 7 || i%2 == 0 { // deleted, or ended
			if len(j) != 0 {
				t.Errorf("the journal of %s (deleted or ended) is there: %d entries", id, len(j))
			}
			continue
		}
		if err != nil || len(j) != 5 {
			t.Fatalf("journal of %s: %d entries, %v; want 5", id, len(j), err)
		}
		for k, e := range j {
			if e.Seq != k+1 || string(e.Data) != fmt.Sprintf(`{"task":%d,"seq":%d}`, i, k+1) {
				t.Fatalf("journal of %s, entry %d: %+v", id, k, e)
			}
		}
	}
}

// killedWriter is the process TestSQLiteSurvivesAKill kills: it writes
// 20 tasks with 5 journal entries each (only the last waited for),
// completes half of them, deletes one, says so and waits.
func killedWriter(t *testing.T, path string) {
	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Now()
	for i := range 20 {
		id := fmt.Sprintf("task-%02d", i)
		s.PutTask(ctx, store.Task{ID: id, ClientID: "dev", Status: "running", CreatedAt: t0.Add(time.Duration(i)), Data: json.RawMessage(`{}`)}, false)
		for seq := 1; seq <= 5; seq++ {
			data := json.RawMessage(fmt.Sprintf(`{"task":%d,"seq":%d}`, i, seq))
			if err := s.Append(ctx, id, store.Entry{Seq: seq, Kind: "round", Key: "k", Data: data}, seq == 5); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 20; i += 2 {
		id := fmt.Sprintf("task-%02d", i)
		if err := s.PutTask(ctx, store.Task{ID: id, ClientID: "dev", Status: "completed", CreatedAt: t0, Data: json.RawMessage(`{"end":true}`)}, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteTask(ctx, "task-07"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("written")
	time.Sleep(time.Hour)
}

// TestFullDisk: on a disk with no room left, a write that is waited for
// is refused with ErrFull, saying where to free space, and the store
// says so (Problem); what it held is kept and read, and writes nobody
// waited for are not lost: once there is room they are stored, in
// order, before what came after them.
func TestFullDisk(t *testing.T) {
	dir := storetest.TinyDisk(t, 2<<20)
	path := filepath.Join(dir, "state.db")
	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(v int, wait bool) error {
		return s.PutTask(ctx, store.Task{ID: "kept", ClientID: "dev", Status: "running", CreatedAt: time.Now(), Data: json.RawMessage(fmt.Sprintf(`{"v":%d}`, v))}, wait)
	}
	entry := func(seq int, wait bool) error {
		return s.Append(ctx, "kept", store.Entry{Seq: seq, Kind: "round", Key: "k", Data: json.RawMessage(fmt.Sprintf(`[%d]`, seq))}, wait)
	}
	check := func(v, entries int) {
		t.Helper()
		if got, err := s.Task(ctx, "kept"); err != nil || string(got.Data) != fmt.Sprintf(`{"v":%d}`, v) {
			t.Errorf("the record: %s, %v; want v %d", got.Data, err, v)
		}
		j, err := s.Journal(ctx, "kept")
		if err != nil || len(j) != entries {
			t.Fatalf("the journal: %d entries, %v; want %d", len(j), err, entries)
		}
		for i, e := range j {
			if e.Seq != i+1 || string(e.Data) != fmt.Sprintf(`[%d]`, i+1) {
				t.Errorf("journal entry %d: %+v", i, e)
			}
		}
	}
	if err := put(1, false); err != nil {
		t.Fatal(err)
	}
	for seq := 1; seq <= 2; seq++ {
		if err := entry(seq, seq == 2); err != nil {
			t.Fatal(err)
		}
	}
	// No room anywhere: the WAL is emptied into the database first, so
	// that the next write must grow a file.
	if _, err := s.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	free := storetest.Fill(t, dir)
	if err := put(2, false); err != nil {
		t.Fatalf("a write nobody waits for, on a full disk: %v", err)
	}
	if err := entry(3, false); err != nil {
		t.Fatalf("a write nobody waits for, on a full disk: %v", err)
	}
	err = entry(4, true)
	if !errors.Is(err, store.ErrFull) || !strings.Contains(err.Error(), "free space on the disk that holds "+dir) {
		t.Fatalf("a waited write on a full disk: %v; want ErrFull saying where to free space", err)
	}
	if p := s.Problem(); !errors.Is(p, store.ErrFull) || !strings.Contains(p.Error(), "since") {
		t.Errorf("Problem on a full disk: %v", p)
	}
	check(1, 2) // what it held, still read
	free()
	if err := entry(4, true); err != nil {
		t.Fatalf("once there is room: %v", err)
	}
	check(2, 4)
	if p := s.Problem(); p != nil {
		t.Errorf("Problem once writes go through again: %v", p)
	}
	s.Close()
	s, err = locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	check(2, 4)
}

// TestFullDiskAtClose: writes nobody waited for that the disk still has
// no room for when the store closes are counted in Close's error.
func TestFullDiskAtClose(t *testing.T) {
	dir := storetest.TinyDisk(t, 2<<20)
	s, err := locked(t, filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	storetest.Fill(t, dir)
	for seq := 1; seq <= 3; seq++ {
		if err := s.Append(ctx, "t", store.Entry{Seq: seq, Kind: "model", Data: json.RawMessage(`{}`)}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); !errors.Is(err, store.ErrFull) || !strings.Contains(err.Error(), "3 write(s) that nobody waited for were not stored") {
		t.Fatalf("Close with writes the disk had no room for: %v", err)
	}
}

// TestCheckpointsBesideTheWriter: SQLite's own checkpoint is off (it ran
// in the committing connection, while every write waited); the store's
// checkpointer copies committed writes into the database file, so the
// WAL does not grow without end.
func TestCheckpointsBesideTheWriter(t *testing.T) {
	done := make(chan error, 16)
	defer store.OnCheckpoint(func(err error) { done <- err })()
	path := filepath.Join(t.TempDir(), "ck.db")
	s, err := locked(t, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Append(ctx, "t", store.Entry{Seq: 1, Kind: "round", Key: "k", Data: json.RawMessage(`[1]`)}, true); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("checkpoint: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint after a write")
	}
	// The database file alone (immutable: its WAL is not read) has it.
	db, err := sql.Open("sqlite", "file:"+path+"?immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM journal WHERE task_id = 't'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("entries in the database file after a checkpoint: %d, %v; want 1", n, err)
	}
}

// TestFullDiskSeenToClear: once the disk has room again, the store says
// so by itself (it probes), without waiting for a write to come.
func TestFullDiskSeenToClear(t *testing.T) {
	checkpoints := make(chan struct{}, 1)
	defer store.OnCheckpoint(func(error) {
		select {
		case checkpoints <- struct{}{}:
		default:
		}
	})()
	dir := storetest.TinyDisk(t, 2<<20)
	s, err := locked(t, filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	free := storetest.Fill(t, dir)
	if err := s.Append(context.Background(), "t", store.Entry{Seq: 1, Kind: "round", Data: json.RawMessage(`[]`)}, true); !errors.Is(err, store.ErrFull) {
		t.Fatalf("a waited write on a full disk: %v", err)
	}
	if s.Problem() == nil {
		t.Fatal("no problem reported on a full disk")
	}
	free()
	// Each write, the probe's too, is followed by a checkpoint.
	deadline := time.After(10 * time.Second)
	for s.Problem() != nil {
		select {
		case <-checkpoints:
		case <-deadline:
			t.Fatalf("the store still reports %v after the disk had room again", s.Problem())
		}
	}
}
