package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/server/store/storetest"
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
			Data: json.RawMessage(`{"id":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// A second put replaces the record.
	if err := s.PutTask(ctx, store.Task{ID: "a", ClientID: "dev", Status: "failed", CreatedAt: t0, Data: json.RawMessage(`{"v":2}`)}); err != nil {
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

	for seq := 3; seq >= 1; seq-- {
		if err := s.Append(ctx, "b", store.Entry{Seq: seq, Kind: "model", Key: "k", Data: json.RawMessage(`[` + string(rune('0'+seq)) + `]`)}, seq == 1); err != nil {
			t.Fatal(err)
		}
	}
	j, err := s.Journal(ctx, "b")
	if err != nil || len(j) != 3 || j[0].Seq != 1 || string(j[2].Data) != "[3]" || j[1].Kind != "model" {
		t.Fatalf("Journal = %+v, %v", j, err)
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
	s.DeleteDevice(ctx, "y")
	if devs, _ := s.Devices(ctx); len(devs) != 1 {
		t.Fatalf("after delete: %+v", devs)
	}

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
		"mysql://u:hunter2@h/db":        "u:xxxxx@h",
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
