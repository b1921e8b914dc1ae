package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server/store"
)

// TestServersStartingTogetherMigrateOnce: servers that open one fresh
// PostgreSQL database at the same moment (docs/servers.md starts two so)
// all open it; the schema is made once, not raced for. Each round is a
// new database, since only the first opening of one migrates.
func TestServersStartingTogetherMigrateOnce(t *testing.T) {
	url := storetest.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const rounds, servers = 6, 8
	for round := range rounds {
		db := fmt.Sprintf("fresh%d", round)
		if _, err := admin.DB().ExecContext(ctx, "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		dbURL := strings.Replace(url, "/postgres?", "/"+db+"?", 1)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, servers)
		for i := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s, err := store.Open(ctx, dbURL)
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: server %d of %d starting together: %v", round, i, servers, err)
			}
		}
		s, err := store.OpenPostgres(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		var versions, applied int
		err = s.DB().QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_migrations`).Scan(&applied, &versions)
		s.Close()
		if err != nil || applied != store.SchemaVersion() || versions != applied {
			t.Fatalf("round %d: schema_migrations holds %d rows of %d versions (%v); want each of %d once", round, applied, versions, err, store.SchemaVersion())
		}
	}
}
