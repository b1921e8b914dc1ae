package store_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server/store"
)

// locked opens the SQLite store at path as a server holds it: its tasks'
// writes go through the task log.
func locked(t *testing.T, path string) *store.SQL {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*store.SQL)
	if err := s.Lock(context.Background()); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s
}

// TestSQLiteHeld: an SQLite store held by a server (its tasks' writes in
// the task log until a checkpoint) does what every store does, and what
// it holds is in the database once it is closed.
func TestSQLiteHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.db")
	s := locked(t, path)
	conform(t, s)
	// Written and read back before any checkpoint: the log answers.
	ctx := context.Background()
	if err := s.PutTask(ctx, store.Task{ID: "fresh", ClientID: "dev", Status: "running", CreatedAt: time.Now(), Data: json.RawMessage(`{"n":1}`)}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "fresh", store.Entry{Seq: 1, Kind: "round", Key: "k", Data: json.RawMessage(`[1]`)}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "fresh", store.Entry{Seq: 1, Kind: "round", Key: "k", Data: json.RawMessage(`[1]`)}, true); err == nil || !strings.Contains(err.Error(), "has journal entry 1 already") {
		t.Errorf("a duplicate entry in the log: %v", err)
	}
	// One nobody waits for: the next write that is waited for says so.
	if err := s.Append(ctx, "fresh", store.Entry{Seq: 1, Kind: "round", Key: "k", Data: json.RawMessage(`[1]`)}, false); err != nil {
		t.Fatalf("a write nobody waits for failed at once: %v", err)
	}
	if err := s.PutTask(ctx, store.Task{ID: "fresh", ClientID: "dev", Status: "running", CreatedAt: time.Now(), Data: json.RawMessage(`{"n":1}`)}, true); err == nil || !strings.Contains(err.Error(), "an earlier write failed") {
		t.Errorf("the write after a refused one nobody waited for: %v", err)
	}
	if got, err := s.Task(ctx, "fresh"); err != nil || string(got.Data) != `{"n":1}` {
		t.Fatalf("Task(fresh) = %+v, %v", got, err)
	}
	if j, err := s.Journal(ctx, "fresh"); err != nil || len(j) != 1 || string(j[0].Data) != `[1]` {
		t.Fatalf("Journal(fresh) = %+v, %v", j, err)
	}
	// A running task's journal reaches the database; once the task has
	// ended, it goes from there too.
	if _, err := s.Tasks(ctx, "", 0); err != nil { // a checkpoint
		t.Fatal(err)
	}
	raw, err := store.Open(ctx, "sqlite:"+path) // the database alone
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if j, _ := raw.Journal(ctx, "fresh"); len(j) != 1 {
		t.Fatalf("a running task's journal in the database after a checkpoint: %d entries, want 1", len(j))
	}
	if err := s.PutTask(ctx, store.Task{ID: "fresh", ClientID: "dev", Status: "completed", CreatedAt: time.Now(), Data: json.RawMessage(`{"n":2}`)}, true); err != nil {
		t.Fatal(err)
	}
	s.Tasks(ctx, "", 0)
	if j, _ := raw.Journal(ctx, "fresh"); len(j) != 0 {
		t.Fatalf("an ended task's journal stayed in the database: %d entries", len(j))
	}
	s.Close()
	if _, err := os.Stat(path + "-tasklog"); !os.IsNotExist(err) {
		t.Errorf("the task log outlived a clean close: %v", err)
	}
	// Opened without the lock, it is the database alone that answers.
	st, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Task(ctx, "fresh"); err != nil || string(got.Data) != `{"n":2}` || got.Status != "completed" {
		t.Fatalf("after close, Task(fresh) = %+v, %v", got, err)
	}
	if j, err := st.Journal(ctx, "fresh"); err != nil || len(j) != 0 {
		t.Fatalf("after close, the ended task's journal: %+v, %v", j, err)
	}
	for _, id := range []string{"a", "c"} { // conform's, ended
		if got, err := st.Task(ctx, id); err != nil || got.Status != "completed" && got.Status != "failed" {
			t.Errorf("after close, Task(%s) = %+v, %v", id, got, err)
		}
	}
}

// TestTaskLogSurvivesAKill: a process holding the store writes tasks and
// journals and is killed before any checkpoint; the next one to lock the
// store finds every write it waited for, and every write before one, in
// the database (but the journals of tasks that ended, which nothing
// reads). A record torn at the end of the log is left out, and what
// comes before it is not.
func TestTaskLogSurvivesAKill(t *testing.T) {
	if path := os.Getenv("SAUCER_TASKLOG_CHILD"); path != "" {
		crashingWriter(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTaskLogSurvivesAKill$")
	cmd.Env = append(os.Environ(), "SAUCER_TASKLOG_CHILD="+path)
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

	segs, _ := filepath.Glob(filepath.Join(path+"-tasklog", "*.log"))
	if len(segs) == 0 {
		t.Fatal("the killed process left no task log")
	}
	// Nothing is in the database yet: all of it is in the log.
	raw, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := raw.Tasks(context.Background(), "", 0); len(all) != 0 {
		t.Fatalf("the database had %d tasks before the replay; the test wants them in the log", len(all))
	}
	raw.Close()
	// A write cut short at the end of the log.
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 'T', 3})
	f.Close()

	s := locked(t, path)
	ctx := context.Background()
	running, err := s.Tasks(ctx, "running", 0)
	if err != nil || len(running) != 9 {
		t.Fatalf("running tasks after the replay: %d, %v; want 9", len(running), err)
	}
	done, _ := s.Tasks(ctx, "completed", 0)
	if len(done) != 10 {
		t.Fatalf("completed tasks after the replay: %d, want 10", len(done))
	}
	if _, err := s.Task(ctx, "task-07"); err == nil {
		t.Error("a deleted task came back")
	}
	for i := range 20 {
		id := fmt.Sprintf("task-%02d", i)
		j, err := s.Journal(ctx, id)
		if i == 7 || i%2 == 0 {
			// Deleted, or ended: a journal only a running task needs.
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
	if left, _ := filepath.Glob(filepath.Join(path+"-tasklog", "*.log")); len(left) != 1 {
		t.Errorf("log segments after the replay: %v; want the new one alone", left)
	}
	s.Close()
}

// crashingWriter is the process TestTaskLogSurvivesAKill kills: it
// writes 20 tasks with 5 journal entries each (only the last waited
// for), completes half of them, deletes one, says so and waits.
func crashingWriter(t *testing.T, path string) {
	store.SetCheckpointDelay(time.Hour)
	s := locked(t, path)
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

// TestTaskLogKeepsWhatTheDatabaseRefuses: while the database cannot take
// a checkpoint, writes still succeed (the log has them), a read that
// needs the database says why it failed, and what the log holds stays
// there, through Close, for the next server to replay once the database
// is mended.
func TestTaskLogKeepsWhatTheDatabaseRefuses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broken.db")
	s := locked(t, path)
	if _, err := s.DB().Exec(`DROP TABLE journal`); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTask(ctx, store.Task{ID: "t", ClientID: "dev", Status: "running", CreatedAt: time.Now(), Data: json.RawMessage(`{}`)}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "t", store.Entry{Seq: 1, Kind: "round", Key: "k", Data: json.RawMessage(`[1]`)}, true); err != nil {
		t.Fatalf("a write to the log failed with the database: %v", err)
	}
	if _, err := s.Tasks(ctx, "", 0); err == nil || !strings.Contains(err.Error(), "checkpoint") || !strings.Contains(err.Error(), "journal") {
		t.Fatalf("listing tasks while checkpoints fail: %v", err)
	}
	s.Close()
	if segs, _ := filepath.Glob(filepath.Join(path+"-tasklog", "*.log")); len(segs) == 0 {
		t.Fatal("the log was removed although the database did not take it")
	}
	raw, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.(*store.SQL).DB().Exec(`CREATE TABLE journal (task_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (task_id, seq))`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s = locked(t, path)
	defer s.Close()
	if j, err := s.Journal(ctx, "t"); err != nil || len(j) != 1 || string(j[0].Data) != `[1]` {
		t.Fatalf("after the database was mended: %+v, %v", j, err)
	}
	if got, err := s.Task(ctx, "t"); err != nil || got.Status != "running" {
		t.Fatalf("after the database was mended, Task(t) = %+v, %v", got, err)
	}
}
