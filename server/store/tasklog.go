package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// One release of Saucer wrote an SQLite store's tasks through a log of
// its own, PATH-tasklog/, and moved them into the database every 0.1 s
// and on a clean stop. A server of that release that was killed left
// writes there that the database lacks (and that a saucer from before
// that release never saw). This one writes to SQLite alone; when it
// takes a store over (Lock), it applies such a log once, in one
// transaction, and removes it. Nothing else reads or writes that folder.

// replayTaskLog applies the task log a killed server left beside the
// database, if there is one, and removes it.
func (s *SQL) replayTaskLog(ctx context.Context) error {
	dir := s.path + "-tasklog"
	names, err := os.ReadDir(dir) // sorted: segments are numbered with leading zeros
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	const help = "it holds tasks that a saucer killed before it could move them into the database wrote there, and it stays until they are in: " +
		"fix the cause and start again (or start the saucer that wrote it on this store and stop it with Ctrl-C, which moves them in)"
	if err != nil {
		return fmt.Errorf("store %s: the task log %s cannot be read (%w): %s", s.name, dir, err, help)
	}
	var ops []logOp
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".log") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			return fmt.Errorf("store %s: the task log %s cannot be read (%w): %s", s.name, dir, err, help)
		}
		got, torn := decodeLog(b)
		ops = append(ops, got...)
		if torn {
			break // a record cut short when its writer died: what follows was never acknowledged
		}
	}
	if err := s.applyLog(ctx, ops); err != nil {
		return fmt.Errorf("store %s: the task log %s could not be moved into the database (%w): %s", s.name, dir, err, help)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("store %s: the task log %s is in the database now but could not be removed (%w): remove the folder by hand", s.name, dir, err)
	}
	return nil
}

// logOp is one write a task log holds.
type logOp struct {
	op    byte // opTask, opEntry or opDelete
	task  Task
	id    string // the task of an entry or a deletion
	entry Entry
}

const (
	opTask   = 'T'
	opEntry  = 'E'
	opDelete = 'D'
)

// applyLog writes a log's writes in their order in one transaction,
// synchronously on disk (the log goes once it returns), and drops the
// journals of the tasks that ended, as PutTask does. An entry the
// database has already (the log's writer was killed after a checkpoint
// and before it removed the segment) is left as it is.
func (s *SQL) applyLog(ctx context.Context, ops []logOp) error {
	if len(ops) == 0 {
		return nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous=FULL`); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `PRAGMA synchronous=NORMAL`)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	records := map[string]bool{}
	for _, op := range ops {
		switch op.op {
		case opTask:
			_, err = tx.ExecContext(ctx, putTaskSQL, taskArgs(op.task)...)
			records[op.task.ID] = true
		case opEntry:
			e := op.entry
			_, err = tx.ExecContext(ctx, appendSQL+` ON CONFLICT (task_id, seq) DO NOTHING`, op.id, e.Seq, e.Kind, e.Key, string(e.Data))
		case opDelete:
			if _, err = tx.ExecContext(ctx, deleteJournalSQL, op.id); err == nil {
				_, err = tx.ExecContext(ctx, deleteTaskSQL, op.id)
			}
		}
		if err != nil {
			return err
		}
	}
	for id := range records {
		if _, err := tx.ExecContext(ctx, dropJournalSQL, id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// A log segment is a sequence of records: the length of the payload and
// its CRC-32C (little endian, 4 bytes each), then the payload: the op's
// byte and its fields, strings and numbers as uvarints (strings with
// their length first; a task's creation time as a varint of Unix
// nanoseconds).

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decodeLog reads a segment's records; torn says it ended in a damaged
// or incomplete one, where reading stops.
func decodeLog(b []byte) (ops []logOp, torn bool) {
	for len(b) > 0 {
		if len(b) < 8 {
			return ops, true
		}
		n := int(binary.LittleEndian.Uint32(b))
		if n > len(b)-8 || crc32.Checksum(b[8:8+n], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
			return ops, true
		}
		op, ok := decodeOp(b[8 : 8+n])
		if !ok {
			return ops, true
		}
		ops = append(ops, op)
		b = b[8+n:]
	}
	return ops, false
}

func decodeOp(p []byte) (logOp, bool) {
	if len(p) == 0 {
		return logOp{}, false
	}
	op := logOp{op: p[0]}
	p = p[1:]
	bad := false
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
		t := &op.task
		t.ID, t.ClientID, t.Status, t.Server = str(), str(), str(), str()
		v, n := binary.Varint(p)
		if bad || n <= 0 {
			return logOp{}, false
		}
		p = p[n:]
		t.CreatedAt = time.Unix(0, v).UTC()
		t.Data = []byte(str())
	case opEntry:
		op.id = str()
		op.entry.Seq = int(num())
		op.entry.Kind, op.entry.Key, op.entry.Data = str(), str(), []byte(str())
	case opDelete:
		op.id = str()
	default:
		return logOp{}, false
	}
	return op, !bad && len(p) == 0
}
