package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// A cluster is several servers active at once on one PostgreSQL store.
// The database is all they share: a member is alive while it holds an
// advisory lock on its own database session (it goes with the session,
// however the process ends), and members send each other messages
// through a table, woken by NOTIFY. No other protocol runs between them.

// memberLock is the first key of the members' advisory locks; the
// second is each member's key from the server_keys sequence.
const memberLock = 7061729

// busChannel is the NOTIFY channel; its payload names the recipient.
const busChannel = "saucer_bus"

// busPoll is how often a member reads its messages without being woken,
// in case a notification was missed while its session reconnected.
const busPoll = 2 * time.Second

// Member is one server's membership of a cluster.
type Member struct {
	s     *SQL
	id    string
	key   int64
	conn  *sql.Conn // holds the lock and listens
	inbox chan []byte
	lost  chan struct{} // closed when the session that shows it alive ends
	err   error         // why, once lost is closed
	stop  context.CancelFunc
	done  chan struct{}
	once  sync.Once
}

// ErrNoCluster is returned by Join on a store that several active
// servers cannot share.
var ErrNoCluster = errors.New("several active servers need a PostgreSQL store")

// Join makes this process the member id of the store's cluster until
// Close: other members see it alive and can send it messages (Inbox).
// The id must be unique among live members.
func (s *SQL) Join(ctx context.Context, id string) (*Member, error) {
	if s.dialect != "postgres" {
		return nil, fmt.Errorf("store %s: %w (with SQLite, use one server, or --standby for a second)", s.name, ErrNoCluster)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.wrap("join", err)
	}
	m := &Member{s: s, id: id, conn: conn, inbox: make(chan []byte, 256), lost: make(chan struct{}), done: make(chan struct{})}
	fail := func(err error) (*Member, error) {
		conn.Close()
		return nil, s.wrap("join", err)
	}
	// The lock is taken before the member is listed, so a listed member
	// without its lock is dead, never not yet alive.
	if err := conn.QueryRowContext(ctx, `SELECT nextval('server_keys')`).Scan(&m.key); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, memberLock, m.key); err != nil {
		return fail(err)
	}
	var holder bool
	err = conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM servers s JOIN pg_locks l ON `+lockJoin+` WHERE s.id = $1)`, id).Scan(&holder)
	if err != nil {
		return fail(err)
	}
	if holder {
		return fail(fmt.Errorf("a live server already has the id %q: give each server its own", id))
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO servers (id, key, joined_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET key = excluded.key, joined_at = excluded.joined_at`, id, m.key, time.Now().UnixNano()); err != nil {
		return fail(err)
	}
	if _, err := conn.ExecContext(ctx, `LISTEN `+busChannel); err != nil {
		return fail(err)
	}
	lctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	go m.listen(lctx)
	return m, nil
}

// lockJoin matches a member with its advisory lock in pg_locks.
const lockJoin = `l.locktype = 'advisory' AND l.classid = 7061729 AND l.objid = s.key::oid AND l.objsubid = 2 AND l.granted
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// ID is the member's id.
func (m *Member) ID() string { return m.id }

// Inbox delivers the messages sent to this member, in the order they were
// sent by each sender. It is closed when the member leaves or is lost.
func (m *Member) Inbox() <-chan []byte { return m.inbox }

// Lost is closed when the database session that shows this member alive
// has ended: others now see it dead and may take its tasks, so it must
// stop them. Err says why.
func (m *Member) Lost() <-chan struct{} { return m.lost }

// Err is why the membership was lost.
func (m *Member) Err() error {
	select {
	case <-m.lost:
		return m.err
	default:
		return nil
	}
}

// listen waits for notifications on the member's session and reads its
// messages, until Close or the session fails.
func (m *Member) listen(ctx context.Context) {
	defer close(m.done)
	defer close(m.inbox)
	for {
		// Reads are not cut short by Close (that would break the
		// session); only the wait for a notification is.
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := m.read(rctx, ctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			m.fail(err)
			return
		}
		err = m.conn.Raw(func(dc any) error {
			c, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("the PostgreSQL driver is not pgx (%T)", dc)
			}
			wctx, cancel := context.WithTimeout(ctx, busPoll)
			defer cancel()
			_, err := c.Conn().WaitForNotification(wctx)
			if wctx.Err() != nil {
				return nil // a poll, or Close
			}
			return err
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.fail(err)
			return
		}
	}
}

// read takes this member's messages from the bus, oldest first.
func (m *Member) read(ctx, stop context.Context) error {
	rows, err := m.conn.QueryContext(ctx, `DELETE FROM bus WHERE seq IN (SELECT seq FROM bus WHERE to_server = $1 ORDER BY seq LIMIT 256) RETURNING seq, data`, m.id)
	if err != nil {
		return err
	}
	got, err := taken(rows)
	if err != nil {
		return err
	}
	for _, data := range got {
		select {
		case m.inbox <- data:
		case <-stop.Done():
			return nil
		}
	}
	if len(got) == 256 {
		return m.read(ctx, stop) // more are waiting
	}
	return nil
}

func (m *Member) fail(err error) {
	m.once.Do(func() {
		m.err = fmt.Errorf("store %s: the session that showed server %s alive ended: %w", m.s.name, m.id, err)
		close(m.lost)
	})
}

// Send queues a message for the member to and wakes it. It does not wait
// for delivery: a dead member's messages wait in the table until a member
// of that id joins, or are dropped by Prune.
func (m *Member) Send(ctx context.Context, to string, body []byte) error {
	tx, err := m.s.db.BeginTx(ctx, nil)
	if err != nil {
		return m.s.wrap("send to server "+to, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO bus (to_server, data) VALUES ($1, $2)`, to, string(body)); err != nil {
		return m.s.wrap("send to server "+to, err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, busChannel, to); err != nil {
		return m.s.wrap("send to server "+to, err)
	}
	return m.s.wrap("send to server "+to, tx.Commit())
}

// Alive lists the live members' ids, this one included.
func (m *Member) Alive(ctx context.Context) (map[string]bool, error) {
	rows, err := m.s.db.QueryContext(ctx, `SELECT s.id FROM servers s JOIN pg_locks l ON `+lockJoin)
	if err != nil {
		return nil, m.s.wrap("list live servers", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, m.s.wrap("list live servers", err)
		}
		out[id] = true
	}
	return out, m.s.wrap("list live servers", rows.Err())
}

// Prune forgets dead members and the messages left for them.
func (m *Member) Prune(ctx context.Context) error {
	alive, err := m.Alive(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(alive))
	for id := range alive {
		ids = append(ids, id)
	}
	if _, err := m.s.db.ExecContext(ctx, `DELETE FROM bus WHERE NOT (to_server = ANY($1))`, ids); err != nil {
		return m.s.wrap("prune", err)
	}
	_, err = m.s.db.ExecContext(ctx, `DELETE FROM servers WHERE NOT (id = ANY($1))`, ids)
	return m.s.wrap("prune", err)
}

// Close leaves the cluster: the member is dead to the others at once.
func (m *Member) Close() error {
	m.stop()
	<-m.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ok bool
	err := m.conn.QueryRowContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, memberLock, m.key).Scan(&ok)
	cerr := m.conn.Close()
	if err != nil || !ok {
		// The session was already closing (its connection broke): its
		// lock goes when PostgreSQL has ended it. Wait for that, so that
		// no one sees this member alive after Close.
		for ctx.Err() == nil {
			var held bool
			if m.s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.classid = 7061729
				AND l.objid = $1::oid AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, m.key).Scan(&held) != nil || !held {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return cerr
}
