package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// fullDisk is an SQLite store, held as saucer serve holds it, on a disk
// of its own that a test fills; reopen opens it again, as a server that
// restarts does.
type fullDisk struct {
	dir, path string
}

func newFullDisk(t *testing.T) *fullDisk {
	dir := storetest.TinyDisk(t, 4<<20)
	return &fullDisk{dir: dir, path: filepath.Join(dir, "state.db")}
}

func (d *fullDisk) open(t *testing.T) *store.SQL {
	t.Helper()
	st := openStore(t, "sqlite:"+d.path).(*store.SQL)
	if err := st.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// restart suspends f's server and closes its store st, then starts a
// server with stepsRunner over the same files, as a restart does.
func (d *fullDisk) restart(t *testing.T, f *fixture, st *store.SQL) *fixture {
	t.Helper()
	if err := f.srv.Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return newFixture(t, server.Options{NewSession: stepsRunner, Store: d.open(t)})
}

// fill takes the disk's last byte. The store's WAL is emptied into the
// database first, so that its next write must grow a file.
func (d *fullDisk) fill(t *testing.T, st *store.SQL) (free func()) {
	t.Helper()
	if _, err := st.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	return storetest.Fill(t, d.dir)
}

// health is GET /api/health.
func (f *fixture) health(t *testing.T) (int, server.Health) {
	t.Helper()
	var h server.Health
	code := f.api(t, "GET", "/api/health", nil, &h)
	return code, h
}

// TestFullDiskRefusesNewTasks: with the store's disk full, POST
// /api/dispatch answers 507 with an error that says the disk is full and
// where, starts nothing, and GET /api/health says why it is degraded;
// once there is room, tasks are taken again. After a restart every task
// that was answered 200 is there, and no other.
func TestFullDiskRefusesNewTasks(t *testing.T) {
	disk := newFullDisk(t)
	st := disk.open(t)
	f := newFixture(t, server.Options{NewSession: stepsRunner, Store: st})
	connect(t, f.wsURL, "dev", noopDevice{}, nil)
	dispatch := func() (int, map[string]string) {
		var out map[string]string
		code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev", Request: "click"}, &out)
		return code, out
	}
	var answered []string
	code, out := dispatch()
	if code != 200 {
		t.Fatalf("dispatch: %d %v", code, out)
	}
	answered = append(answered, out["task_id"])
	f.waitTask(t, out["task_id"])

	free := disk.fill(t, st)
	code, out = dispatch()
	if code != 507 || !strings.Contains(out["error"], "the disk is full") || !strings.Contains(out["error"], "free space on the disk that holds "+disk.dir) {
		t.Fatalf("dispatch on a full disk: %d %v; want 507 saying the disk is full and where", code, out)
	}
	if code, h := f.health(t); code != 503 || h.Status != "degraded" || !strings.Contains(h.Store, "the disk is full") || h.RunningTasks != 0 {
		t.Errorf("health on a full disk, a task refused: %d %+v", code, h)
	}
	// A device that asks for a task itself is told why not.
	raw := f.rawConn(t)
	register(t, raw, "raw")
	send(t, raw, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientID: "raw", Request: "click", TaskName: "t"})
	if m := readServer(t, raw); m.Type != aip.TypeError || !strings.Contains(m.Error, "the task was not started") || !strings.Contains(m.Error, "the disk is full") {
		t.Errorf("a device's task request on a full disk: %+v", m)
	}
	if tasks := f.srv.Tasks(); len(tasks) != 1 {
		t.Errorf("a refused task is listed: %d tasks", len(tasks))
	}

	free()
	code, out = dispatch()
	if code != 200 {
		t.Fatalf("dispatch once there is room: %d %v", code, out)
	}
	answered = append(answered, out["task_id"])
	if info := f.waitTask(t, out["task_id"]); info.Status != server.StatusCompleted {
		t.Fatalf("the task dispatched once there was room: %s %s", info.Status, info.Error)
	}
	if code, h := f.health(t); code != 200 || h.Status != "ok" || h.Store != "" {
		t.Errorf("health once writes go through again: %d %+v", code, h)
	}

	// A restart.
	g := disk.restart(t, f, st)
	tasks := g.srv.Tasks()
	if len(tasks) != len(answered) {
		t.Fatalf("after the restart: %d tasks, want the %d answered 200", len(tasks), len(answered))
	}
	for _, id := range answered {
		if info, ok := g.srv.Task(id); !ok || info.Status != server.StatusCompleted {
			t.Errorf("task %s after the restart: %+v", id, info)
		}
	}
}

// TestFullDiskPausesARunningTask: a task whose next command round cannot
// be recorded (the disk filled while it ran) waits before sending it,
// and GET /api/health counts it; once there is room it goes on where it
// was, and every command runs once. After a restart, its end and every
// step are in the store.
func TestFullDiskPausesARunningTask(t *testing.T) {
	disk := newFullDisk(t)
	st := disk.open(t)
	watch := &refusals{SQL: st, full: make(chan struct{}, 1), records: make(chan struct{}, 1)}
	watch.watching.Store(true)
	reached, resume := make(chan struct{}), make(chan struct{})
	f := newFixture(t, server.Options{NewSession: gatedRunner(3, 1, reached, resume), Store: watch})
	dev := &callLog{}
	connect(t, f.wsURL, "dev", dev, nil)
	info, err := f.srv.Dispatch("dev", "three clicks", "click", "test")
	if err != nil {
		t.Fatal(err)
	}
	<-reached // step 1 done
	// Its record follows (recordDelay): once it is in the store with
	// step 1, nothing is left to write, and the disk is filled with no
	// room left in the store's files either.
	for {
		var rec server.TaskInfo
		if r, err := st.Task(context.Background(), info.ID); err == nil {
			json.Unmarshal(r.Data, &rec)
		}
		if len(rec.Steps) == 1 {
			break
		}
		select {
		case <-watch.records:
		case <-time.After(10 * time.Second):
			t.Fatal("the task's record never showed step 1")
		}
	}
	watch.watching.Store(false)
	free := disk.fill(t, st)
	close(resume)
	// Step 2's round is refused, and then refused again when the task
	// tries once more: by the second refusal the task has counted itself
	// as waiting (keep counts after a refused write, so the first refusal
	// alone can reach the test before the count does).
	<-watch.full
	<-watch.full
	if code, h := f.health(t); code != 503 || h.Status != "degraded" || h.WaitingForStore != 1 || !strings.Contains(h.Store, "the disk is full") {
		t.Errorf("health while the task waits for room: %d %+v", code, h)
	}
	if got, _ := f.srv.Task(info.ID); got.Status != server.StatusRunning {
		t.Errorf("the waiting task: %s %s", got.Status, got.Error)
	}
	dev.mu.Lock()
	ran := len(dev.ids)
	dev.mu.Unlock()
	if ran != 1 {
		t.Errorf("the device ran %d commands by the time the disk was full; want 1 (the next round waits)", ran)
	}

	free()
	end, err := f.srv.Wait(context.Background(), info.ID)
	if err != nil || end.Status != server.StatusCompleted {
		t.Fatalf("once there is room: %s %s %v", end.Status, end.Error, err)
	}
	dev.mu.Lock()
	ids := append([]string{}, dev.ids...)
	dev.mu.Unlock()
	if len(ids) != 3 || len(end.Commands) != 3 || len(end.Steps) != 3 {
		t.Fatalf("the device ran %d commands; the task shows %d commands and %d steps; want 3 of each", len(ids), len(end.Commands), len(end.Steps))
	}
	for i, c := range end.Commands {
		if c.CallID != ids[i] {
			t.Errorf("command %d: %s; the device ran %s", i, c.CallID, ids[i])
		}
	}
	if code, h := f.health(t); code != 200 || h.WaitingForStore != 0 {
		t.Errorf("health once the task went on: %d %+v", code, h)
	}

	g := disk.restart(t, f, st)
	if got, ok := g.srv.Task(info.ID); !ok || got.Status != server.StatusCompleted || len(got.Steps) != 3 || len(got.Commands) != 3 {
		t.Errorf("after a restart: %+v", got)
	}
}

// refusals is an SQLite store that tells a test when it refused a
// waited-for journal entry because its disk is full, and, while
// watching, when it has written a task's record (each written before it
// returns).
type refusals struct {
	*store.SQL
	full, records chan struct{}
	watching      atomic.Bool
}

func (r *refusals) PutTask(ctx context.Context, task store.Task, wait bool) error {
	if !r.watching.Load() {
		return r.SQL.PutTask(ctx, task, wait)
	}
	err := r.SQL.PutTask(ctx, task, true)
	select {
	case r.records <- struct{}{}:
	default:
	}
	return err
}

func (r *refusals) Append(ctx context.Context, id string, e store.Entry, wait bool) error {
	err := r.SQL.Append(ctx, id, e, wait)
	if wait && errors.Is(err, store.ErrFull) {
		select {
		case r.full <- struct{}{}:
		default:
		}
	}
	return err
}
