package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server/store"
)

// conform checks what every Store must do.
func conform(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for i, id := range []string{"a", "b", "c"} {
		status := "completed"
		if id == "b" {
			status = "running"
		}
		if err := s.PutTask(ctx, store.Task{ID: id, ClientID: "dev", Status: status, CreatedAt: t0.Add(time.Duration(i) * time.Second),
			Data: json.RawMessage(`{"id":"` + id + `"}`)}, true); err != nil {
			t.Fatal(err)
		}
	}
	// A second put replaces the record.
	if err := s.PutTask(ctx, store.Task{ID: "a", ClientID: "dev", Status: "failed", CreatedAt: t0, Data: json.RawMessage(`{"v":2}`)}, true); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, "a")
	if err != nil || got.Status != "failed" || string(got.Data) != `{"v":2}` || !got.CreatedAt.Equal(t0) {
		t.Fatalf("Task(a) = %+v, %v", got, err)
	}
	if _, err := s.Task(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Task(nope) err = %v, want ErrNotFound", err)
	}
	all, err := s.Tasks(ctx, "", 0)
	if err != nil || len(all) != 3 || all[0].ID != "c" || all[2].ID != "a" {
		t.Fatalf("Tasks = %+v, %v; want c, b, a", all, err)
	}
	running, _ := s.Tasks(ctx, "running", 0)
	if len(running) != 1 || running[0].ID != "b" {
		t.Fatalf("running tasks = %+v", running)
	}
	if two, _ := s.Tasks(ctx, "", 2); len(two) != 2 {
		t.Fatalf("limit 2 gave %d", len(two))
	}

	// A record put without waiting is there once a later write of the
	// task that waits has returned.
	if err := s.PutTask(ctx, store.Task{ID: "b", ClientID: "dev", Status: "running", CreatedAt: t0.Add(time.Second),
		Data: json.RawMessage(`{"v":"lazy"}`)}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "b", store.Entry{Seq: 4, Kind: "round", Key: "k", Data: json.RawMessage(`[4]`)}, true); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Task(ctx, "b"); err != nil || string(got.Data) != `{"v":"lazy"}` {
		t.Fatalf("a record put without waiting, after a waited write: %+v, %v", got, err)
	}

	for seq := 3; seq >= 1; seq-- {
		if err := s.Append(ctx, "b", store.Entry{Seq: seq, Kind: "model", Key: "k", Data: json.RawMessage(`[` + string(rune('0'+seq)) + `]`)}, seq == 1); err != nil {
			t.Fatal(err)
		}
	}
	j, err := s.Journal(ctx, "b")
	if err != nil || len(j) != 4 || j[0].Seq != 1 || string(j[2].Data) != "[3]" || j[1].Kind != "model" || j[3].Kind != "round" {
		t.Fatalf("Journal = %+v, %v", j, err)
	}
	// Sync waits for the writes made before it, none of them waited for:
	// another server then reads them all.
	for seq := 5; seq <= 404; seq++ {
		if err := s.Append(ctx, "b", store.Entry{Seq: seq, Kind: "model", Key: "k", Data: json.RawMessage(`[0]`)}, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if j, err := s.Journal(ctx, "b"); err != nil || len(j) != 404 || j[403].Seq != 404 {
		t.Fatalf("after Sync the journal has %d entries (%v), want 404", len(j), err)
	}
	if err := s.DeleteTask(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Journal(ctx, "b"); len(j) != 0 {
		t.Fatalf("journal outlived its task: %+v", j)
	}
	if _, err := s.Task(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted task still there: %v", err)
	}

	for _, id := range []string{"z", "y"} {
		if err := s.PutDevice(ctx, store.Device{ID: id, UpdatedAt: t0, Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	s.PutDevice(ctx, store.Device{ID: "z", UpdatedAt: t0, Data: json.RawMessage(`{"p":"linux"}`)})
	devs, _ := s.Devices(ctx)
	if len(devs) != 2 || devs[0].ID != "y" || string(devs[1].Data) != `{"p":"linux"}` {
		t.Fatalf("Devices = %+v", devs)
	}
	if got, err := s.Device(ctx, "z"); err != nil || string(got.Data) != `{"p":"linux"}` {
		t.Fatalf("Device(z) = %+v, %v", got, err)
	}
	if _, err := s.Device(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Device(nope) err = %v, want ErrNotFound", err)
	}
	s.DeleteDevice(ctx, "y", "")
	if devs, _ := s.Devices(ctx); len(devs) != 1 {
		t.Fatalf("after delete: %+v", devs)
	}

	// Records name their server: another server's writes do not land.
	s.PutTask(ctx, store.Task{ID: "f", ClientID: "dev", Status: "running", Server: "A", CreatedAt: t0, Data: json.RawMessage(`{"by":"A"}`)}, true)
	s.PutTask(ctx, store.Task{ID: "f", ClientID: "dev", Status: "completed", Server: "B", CreatedAt: t0, Data: json.RawMessage(`{"by":"B"}`)}, true)
	if got, _ := s.Task(ctx, "f"); got.Server != "A" || string(got.Data) != `{"by":"A"}` {
		t.Fatalf("a write by B replaced A's task: %+v", got)
	}
	s.PutDevice(ctx, store.Device{ID: "m", Server: "A", Connected: true, UpdatedAt: t0, Data: json.RawMessage(`{}`)})
	s.PutDevice(ctx, store.Device{ID: "m", Server: "B", Connected: true, UpdatedAt: t0, Data: json.RawMessage(`{}`)})
	s.PutDevice(ctx, store.Device{ID: "m", Server: "A", Connected: false, UpdatedAt: t0, Data: json.RawMessage(`{}`)})
	s.DeleteDevice(ctx, "m", "A")
	devs, _ = s.Devices(ctx)
	if len(devs) != 2 || devs[0].ID != "m" || devs[0].Server != "B" || !devs[0].Connected {
		t.Fatalf("A's late writes about a device B holds landed: %+v", devs)
	}
	s.DeleteDevice(ctx, "m", "B")
	s.DeleteTask(ctx, "f")

	for _, f := range []string{"one", "two", "three"} {
		if err := s.Post(ctx, "dev", []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	s.Post(ctx, "other", []byte("x"))
	frames, err := s.Take(ctx, "dev")
	if err != nil || len(frames) != 3 || string(frames[0]) != "one" || string(frames[2]) != "three" {
		t.Fatalf("Take = %q, %v", frames, err)
	}
	if again, _ := s.Take(ctx, "dev"); len(again) != 0 {
		t.Fatalf("Take twice gave %q", again)
	}
	if other, _ := s.Take(ctx, "other"); len(other) != 1 {
		t.Fatalf("another device's frames: %q", other)
	}
}

func TestMemory(t *testing.T) { conform(t, store.NewMemory()) }

func TestSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "saucer.db")
	s, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conform(t, s)
	s.Close()
	// Reopened (migrations already applied), the data is there.
	s, err = store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Task(ctx, "c"); err != nil || got.Status != "completed" {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
	// A database from a newer saucer is refused with what to do.
	db := s.(*store.SQL).DB()
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := store.Open(ctx, "sqlite:"+path); err == nil || !strings.Contains(err.Error(), "newer than this saucer knows") {
		t.Fatalf("newer schema: err = %v", err)
	}
}

func TestPostgres(t *testing.T) {
	url := storetest.Postgres(t)
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	conform(t, s)
	s.Close()
	s, err = store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Task(ctx, "c"); err != nil || got.Status != "completed" {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
}

func TestOpenRefusesBadSpecs(t *testing.T) {
	ctx := context.Background()
	for spec, want := range map[string]string{
		"":                              "none given",
		"sqlite:":                       "no file after sqlite:",
		"mysql://u:hunter2@h/db":        "u:[redacted]@h",
		"redis":                         "not one this server knows",
		"postgres://u:pw@127.0.0.1:1/x": "cannot connect",
	} {
		_, err := store.Open(ctx, spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) err = %v, want it to say %q", spec, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) repeats the password: %v", spec, err)
		}
	}
}

// TestLock: a second server on a store another one holds is refused; the
// store is free again once the first closes it.
func TestLock(t *testing.T) {
	ctx := context.Background()
	for name, spec := range map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "s.db"), "postgres": storetest.Postgres(t)} {
		t.Run(name, func(t *testing.T) {
			a, err := store.Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.(*store.SQL).Lock(ctx); err != nil {
				t.Fatal(err)
			}
			b, err := store.Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.(*store.SQL).Lock(ctx); !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "stop the other one") {
				t.Fatalf("second Lock: %v", err)
			}
			a.Close()
			if err := b.(*store.SQL).Lock(ctx); err != nil {
				t.Fatalf("Lock after the first closed: %v", err)
			}
		})
	}
}

// TestCluster: servers sharing a PostgreSQL store see each other alive,
// exchange messages in order, see a member die with its session, and
// claim a dead member's task once.
func TestCluster(t *testing.T) {
	url := storetest.Postgres(t)
	ctx := context.Background()
	open := func() *store.SQL {
		s, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.(*store.SQL)
	}
	sa, sb := open(), open()
	a, err := sa.Join(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sb.Join(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := open().Join(ctx, "A"); err == nil || !strings.Contains(err.Error(), "already has the id") {
		t.Fatalf("a second live A: %v", err)
	}
	alive, err := b.Alive(ctx)
	if err != nil || !alive["A"] || !alive["B"] || len(alive) != 2 {
		t.Fatalf("Alive = %v, %v", alive, err)
	}
	for i := range 20 {
		if err := a.Send(ctx, "B", []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	for len(got) < 20 {
		select {
		case m := <-b.Inbox():
			got = append(got, m...)
		case <-time.After(10 * time.Second):
			t.Fatalf("B got %q of 20 messages", got)
		}
	}
	if string(got) != "abcdefghijklmnopqrst" {
		t.Fatalf("messages out of order: %q", got)
	}

	sa.PutTask(ctx, store.Task{ID: "t", ClientID: "dev", Status: "running", Server: "A", CreatedAt: time.Now(), Data: json.RawMessage(`{}`)}, true)
	a.Close()
	if alive, _ := b.Alive(ctx); alive["A"] || !alive["B"] {
		t.Fatalf("after A left, Alive = %v", alive)
	}
	if ok, err := sb.ClaimTask(ctx, "t", "B", "C"); ok || err != nil {
		t.Fatalf("a claim from the wrong server won: %v %v", ok, err)
	}
	wins := make(chan bool, 4)
	for range 4 {
		go func() {
			ok, _ := sb.ClaimTask(ctx, "t", "A", "B")
			wins <- ok
		}()
	}
	n := 0
	for range 4 {
		if <-wins {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d claims of one task won", n)
	}
	if rec, _ := sb.Task(ctx, "t"); rec.Server != "B" {
		t.Fatalf("after the claim the task's server is %q", rec.Server)
	}
	if err := b.Prune(ctx); err != nil {
		t.Fatal(err)
	}

	// SQLite has no cluster: said, with what to do.
	sq, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	if _, err := sq.(*store.SQL).Join(ctx, "X"); !errors.Is(err, store.ErrNoCluster) || !strings.Contains(err.Error(), "--standby") {
		t.Fatalf("Join on SQLite: %v", err)
	}
}

// TestMemberLost: a member whose database session is killed learns it
// (Lost), as the others see it dead.
func TestMemberLost(t *testing.T) {
	url := storetest.Postgres(t)
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.(*store.SQL).Join(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	other, _ := store.Open(ctx, url)
	defer other.Close()
	if _, err := other.(*store.SQL).DB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = 7061729`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		if !strings.Contains(m.Err().Error(), "the session that showed server A alive ended") {
			t.Errorf("Err = %v", m.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not notice its session was killed")
	}
}

// TestGroupCommit: writes that arrive together are committed together;
// each waiter returns once its own write is durable (another connection
// sees it), a write that fails fails alone, and when a commit fails every
// waiter hears of it.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	for name, spec := range map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "g.db"), "postgres": storetest.Postgres(t)} {
		t.Run(name, func(t *testing.T) {
			s, err := store.Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			other, err := store.Open(ctx, spec) // as another process reads it
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			const n = 64
			entry := func(seq int) store.Entry {
				return store.Entry{Seq: seq, Kind: "round", Key: "k", Data: json.RawMessage(fmt.Sprintf(`[%d]`, seq))}
			}
			appendAll := func(task string, seqs []int) []error {
				errs := make([]error, len(seqs))
				var wg sync.WaitGroup
				for i, seq := range seqs {
					wg.Add(1)
					go func() { defer wg.Done(); errs[i] = s.Append(ctx, task, entry(seq), true) }()
				}
				wg.Wait()
				return errs
			}
			var seqs []int
			for i := 1; i <= n; i++ {
				seqs = append(seqs, i)
			}
			for i, err := range appendAll("g", seqs) {
				if err != nil {
					t.Fatalf("append %d: %v", i+1, err)
				}
			}
			if j, err := other.Journal(ctx, "g"); err != nil || len(j) != n {
				t.Fatalf("another connection sees %d of %d entries (%v)", len(j), n, err)
			}

			// Eight writes that break the primary key among fresh ones: those
			// eight fail, the others are committed.
			seqs = seqs[:0]
			for i := n + 1; i <= 2*n; i++ {
				seqs = append(seqs, i)
			}
			seqs = append(seqs, 1, 2, 3, 4, 5, 6, 7, 8)
			for i, err := range appendAll("g", seqs) {
				if dup := seqs[i] <= n; dup != (err != nil) {
					t.Errorf("append of seq %d (duplicate %v): %v", seqs[i], dup, err)
				}
			}
			if j, _ := other.Journal(ctx, "g"); len(j) != 2*n {
				t.Fatalf("%d entries after the duplicates, want %d", len(j), 2*n)
			}

			// A write nobody waits for that fails: the next write says so.
			if err := s.Append(ctx, "g", entry(1), false); err != nil {
				t.Fatalf("a write nobody waits for failed at once: %v", err)
			}
			if err := s.Append(ctx, "g", entry(2*n+1), true); err == nil || !strings.Contains(err.Error(), "an earlier write failed") {
				t.Errorf("the write after a failed one nobody waited for: %v", err)
			}

			// A commit that cannot succeed: every waiter gets the error.
			if _, err := s.(*store.SQL).DB().Exec(`DROP TABLE journal`); err != nil {
				t.Fatal(err)
			}
			done := make(chan []error, 1)
			go func() { done <- appendAll("h", seqs[:16]) }()
			select {
			case errs := <-done:
				for i, err := range errs {
					if err == nil {
						t.Errorf("append %d into a dropped table returned no error", i)
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatal("waiters of a failed commit never returned")
			}
		})
	}
}
