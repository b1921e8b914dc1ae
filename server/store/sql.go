package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"modernc.org/sqlite"             // registers "sqlite", pure Go
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/saucerhq/saucer/config"
)

// SQL is a Store in an SQL database: SQLite or PostgreSQL. Both speak the
// same statements ($N parameters, ON CONFLICT, RETURNING); only the
// migrations differ where their types do.
type SQL struct {
	db      *sql.DB
	dialect string // sqlite or postgres
	name    string // what errors call it (no password)
	writers []*writer
	quit    chan struct{} // closed by Close
	once    sync.Once

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // prepared writes, by query

	path     string   // the SQLite file
	lockFile *os.File // holds the SQLite store's lock
	lockConn *sql.Conn
	// An SQLite store's checkpoints run beside its writer (see
	// checkpointer): wrote tells of a commit, ckStopped that they
	// have stopped.
	wrote     chan struct{}
	ckStopped chan struct{}

	problem  atomic.Pointer[fullSince] // see Problem
	unstored atomic.Int64              // held writes still refused at Close
}

// ErrInUse is returned by Lock when another server holds the store.
var ErrInUse = errors.New("another saucer serve is using this store")

// lockKey names the PostgreSQL advisory lock of a server's store.
const lockKey = 7061728

// LockWait is Lock for a standby server: it waits until the store is
// free (its holder stopped or died), or ctx ends.
func (s *SQL) LockWait(ctx context.Context) error {
	if s.dialect == "sqlite" {
		for {
			err := s.Lock(ctx)
			if !errors.Is(err, ErrInUse) {
				return err
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.wrap("lock", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		conn.Close()
		return s.wrap("lock", err)
	}
	s.lockConn = conn
	return nil
}

// Lock makes this process the store's only server until Close: two
// servers on one store would each resume the same tasks. It fails with
// ErrInUse when another process holds it (a PostgreSQL session lock, or a
// lock on the file PATH.lock beside an SQLite database; either goes with
// the process that held it, however it ended). Held, an SQLite store
// first takes in what a killed server of the release that had a task
// log left there (see replayTaskLog).
func (s *SQL) Lock(ctx context.Context) error {
	if s.dialect == "sqlite" {
		f, err := lockFile(s.path + ".lock")
		if err != nil {
			return fmt.Errorf("store %s: %w (%v): stop the other one, or give this one its own --store", s.name, ErrInUse, err)
		}
		if err := s.replayTaskLog(ctx); err != nil {
			f.Close()
			return err
		}
		s.lockFile = f
		return nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.wrap("lock", err)
	}
	var got bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, lockKey).Scan(&got); err != nil {
		conn.Close()
		return s.wrap("lock", err)
	}
	if !got {
		conn.Close()
		return fmt.Errorf("store %s: %w: stop the other one, or give this one its own database (several servers on one database are not supported yet)", s.name, ErrInUse)
	}
	s.lockConn = conn
	return nil
}

// write is one statement waiting for the writer.
type write struct {
	op, query string
	args      []any
	wait      bool // its caller waits for it
	done      chan error
	probe     bool // the writer's own (see run)
}

// writer is one queue of writes and the goroutine that commits them.
type writer struct {
	writes  chan *write
	stopped chan struct{} // closed when it is done
}

// maxBatch bounds the writes committed together.
const maxBatch = 256

// exec runs a write statement through the writer: writes that arrive
// while a transaction commits are committed together in the next one
// (group commit), so that many tasks writing at once pay for one commit,
// not one each. It returns when its write is committed.
//
// With wait false it returns once the write is queued: writes of a key
// are committed in the order they are queued, so the write is durable
// when a later waited-for write of the key returns without error. Its
// failure, if any, is returned by the next waited-for write of its
// writer (committed itself, but after one that is not).
//
// Writes of one key (a task's id, a device's id) go through one writer,
// in order; writes of different keys may commit in parallel where the
// database allows it (PostgreSQL).
func (s *SQL) exec(ctx context.Context, key string, wait bool, op, query string, args ...any) error {
	w := &write{op: op, query: query, args: args, wait: wait, done: make(chan error, 1)}
	h := fnv.New32a()
	h.Write([]byte(key))
	wr := s.writers[h.Sum32()%uint32(len(s.writers))]
	select {
	case wr.writes <- w:
	case <-s.quit:
		return s.wrap(op, errors.New("the store is closed"))
	case <-ctx.Done():
		return s.wrap(op, ctx.Err())
	}
	if !wait {
		return nil
	}
	return s.await(ctx, op, w.done, wr.stopped)
}

// await is a write's answer: from done, or an error once ctx ends or its
// writer has stopped (closed) without answering it.
func (s *SQL) await(ctx context.Context, op string, done <-chan error, stopped <-chan struct{}) error {
	select {
	case err := <-done:
		return err
	case <-stopped:
		select {
		case err := <-done:
			return err
		default:
			return s.wrap(op, errors.New("the store was closed before the write"))
		}
	case <-ctx.Done():
		return s.wrap(op, ctx.Err())
	}
}

// run commits queued writes in batches until the store closes.
//
// A write nobody waits for that the disk has no room for is not lost:
// the writer holds it and commits it first, before anything queued
// after it, in its next batch (every fullRetry, or with the next write
// that comes). A write that is waited for is answered ErrFull at once;
// its caller decides (a new task is refused; a running task tries its
// write again).
func (s *SQL) run(wr *writer) {
	defer close(wr.stopped)
	var lost error    // a failed write nobody waited for, not yet reported
	var held []*write // writes nobody waited for, refused for a full disk
	closing := false
	for {
		batch := held
		held = nil
		var retry <-chan time.Time
		if (len(batch) > 0 || s.problem.Load() != nil) && !closing {
			retry = time.After(fullRetry)
		}
		select {
		case w := <-wr.writes:
			batch = append(batch, w)
		case <-retry:
			if len(batch) == 0 {
				// Nothing to write, but the disk was full: a write of
				// nothing tells whether it has room again.
				batch = append(batch, &write{op: "see whether the disk has room", query: probeSQL, probe: true})
			}
		case <-s.quit:
			select {
			case w := <-wr.writes: // what was queued before Close
				batch = append(batch, w)
			default:
				if len(batch) == 0 || closing {
					s.unstored.Add(int64(len(batch)))
					return
				}
			}
			closing = true // what is held is tried once more
		}
	more:
		for len(batch) < maxBatch {
			select {
			case w := <-wr.writes:
				batch = append(batch, w)
			default:
				break more
			}
		}
		errs := s.commitAll(batch)
		reported := false
		for i, w := range batch {
			err := errs[i]
			switch {
			case w.probe:
				continue // nobody asked for it: nothing to answer or hold
			case errors.Is(err, ErrFull) && !w.wait:
				held = append(held, w) // answered (nil) when it was queued
				continue
			case err != nil && !w.wait:
				lost = cmp.Or(lost, err)
			case err == nil && w.wait && lost != nil:
				err, reported = fmt.Errorf("an earlier write failed: %w", lost), true
			}
			w.done <- err
		}
		if reported {
			lost = nil
		}
		if s.wrote != nil {
			select {
			case s.wrote <- struct{}{}:
			default:
			}
		}
		// Let the goroutines it has just released run before it
		// commits the next batch: left behind it on its P, each waited
		// a commit longer, and its next writes missed the batch.
		runtime.Gosched()
	}
}

// fullRetry is how often a writer tries again the writes it holds
// because the disk was full, or, holding none, probes the disk.
const fullRetry = time.Second

// probeSQL writes a page without changing anything.
const probeSQL = `UPDATE schema_migrations SET applied_at = applied_at WHERE version = 1`

// commitAll commits a batch in one transaction or, when that fails,
// each write alone, so that one bad write does not fail the others. It
// returns each write's error and notes whether the disk is full (see
// Problem). Once a write finds the disk full, those after it are not
// tried: they must not land before it.
func (s *SQL) commitAll(batch []*write) []error {
	errs := make([]error, len(batch))
	err := s.commit(batch)
	switch {
	case err == nil:
	case errors.Is(err, ErrFull):
		for i := range errs {
			errs[i] = err
		}
	default:
		for i, w := range batch {
			if errs[i] = s.commit([]*write{w}); errors.Is(errs[i], ErrFull) {
				for j := i + 1; j < len(batch); j++ {
					errs[j] = errs[i]
				}
				break
			}
		}
	}
	for _, err := range errs {
		if errors.Is(err, ErrFull) {
			s.problem.CompareAndSwap(nil, &fullSince{err: err, since: time.Now()})
			return errs
		}
	}
	if slices.Contains(errs, nil) {
		s.problem.Store(nil) // a commit went through: there is room again
	}
	return errs
}

// fullSince is a store's full disk: the error, and since when.
type fullSince struct {
	err   error
	since time.Time
}

// Problem is what keeps the store from taking writes, or nil: from the
// moment a write finds the disk full until one is committed again, an
// error that wraps ErrFull and says since when and what to do.
func (s *SQL) Problem() error {
	p := s.problem.Load()
	if p == nil {
		return nil
	}
	return fmt.Errorf("%w (since %s)", p.err, p.since.UTC().Format(time.RFC3339))
}

// full reports an error that says the database's disk is full: SQLite's
// SQLITE_FULL, PostgreSQL's disk_full, or the system's ENOSPC.
func full(err error) bool {
	var lite *sqlite.Error
	var pg *pgconn.PgError
	switch {
	case errors.As(err, &lite):
		return lite.Code()&0xff == sqlite3.SQLITE_FULL
	case errors.As(err, &pg):
		return pg.Code == "53100" // disk_full
	}
	return errors.Is(err, syscall.ENOSPC)
}

// commit runs writes in one transaction.
func (s *SQL) commit(batch []*write) error {
	if s.dialect == "postgres" {
		// A network can hang.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return s.pipeline(ctx, batch)
	}
	// SQLite cannot hang past its busy timeout, and a context that can end
	// would cost its driver a goroutine for every statement. Statements
	// are prepared before the transaction takes its only connection.
	ctx := context.Background()
	stmts := make([]*sql.Stmt, len(batch))
	for i, w := range batch {
		st, err := s.prepared(ctx, w.query)
		if err != nil {
			return s.wrap(w.op, err)
		}
		stmts[i] = st
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(batch[0].op, err)
	}
	defer tx.Rollback()
	for i, w := range batch {
		if _, err := tx.StmtContext(ctx, stmts[i]).ExecContext(ctx, w.args...); err != nil {
			return s.wrap(w.op, err)
		}
	}
	return s.wrap(batch[0].op, tx.Commit())
}

// pipeline commits writes to PostgreSQL in one round trip: pgx sends the
// statements together (preparing and caching them as it does for single
// ones), and PostgreSQL runs what comes before one Sync as one implicit
// transaction, all or nothing. BEGIN, each statement and COMMIT one
// round trip after another had cost more than the statements, and halved
// BenchmarkTaskStores' PostgreSQL rate.
func (s *SQL) pipeline(ctx context.Context, batch []*write) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.wrap(batch[0].op, err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		b := &pgx.Batch{}
		for _, w := range batch {
			b.Queue(w.query, w.args...)
		}
		res := dc.(*stdlib.Conn).Conn().SendBatch(ctx, b)
		for _, w := range batch {
			if _, err := res.Exec(); err != nil {
				res.Close()
				return s.wrap(w.op, err)
			}
		}
		return s.wrap(batch[0].op, res.Close())
	})
}

// prepared is an SQLite write statement prepared once: SQLite parses a
// statement each time it is run otherwise, which cost the writer a fifth
// of its time.
func (s *SQL) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.stmts[query]; st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[string]*sql.Stmt{}
	}
	s.stmts[query] = st
	return st, nil
}

// start starts n writers.
func (s *SQL) start(n int) *SQL {
	s.quit = make(chan struct{})
	for range n {
		wr := &writer{writes: make(chan *write, 4*maxBatch), stopped: make(chan struct{})}
		s.writers = append(s.writers, wr)
		go s.run(wr)
	}
	return s
}

var _ Store = (*SQL)(nil)

// migration is one version of the schema: statements per dialect.
type migration struct {
	version          int
	sqlite, postgres []string
}

// migrations are applied in order; a released one never changes (add a
// new version instead).
var migrations = []migration{
	{version: 1,
		sqlite: []string{
			`CREATE TABLE tasks (id TEXT PRIMARY KEY, client_id TEXT NOT NULL, status TEXT NOT NULL, created_at BIGINT NOT NULL, data TEXT NOT NULL)`,
			`CREATE INDEX tasks_by_status ON tasks (status, created_at)`,
			`CREATE TABLE journal (task_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (task_id, seq))`,
			`CREATE TABLE devices (id TEXT PRIMARY KEY, updated_at BIGINT NOT NULL, data TEXT NOT NULL)`,
			`CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, client_id TEXT NOT NULL, data TEXT NOT NULL)`,
			`CREATE INDEX outbox_by_client ON outbox (client_id, seq)`,
		},
		postgres: []string{
			`CREATE TABLE tasks (id TEXT PRIMARY KEY, client_id TEXT NOT NULL, status TEXT NOT NULL, created_at BIGINT NOT NULL, data TEXT NOT NULL)`,
			`CREATE INDEX tasks_by_status ON tasks (status, created_at)`,
			`CREATE TABLE journal (task_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (task_id, seq))`,
			`CREATE TABLE devices (id TEXT PRIMARY KEY, updated_at BIGINT NOT NULL, data TEXT NOT NULL)`,
			`CREATE TABLE outbox (seq BIGSERIAL PRIMARY KEY, client_id TEXT NOT NULL, data TEXT NOT NULL)`,
			`CREATE INDEX outbox_by_client ON outbox (client_id, seq)`,
		}},
	// 2: several active servers. Tasks and devices name their server;
	// PostgreSQL keeps the members (alive while they hold an advisory
	// lock keyed by their key) and the messages between them.
	{version: 2,
		sqlite: []string{
			`ALTER TABLE tasks ADD COLUMN server_id TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE devices ADD COLUMN server_id TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE devices ADD COLUMN connected BOOLEAN NOT NULL DEFAULT FALSE`,
		},
		postgres: []string{
			`ALTER TABLE tasks ADD COLUMN server_id TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE devices ADD COLUMN server_id TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE devices ADD COLUMN connected BOOLEAN NOT NULL DEFAULT FALSE`,
			`CREATE SEQUENCE server_keys MAXVALUE 2147483647 CYCLE`,
			`CREATE TABLE servers (id TEXT PRIMARY KEY, key INTEGER NOT NULL, joined_at BIGINT NOT NULL)`,
			`CREATE TABLE bus (seq BIGSERIAL PRIMARY KEY, to_server TEXT NOT NULL, data TEXT NOT NULL)`,
			`CREATE INDEX bus_by_server ON bus (to_server, seq)`,
		}},
}

// postgresWriters is how many transactions a PostgreSQL store commits at
// once (SQLite allows one writer).
const postgresWriters = 8

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// OpenSQLite opens (creating if needed) the SQLite database at path, in
// WAL mode, and migrates it.
func OpenSQLite(ctx context.Context, path string) (*SQL, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("store sqlite:%s: %w", path, err)
		}
	}
	// No connection checkpoints by itself (wal_autocheckpoint(0)): the
	// checkpointer does, beside the writer.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store sqlite:%s: %w", path, err)
	}
	// One writer at a time is all SQLite allows; one connection avoids
	// waiting on its lock and keeps the order of writes.
	db.SetMaxOpenConns(1)
	s := &SQL{db: db, dialect: "sqlite", name: "sqlite:" + path, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	// The checkpointer's own connection.
	ck, err := sql.Open("sqlite", dsn)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store sqlite:%s: %w", path, err)
	}
	ck.SetMaxOpenConns(1)
	s.wrote, s.ckStopped = make(chan struct{}, 1), make(chan struct{})
	s.start(1)
	go s.checkpointer(ck)
	return s, nil
}

// checkpointed, when set (by tests), hears of each checkpoint.
var checkpointed atomic.Pointer[func(error)]

// checkpointInterval is how often, at most, the checkpointer copies
// what the WAL holds into the database.
const checkpointInterval = time.Second

// checkpointer copies committed writes from the WAL into the database
// (and syncs both) after commits, at most every checkpointInterval, on
// its own connection until the store closes. SQLite's own checkpoint
// runs in the connection that commits, once the WAL has grown past
// 1,000 pages: it wrote 4 MB and synced two files while every write
// waited behind it (the slowest commits in BenchmarkRoundOverhead with
// 10 devices, up to 140 ms on a busy machine). A PASSIVE checkpoint does not stop the writer, and once it has copied
// everything the writer starts the WAL from its beginning again. Its
// sync also bounds what a power loss can take (synchronous=NORMAL does
// not sync commits) to about the last checkpointInterval.
func (s *SQL) checkpointer(ck *sql.DB) {
	defer close(s.ckStopped)
	defer ck.Close()
	for {
		select {
		case <-s.wrote:
		case <-s.quit:
			return
		}
		// A failed checkpoint leaves the writes in the WAL, where the
		// next one finds them.
		_, err := ck.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		if f := checkpointed.Load(); f != nil {
			(*f)(err)
		}
		select {
		case <-time.After(checkpointInterval):
		case <-s.quit:
			return
		}
	}
}

// OpenPostgres connects to the PostgreSQL database at url and migrates it.
func OpenPostgres(ctx context.Context, url string) (*SQL, error) {
	name := config.RedactURL(url)
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", name, err)
	}
	db.SetMaxOpenConns(postgresWriters + 8)
	db.SetMaxIdleConns(postgresWriters + 8)
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: cannot connect (%w): check the URL, that PostgreSQL runs and accepts this user", name, err)
	}
	s := &SQL{db: db, dialect: "postgres", name: name}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s.start(postgresWriters), nil
}

// DB is the underlying database (for tests and tools).
func (s *SQL) DB() *sql.DB { return s.db }

// migrateLock is the key of the PostgreSQL advisory lock a migration's
// transaction holds.
const migrateLock = 7061727

// migrate applies the migrations the database lacks, each in its own
// transaction. On PostgreSQL every such transaction first takes an
// advisory lock (migrateLock), so that servers starting together on a
// fresh database apply each migration once, the others waiting and
// finding it applied; schema_migrations itself is made under the lock
// too, as two CREATE TABLE IF NOT EXISTS at once clash there.
func (s *SQL) migrate(ctx context.Context) error {
	for _, m := range migrations {
		if err := s.apply(ctx, m); err != nil {
			return fmt.Errorf("store %s: migration %d: %w", s.name, m.version, err)
		}
	}
	var newest int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("store %s: %w", s.name, err)
	}
	if newest > SchemaVersion() {
		return fmt.Errorf("store %s has schema version %d, newer than this saucer knows (%d): run a newer saucer against it", s.name, newest, SchemaVersion())
	}
	return nil
}

func (s *SQL) apply(ctx context.Context, m migration) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.dialect == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = $1`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	stmts := m.sqlite
	if s.dialect == "postgres" {
		stmts = m.postgres
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, m.version, time.Now().Unix()); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *SQL) wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case full(err) && !errors.Is(err, ErrFull):
		where := "the PostgreSQL server's disk"
		if s.dialect == "sqlite" {
			where = "the disk that holds " + filepath.Dir(s.path)
		}
		return fmt.Errorf("store %s: %s: %w (%w): free space on %s; what the store holds is kept", s.name, op, ErrFull, err, where)
	}
	return fmt.Errorf("store %s: %s: %w", s.name, op, err)
}

// Statements that write tasks, as SQL runs them and as the replay of a
// task log does.
const (
	putTaskSQL = `INSERT INTO tasks (id, client_id, status, created_at, data, server_id) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET client_id = excluded.client_id, status = excluded.status, data = excluded.data
		WHERE tasks.server_id = excluded.server_id OR tasks.server_id = ''`
	deleteJournalSQL = `DELETE FROM journal WHERE task_id = $1`
	// dropJournalSQL deletes the journal of a task whose record says it
	// is no longer running.
	dropJournalSQL = `DELETE FROM journal WHERE task_id = $1 AND NOT EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND status = 'running')`
	deleteTaskSQL  = `DELETE FROM tasks WHERE id = $1`
	appendSQL      = `INSERT INTO journal (task_id, seq, kind, key, data) VALUES ($1, $2, $3, $4, $5)`
)

// running is the status of a task that has not ended (as the server
// writes it): the only one whose journal is read again.
const running = "running"

// taskArgs are putTaskSQL's arguments.
func taskArgs(t Task) []any {
	return []any{t.ID, t.ClientID, t.Status, t.CreatedAt.UnixNano(), string(t.Data), t.Server}
}

func (s *SQL) PutTask(ctx context.Context, t Task, wait bool) error {
	if t.Status == running {
		return s.exec(ctx, t.ID, wait, "put task", putTaskSQL, taskArgs(t)...)
	}
	// Only a running task is resumed: an ended one's journal is of no
	// more use. Its record goes first; the journal goes only if the
	// record landed (not when another server runs the task now).
	if err := s.exec(ctx, t.ID, false, "put task", putTaskSQL, taskArgs(t)...); err != nil {
		return err
	}
	return s.exec(ctx, t.ID, wait, "put task", dropJournalSQL, t.ID)
}

// ClaimTask makes to the server of a running task if from is its server
// now; it reports whether it did. Two servers claiming one task: one
// wins.
func (s *SQL) ClaimTask(ctx context.Context, id, from, to string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET server_id = $1 WHERE id = $2 AND server_id = $3 AND status = 'running'`, to, id, from)
	if err != nil {
		return false, s.wrap("claim task", err)
	}
	n, err := res.RowsAffected()
	return n == 1, s.wrap("claim task", err)
}

// taskColumns are what scanTask reads, in its order.
const taskColumns = `id, client_id, status, created_at, data, server_id`

// scanTask reads a task's row (taskColumns) from a *sql.Row or *sql.Rows.
func scanTask(r interface{ Scan(...any) error }) (Task, error) {
	var t Task
	var created int64
	var data string
	if err := r.Scan(&t.ID, &t.ClientID, &t.Status, &created, &data, &t.Server); err != nil {
		return Task{}, err
	}
	t.CreatedAt, t.Data = time.Unix(0, created).UTC(), []byte(data)
	return t, nil
}

func (s *SQL) Task(ctx context.Context, id string) (Task, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrNotFound
	}
	return t, s.wrap("read task", err)
}

func (s *SQL) Tasks(ctx context.Context, status string, limit int) ([]Task, error) {
	q := `SELECT ` + taskColumns + ` FROM tasks`
	var args []any
	if status != "" {
		q += ` WHERE status = $1`
		args = append(args, status)
	}
	q += ` ORDER BY created_at DESC`
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("list tasks", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, s.wrap("list tasks", err)
		}
		out = append(out, t)
	}
	return out, s.wrap("list tasks", rows.Err())
}

func (s *SQL) DeleteTask(ctx context.Context, id string) error {
	if err := s.exec(ctx, id, true, "delete task", deleteJournalSQL, id); err != nil {
		return err
	}
	return s.exec(ctx, id, true, "delete task", deleteTaskSQL, id)
}

func (s *SQL) Append(ctx context.Context, taskID string, e Entry, wait bool) error {
	return s.exec(ctx, taskID, wait, "append to the journal", appendSQL, taskID, e.Seq, e.Kind, e.Key, string(e.Data))
}

// Sync queues a write of nothing behind the task's writes (they share a
// writer, which commits in order) and waits for it.
func (s *SQL) Sync(ctx context.Context, taskID string) error {
	return s.exec(ctx, taskID, true, "write what the task queued", probeSQL)
}

func (s *SQL) Journal(ctx context.Context, taskID string) ([]Entry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, key, data FROM journal WHERE task_id = $1 ORDER BY seq`, taskID)
	if err != nil {
		return nil, s.wrap("read the journal", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var data string
		if err := rows.Scan(&e.Seq, &e.Kind, &e.Key, &data); err != nil {
			return nil, s.wrap("read the journal", err)
		}
		e.Data = []byte(data)
		out = append(out, e)
	}
	return out, s.wrap("read the journal", rows.Err())
}

func (s *SQL) PutDevice(ctx context.Context, d Device) error {
	return s.exec(ctx, "device:"+d.ID, true, "put device", `INSERT INTO devices (id, updated_at, data, server_id, connected) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data, server_id = excluded.server_id, connected = excluded.connected
		WHERE excluded.connected OR devices.server_id = excluded.server_id`,
		d.ID, d.UpdatedAt.UnixNano(), string(d.Data), d.Server, d.Connected)
}

func (s *SQL) DeleteDevice(ctx context.Context, id, server string) error {
	return s.exec(ctx, "device:"+id, true, "delete device", `DELETE FROM devices WHERE id = $1 AND server_id = $2`, id, server)
}

// deviceColumns are what scanDevice reads, in its order.
const deviceColumns = `id, updated_at, data, server_id, connected`

// scanDevice reads a device's row (deviceColumns) from a *sql.Row or
// *sql.Rows.
func scanDevice(r interface{ Scan(...any) error }) (Device, error) {
	var d Device
	var updated int64
	var data string
	if err := r.Scan(&d.ID, &updated, &data, &d.Server, &d.Connected); err != nil {
		return Device{}, err
	}
	d.UpdatedAt, d.Data = time.Unix(0, updated).UTC(), []byte(data)
	return d, nil
}

func (s *SQL) Device(ctx context.Context, id string) (Device, error) {
	d, err := scanDevice(s.db.QueryRowContext(ctx, `SELECT `+deviceColumns+` FROM devices WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, ErrNotFound
	}
	return d, s.wrap("read device", err)
}

func (s *SQL) Devices(ctx context.Context) ([]Device, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+deviceColumns+` FROM devices ORDER BY id`)
	if err != nil {
		return nil, s.wrap("list devices", err)
	}
	defer rows.Close()
	var out []Device
	for rows.Next() {
		d, err := scanDevice(rows)
		if err != nil {
			return nil, s.wrap("list devices", err)
		}
		out = append(out, d)
	}
	return out, s.wrap("list devices", rows.Err())
}

func (s *SQL) Post(ctx context.Context, clientID string, frame []byte) error {
	return s.exec(ctx, "device:"+clientID, true, "queue a frame", `INSERT INTO outbox (client_id, data) VALUES ($1, $2)`, clientID, string(frame))
}

func (s *SQL) Take(ctx context.Context, clientID string) ([][]byte, error) {
	rows, err := s.db.QueryContext(ctx, `DELETE FROM outbox WHERE client_id = $1 RETURNING seq, data`, clientID)
	if err != nil {
		return nil, s.wrap("take queued frames", err)
	}
	out, err := taken(rows)
	return out, s.wrap("take queued frames", err)
}

// taken reads the (seq, data) rows a DELETE ... RETURNING took, and
// returns their data in the order of seq (RETURNING has none): the order
// they were queued in.
func taken(rows *sql.Rows) ([][]byte, error) {
	defer rows.Close()
	type row struct {
		seq  int64
		data string
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.seq, &r.data); err != nil {
			return nil, err
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
	out := make([][]byte, len(got))
	for i, r := range got {
		out[i] = []byte(r.data)
	}
	return out, nil
}

// Close waits for queued writes and closes the database. Writes it held
// because the disk was full are tried once more; Close says how many it
// could not store.
func (s *SQL) Close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		for _, wr := range s.writers {
			<-wr.stopped
		}
		if s.ckStopped != nil {
			<-s.ckStopped
		}
		if s.lockConn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.lockConn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lockKey)
			cancel()
			s.lockConn.Close()
		}
		if s.lockFile != nil {
			s.lockFile.Close()
		}
		err = s.db.Close()
		if n := s.unstored.Load(); n > 0 {
			err = errors.Join(fmt.Errorf("store %s: %d write(s) that nobody waited for were not stored: %w, still, at the stop (what the tasks' journals hold resumes them)", s.name, n, ErrFull), err)
		}
	})
	return err
}
