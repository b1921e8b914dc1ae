package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// taskLog is how an SQLite store held by a server (after Lock) writes
// tasks: their records, journal entries and deletions are appended to a
// log file beside the database, everything that arrives together in one
// write(2), and reach the database in a checkpoint: one transaction,
// checkpointDelay after the first write it holds.
//
// A task waits for its writes: before each command round is sent, and
// for its end. A commit to SQLite writes a WAL frame for every page it
// touched, a system call each; with the way through the driver it cost
// 120-150 µs a wait, against 0.25 ms for a whole short task on the memory
// store. A write to the log costs one system call, and a checkpoint
// writes each page once for the hundreds of tasks it holds, and a record
// rewritten many times within it once.
//
// What a write returned is as durable as a commit to the database (WAL,
// synchronous=NORMAL): it survives the process being killed, not the
// machine losing power. The next Lock replays what the log holds into
// the database before the server reads it. A checkpoint is committed
// with synchronous=FULL before the log files it covers are removed, so a
// power loss never takes from the database what it removed from the log;
// a log torn by one is read up to its first damaged record.
//
// Reads see the log: Task and Journal look at what it holds that is not
// yet in the database; Tasks checkpoints first.
type taskLog struct {
	s   *SQL
	dir string // the log's files: one segment per checkpoint

	// qmu guards the queue of writes. A write that is waited for is
	// written by its caller when nobody holds the pen (no hand-off to
	// another goroutine and back), with what was queued before it; else
	// by the pen's holder, or the writer goroutine. A write that is not
	// waited for only queues: it goes with the next one that is, or
	// within flushDelay.
	qmu       sync.Mutex
	queue     []*logOp
	spare     []*logOp    // the pen's, for the next queue
	closed    bool        // no more writes are taken
	armed     bool        // flush is set to wake the writer goroutine
	flush     *time.Timer // wakes it flushDelay after a write not waited for
	kick      chan struct{}
	syncs     chan chan error // Tasks waits for a checkpoint of all logged
	jobs      chan *checkpoint
	jobDone   chan struct{} // a checkpoint is committed
	ckStopped chan struct{} // closed when the checkpointer is done
	quit      chan struct{} // closed by close
	stopped   chan struct{} // closed when the writer is done

	// pen is held by whoever writes to the log's file: f, its segment
	// and its size, and buf, are its.
	pen  sync.Mutex
	f    *os.File
	seg  int
	size int
	buf  []byte

	// ckMu is held by a checkpoint while it commits, and by a read
	// while it reads the database and what the log holds: a read sees
	// a task's writes either in the log or in the database, never in
	// neither.
	ckMu sync.RWMutex
	mu   sync.Mutex
	cur  logged // written since the checkpoint being committed began
	ckpt logged // what that checkpoint commits; nil when none is
	err  error  // the log could not be written: every write fails
	// journaled are the running tasks whose journal has rows in the
	// database (which go when the task ends); nil while the log replays
	// an earlier one's, when it does not know. Only the checkpoint uses
	// it.
	journaled map[string]bool
	// lost is a write nobody waited for that was refused, for the next
	// one waited for to report. The pen's.
	lost error
	// servers says a task record names its server: records are then
	// checked as SQL.PutTask does, so that the log holds none that the
	// database would refuse. (A server alone names none.)
	servers bool
}

// logged is what the log holds for tasks, by task id.
type logged map[string]*loggedTask

type loggedTask struct {
	deleted bool  // the task was deleted first (its rows go)
	rec     *Task // its latest record
	entries []Entry
}

// ended says its latest record is of a task that is no longer running:
// only a running task resumes, so its journal is of no more use.
func (t *loggedTask) ended() bool { return t.rec != nil && t.rec.Status != running }

// logOp is one write for the log.
type logOp struct {
	op    byte // opTask, opEntry or opDelete
	task  Task
	id    string
	entry Entry
	wait  bool
	done  chan error
	// refused says the pen's holder answered it without logging it.
	refused bool
}

const (
	opTask   = 'T'
	opEntry  = 'E'
	opDelete = 'D'
)

// checkpoint is what one checkpoint commits: what the log's segments up
// to seg hold.
type checkpoint struct {
	tasks   logged
	seg     int
	waiters []chan error
}

// checkpointDelay is how long a write stays only in the log, at most
// (while the database is not slower than that). segmentMax starts a
// checkpoint sooner when the log grows past it.
var checkpointDelay = 100 * time.Millisecond // a variable for tests

const segmentMax = 16 << 20

// startLog replays what a log left by an earlier server holds into the
// database, then sends tasks' writes through a new log.
func (s *SQL) startLog(ctx context.Context) error {
	l := &taskLog{s: s, dir: s.path + "-tasklog",
		kick: make(chan struct{}, 1), syncs: make(chan chan error), jobs: make(chan *checkpoint, 1), jobDone: make(chan struct{}, 1),
		ckStopped: make(chan struct{}), quit: make(chan struct{}), stopped: make(chan struct{}), cur: logged{}}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("store %s: task log: %w", s.name, err)
	}
	segs, err := l.segments()
	if err != nil {
		return fmt.Errorf("store %s: task log: %w", s.name, err)
	}
	last := 0
	if len(segs) > 0 {
		last = segs[len(segs)-1]
		found := logged{}
		for _, seg := range segs {
			torn, err := l.read(seg, found)
			if err != nil {
				return fmt.Errorf("store %s: task log %s: %w", s.name, l.file(seg), err)
			}
			if torn {
				break // what follows a damaged record is not applied
			}
		}
		if err := l.commit(ctx, found); err != nil {
			return fmt.Errorf("store %s: replaying the task log: %w", s.name, err)
		}
		l.remove(last)
	}
	if l.journaled, err = s.runningJournals(ctx); err == nil {
		err = s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE server_id <> '')`).Scan(&l.servers)
	}
	if err != nil {
		return fmt.Errorf("store %s: task log: %w", s.name, err)
	}
	l.flush = time.AfterFunc(time.Hour, l.wake)
	l.flush.Stop()
	if l.f, err = l.create(last + 1); err != nil {
		return fmt.Errorf("store %s: task log: %w", s.name, err)
	}
	l.seg = last + 1
	go l.checkpointer()
	go l.run()
	s.log.Store(l)
	return nil
}

// runningJournals lists the running tasks with journal entries.
func (s *SQL) runningJournals(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT j.task_id FROM journal j JOIN tasks t ON t.id = j.task_id WHERE t.status = $1`, running)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, rows.Err()
}

func (l *taskLog) file(seg int) string { return filepath.Join(l.dir, fmt.Sprintf("%016d.log", seg)) }

func (l *taskLog) create(seg int) (*os.File, error) {
	return os.OpenFile(l.file(seg), os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o600)
}

// segments lists the log's segments, oldest first.
func (l *taskLog) segments() ([]int, error) {
	names, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var segs []int
	for _, n := range names {
		if num, ok := strings.CutSuffix(n.Name(), ".log"); ok {
			if seg, err := strconv.Atoi(num); err == nil {
				segs = append(segs, seg)
			}
		}
	}
	sort.Ints(segs)
	return segs, nil
}

// remove deletes the segments up to seg: the database has what they held.
func (l *taskLog) remove(seg int) {
	segs, _ := l.segments()
	for _, s := range segs {
		if s <= seg {
			os.Remove(l.file(s))
		}
	}
}

// do sends a write through the log.
func (l *taskLog) do(ctx context.Context, op *logOp) error {
	if op.wait {
		op.done = make(chan error, 1)
	}
	l.qmu.Lock()
	if l.closed {
		l.qmu.Unlock()
		return l.s.wrap(op.name(), errors.New("the store is closed"))
	}
	l.queue = append(l.queue, op)
	if !op.wait && !l.armed {
		l.armed = true
		l.flush.Reset(flushDelay)
	}
	l.qmu.Unlock()
	if !op.wait {
		return nil
	}
	if l.pen.TryLock() {
		l.lead()
	} else {
		l.wake() // the holder may have written its last batch
	}
	return l.s.await(ctx, op.name(), op.done, l.stopped)
}

// flushDelay bounds how long a write that is not waited for stays queued.
const flushDelay = 5 * time.Millisecond

// wake tells the writer goroutine there is a queue to write.
func (l *taskLog) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// lead writes what is queued, the pen held, and lets it go; a
// caller writes at most two batches and leaves the rest to the writer
// goroutine.
func (l *taskLog) lead() {
	first := l.writeQueued(2)
	l.pen.Unlock()
	l.qmu.Lock()
	more := len(l.queue) > 0
	l.qmu.Unlock()
	if more || first {
		l.wake() // to write the rest, or to time the next checkpoint
	}
}

// writeQueued writes what is queued, at most limit batches (0: until
// the queue is empty); it reports whether the log held nothing before
// (see write). The pen's.
func (l *taskLog) writeQueued(limit int) (first bool) {
	for n := 0; limit == 0 || n < limit; n++ {
		batch := l.take()
		if len(batch) == 0 {
			break
		}
		first = l.write(batch) || first
	}
	return first
}

// take is the pen's: the queued writes, oldest first.
func (l *taskLog) take() []*logOp {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	batch := l.queue
	l.queue, l.spare = l.spare, nil
	if l.armed {
		l.armed = false
		l.flush.Stop()
	}
	return batch
}

// recycle gives the pen's slice back for a later queue.
func (l *taskLog) recycle(batch []*logOp) {
	clear(batch)
	l.spare = batch[:0]
}

func (op *logOp) name() string {
	switch op.op {
	case opTask:
		return "put task"
	case opEntry:
		return "append to the journal"
	}
	return "delete task"
}

func (op *logOp) taskID() string {
	if op.op == opTask {
		return op.task.ID
	}
	return op.id
}

// run writes batches of queued writes to the log, one write(2) each,
// and starts checkpoints, until the store closes.
func (l *taskLog) run() {
	defer close(l.stopped)
	var (
		due      <-chan time.Time // runs from the first write after a checkpoint began
		ready    bool             // due has come
		inflight bool             // the checkpointer has a checkpoint
		syncs    []chan error     // waiting for a checkpoint of all logged
	)
	for {
		select {
		case <-l.kick:
		case ch := <-l.syncs:
			syncs = append(syncs, ch)
		case <-due:
			due, ready = nil, true
		case <-l.jobDone:
			inflight = false
		case <-l.quit:
			l.drain()
			return
		}
		l.pen.Lock()
		l.writeQueued(0)
		l.mu.Lock()
		empty := len(l.cur) == 0
		l.mu.Unlock()
		switch {
		case inflight:
		case empty:
			for _, ch := range syncs {
				ch <- nil
			}
			syncs, due, ready = nil, nil, false
		case ready || len(syncs) > 0 || l.size >= segmentMax:
			// Hand what the log holds to the checkpointer, and log
			// what follows in a new segment.
			nf, err := l.create(l.seg + 1)
			if err != nil {
				l.fail(err)
				break
			}
			l.f.Close()
			l.mu.Lock()
			job := &checkpoint{tasks: l.cur, seg: l.seg, waiters: syncs}
			l.ckpt, l.cur = l.cur, logged{}
			l.mu.Unlock()
			l.f, l.seg, l.size = nf, l.seg+1, 0
			due, ready, syncs, inflight, empty = nil, false, nil, true, true
			l.jobs <- job
		}
		if !empty && due == nil && !ready {
			due = time.After(checkpointDelay)
		}
		l.pen.Unlock()
		// Let the goroutines it released run before it goes on (see
		// SQL.run).
		runtime.Gosched()
	}
}

// write logs a batch of writes in one write(2), adds them to what the
// log holds and answers those that wait; it reports whether the log held
// nothing before (a checkpoint is to be timed). The pen's.
func (l *taskLog) write(batch []*logOp) (first bool) {
	defer l.recycle(batch)
	buf := &l.buf
	*buf = (*buf)[:0]
	var seen map[entryKey]bool // the batch's entries, when it has several writes
	if len(batch) > 1 {
		seen = map[entryKey]bool{}
	}
	for _, op := range batch {
		*buf = l.check(op, *buf, seen)
	}
	if len(*buf) > 0 && l.failed() == nil {
		if _, err := l.f.Write(*buf); err != nil {
			l.fail(err)
		}
		l.size += len(*buf)
	}
	err := l.failed()
	l.mu.Lock()
	first = len(l.cur) == 0
	for _, op := range batch {
		if op.refused {
			continue // answered
		}
		if err == nil {
			l.cur.add(op)
		}
		if !op.wait {
			continue
		}
		switch {
		case err != nil:
			op.done <- l.s.wrap(op.name(), err)
		case l.lost != nil:
			op.done <- fmt.Errorf("an earlier write failed: %w", l.lost)
			l.lost = nil
		default:
			op.done <- nil
		}
	}
	first = first && len(l.cur) > 0
	l.mu.Unlock()
	return first
}

// refuse answers a write that is not logged. A write nobody waits for
// is answered by the next one that is waited for (as SQL.run does).
func (l *taskLog) refuse(op *logOp, err error) {
	op.refused = true
	err = l.s.wrap(op.name(), err)
	if !op.wait {
		l.lost = cmp.Or(l.lost, err)
		return
	}
	op.done <- err
}

// entryKey names a journal entry.
type entryKey struct {
	task string
	seq  int
}

// check encodes a write for the log, or answers it if it is not to be
// written: a journal entry whose seq the task has (in the log, or
// earlier in its batch: seen, nil for a batch of one), or a record
// another server holds (which SQL.PutTask ignores).
func (l *taskLog) check(op *logOp, buf []byte, seen map[entryKey]bool) []byte {
	l.mu.Lock()
	switch op.op {
	case opEntry:
		k := entryKey{op.id, op.entry.Seq}
		if seen[k] || l.has(op.id, op.entry.Seq) {
			l.mu.Unlock()
			l.refuse(op, fmt.Errorf("task %s has journal entry %d already", op.id, op.entry.Seq))
			return buf
		}
		if seen != nil {
			seen[k] = true
		}
	case opTask:
		if op.task.Server != "" {
			l.servers = true
		}
		if l.servers {
			held, ok := l.holder(op.task.ID)
			if !ok { // not in the log: ask the database
				l.mu.Unlock()
				l.s.db.QueryRow(`SELECT server_id FROM tasks WHERE id = $1`, op.task.ID).Scan(&held)
				l.mu.Lock()
			}
			if held != "" && held != op.task.Server {
				l.mu.Unlock()
				l.refuse(op, nil) // as SQL.PutTask: ignored
				return buf
			}
		}
	}
	l.mu.Unlock()
	return appendOp(buf, op)
}

// has reports a journal entry the log holds. Called with l.mu held.
func (l *taskLog) has(id string, seq int) bool {
	for _, m := range []logged{l.ckpt, l.cur} {
		if t := m[id]; t != nil {
			for _, e := range t.entries {
				if e.Seq == seq {
					return true
				}
			}
		}
	}
	return false
}

// holder is the server of a task's latest record in the log, if it
// holds one. Called with l.mu held.
func (l *taskLog) holder(id string) (string, bool) {
	for _, m := range []logged{l.cur, l.ckpt} {
		if t := m[id]; t != nil {
			if t.rec != nil {
				return t.rec.Server, true
			}
			if t.deleted {
				return "", true
			}
		}
	}
	return "", false
}

func (m logged) add(op *logOp) {
	id := op.taskID()
	t := m[id]
	if t == nil {
		t = &loggedTask{}
		m[id] = t
	}
	switch op.op {
	case opTask:
		rec := op.task
		if t.rec != nil {
			rec.CreatedAt = t.rec.CreatedAt // as the database keeps it
		}
		t.rec = &rec
	case opEntry:
		t.entries = append(t.entries, op.entry)
	case opDelete:
		*t = loggedTask{deleted: true}
	}
}

func (l *taskLog) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = fmt.Errorf("the task log %s cannot be written (%w): restart the server once the disk is fixed", l.dir, err)
	}
	l.mu.Unlock()
}

func (l *taskLog) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// drain writes what was queued before close, waits for the checkpoint
// under way and commits what remains; the log's files go once the
// database has it all.
func (l *taskLog) drain() {
	l.qmu.Lock()
	l.closed = true
	l.qmu.Unlock()
	l.pen.Lock()
	defer l.pen.Unlock()
	l.writeQueued(0)
	l.f.Close()
	close(l.jobs)
	<-l.ckStopped
	l.mu.Lock()
	rest, pending := l.cur, l.ckpt
	l.mu.Unlock()
	if pending != nil || l.failed() != nil {
		return // left to the next server's replay
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l.ckMu.Lock()
	err := l.commit(ctx, rest)
	if err == nil {
		l.mu.Lock()
		l.cur = logged{}
		l.mu.Unlock()
	}
	l.ckMu.Unlock()
	if err == nil {
		os.RemoveAll(l.dir)
	}
}

// checkpointer commits checkpoints, retrying one that fails until it
// succeeds or the store closes (its segments stay for the next server).
func (l *taskLog) checkpointer() {
	defer close(l.ckStopped)
	for job := range l.jobs {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			l.ckMu.Lock()
			err := l.commit(ctx, job.tasks)
			if err == nil {
				l.mu.Lock()
				l.ckpt = nil
				l.mu.Unlock()
			}
			l.ckMu.Unlock()
			cancel()
			for _, ch := range job.waiters {
				ch <- err
			}
			job.waiters = nil
			if err == nil {
				l.remove(job.seg)
				break
			}
			select {
			case <-l.quit:
				return
			case <-time.After(time.Second):
			}
		}
		l.jobDone <- struct{}{} // room for one: the writer starts no other before it reads it
	}
}

// commit writes what the log holds for tasks to the database in one
// transaction, synchronously on disk before the log's files go.
func (l *taskLog) commit(ctx context.Context, tasks logged) error {
	if len(tasks) == 0 {
		return nil
	}
	s := l.s
	// Statements are prepared before the transaction takes the only
	// connection (see SQL.commit).
	var stmts [4]*sql.Stmt
	for i, q := range []string{deleteJournalSQL, deleteTaskSQL, putTaskSQL, addEntrySQL} {
		st, err := s.prepared(ctx, q)
		if err != nil {
			return s.wrap("checkpoint", err)
		}
		stmts[i] = st
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.wrap("checkpoint", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous=FULL`); err != nil {
		return s.wrap("checkpoint", err)
	}
	defer conn.ExecContext(context.Background(), `PRAGMA synchronous=NORMAL`)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("checkpoint", err)
	}
	defer tx.Rollback()
	delJournal, delTask, put, add := tx.StmtContext(ctx, stmts[0]), tx.StmtContext(ctx, stmts[1]), tx.StmtContext(ctx, stmts[2]), tx.StmtContext(ctx, stmts[3])
	var rows []string // tasks whose journal this commit adds rows to
	for id, t := range tasks {
		// The journal of a task that ended does not go to the database
		// (nor stay there).
		ended := t.ended()
		if ended && !t.deleted && (l.journaled == nil || l.journaled[id]) {
			if _, err := delJournal.ExecContext(ctx, id); err != nil {
				return s.wrap("checkpoint", err)
			}
		}
		if t.deleted {
			if _, err := delJournal.ExecContext(ctx, id); err != nil {
				return s.wrap("checkpoint", err)
			}
			if _, err := delTask.ExecContext(ctx, id); err != nil {
				return s.wrap("checkpoint", err)
			}
		}
		if r := t.rec; r != nil {
			if _, err := put.ExecContext(ctx, taskArgs(*r)...); err != nil {
				return s.wrap("checkpoint", err)
			}
		}
		if ended {
			continue
		}
		for _, e := range t.entries {
			if _, err := add.ExecContext(ctx, id, e.Seq, e.Kind, e.Key, string(e.Data)); err != nil {
				return s.wrap("checkpoint", err)
			}
		}
		if len(t.entries) > 0 {
			rows = append(rows, id)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.wrap("checkpoint", err)
	}
	if l.journaled != nil {
		for id, t := range tasks {
			if t.deleted || t.ended() {
				delete(l.journaled, id)
			}
		}
		for _, id := range rows {
			l.journaled[id] = true
		}
	}
	return nil
}

// running is the status of a task that has not ended (as the server
// writes it): the only one whose journal is read again.
const running = "running"

// sync returns once the database has every write logged before it.
func (l *taskLog) sync(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case l.syncs <- ch:
	case <-l.stopped:
		return nil // closed: drain committed what it could
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// task is a task's record as the log holds it: found says the log has
// the last word on it (its record, or its deletion).
func (l *taskLog) task(id string) (t Task, found bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range []logged{l.cur, l.ckpt} {
		if lt := m[id]; lt != nil {
			if lt.rec != nil {
				return *lt.rec, true, nil
			}
			if lt.deleted {
				return Task{}, true, ErrNotFound
			}
		}
	}
	return Task{}, false, nil
}

// journal adds what the log holds of a task's journal to the entries
// the database has, in order of seq.
func (l *taskLog) journal(id string, stored []Entry) []Entry {
	l.mu.Lock()
	for _, m := range []logged{l.ckpt, l.cur} {
		if lt := m[id]; lt != nil {
			if lt.deleted {
				stored = stored[:0]
			}
			stored = append(stored, lt.entries...)
		}
	}
	l.mu.Unlock()
	slices.SortStableFunc(stored, func(a, b Entry) int { return a.Seq - b.Seq })
	return slices.CompactFunc(stored, func(a, b Entry) bool { return a.Seq == b.Seq })
}

// close writes what is queued, checkpoints it and stops the log.
func (l *taskLog) close() {
	close(l.quit)
	<-l.stopped
}

// A log segment is a sequence of records: the length of the payload and
// its CRC-32C (little endian, 4 bytes each), then the payload: the op's
// byte and its fields, strings and numbers as uvarints (strings with
// their length first).

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendOp(buf []byte, op *logOp) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0, op.op)
	str := func(s string) { buf = binary.AppendUvarint(buf, uint64(len(s))); buf = append(buf, s...) }
	switch op.op {
	case opTask:
		t := op.task
		str(t.ID)
		str(t.ClientID)
		str(t.Status)
		str(t.Server)
		buf = binary.AppendVarint(buf, t.CreatedAt.UnixNano())
		str(string(t.Data))
	case opEntry:
		str(op.id)
		buf = binary.AppendUvarint(buf, uint64(op.entry.Seq))
		str(op.entry.Kind)
		str(op.entry.Key)
		str(string(op.entry.Data))
	case opDelete:
		str(op.id)
	}
	payload := buf[start+8:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, castagnoli))
	return buf
}

// read adds what a segment holds to found; torn says it ended in a
// damaged or incomplete record (where reading stops).
func (l *taskLog) read(seg int, found logged) (torn bool, err error) {
	b, err := os.ReadFile(l.file(seg))
	if err != nil {
		return false, err
	}
	for len(b) > 0 {
		if len(b) < 8 {
			return true, nil
		}
		n := int(binary.LittleEndian.Uint32(b))
		if n > len(b)-8 || crc32.Checksum(b[8:8+n], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
			return true, nil
		}
		op, err := decodeOp(b[8 : 8+n])
		if err != nil {
			return true, nil
		}
		found.add(op)
		b = b[8+n:]
	}
	return false, nil
}

func decodeOp(p []byte) (*logOp, error) {
	if len(p) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	op := &logOp{op: p[0]}
	p = p[1:]
	var bad bool
	num := func() uint64 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			bad = true
			return 0
		}
		p = p[n:]
		return v
	}
	str := func() string {
		n := num()
		if bad || n > uint64(len(p)) {
			bad = true
			return ""
		}
		s := string(p[:n])
		p = p[n:]
		return s
	}
	switch op.op {
	case opTask:
		op.task.ID, op.task.ClientID, op.task.Status, op.task.Server = str(), str(), str(), str()
		v, n := binary.Varint(p)
		if n <= 0 {
			return nil, io.ErrUnexpectedEOF
		}
		p = p[n:]
		op.task.CreatedAt = time.Unix(0, v).UTC()
		op.task.Data = []byte(str())
	case opEntry:
		op.id = str()
		op.entry.Seq = int(num())
		op.entry.Kind, op.entry.Key, op.entry.Data = str(), str(), []byte(str())
	case opDelete:
		op.id = str()
	default:
		return nil, fmt.Errorf("unknown op %q", op.op)
	}
	if bad || len(p) != 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return op, nil
}
