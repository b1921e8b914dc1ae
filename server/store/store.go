// Package store keeps the agent server's state where a restart finds it:
// tasks (their steps, command lifecycles, questions and approvals), each
// task's journal (what its agents were told, in order, so that a task can
// resume after a restart without running a command twice), the device
// registry, and frames waiting for a device that is away.
//
// Three implementations share the small Store interface: Memory (state
// lives and dies with the process), SQLite (the default: one file, a
// pure-Go driver, so the binary stays static; SQLite's own write-ahead
// log is its only log) and PostgreSQL (for production and for several
// servers sharing one database). Open picks
// one from a spec string. Schemas are versioned: each SQL store applies
// the migrations it lacks when it opens.
//
// The store keeps records as JSON documents with a few indexed columns:
// the server owns their shape, the store owns their durability.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/saucerhq/saucer/config"
)

// Task is a task's record.
type Task struct {
	ID, ClientID, Status string
	// Server is the id of the server that runs the task, when several
	// share the store (empty for a server alone). A write by another
	// server than the one recorded is ignored: a server that lost a task
	// to another cannot overwrite it.
	Server    string
	CreatedAt time.Time
	// Data is the whole task as the server shows it (JSON).
	Data json.RawMessage
}

// Entry is one entry of a task's journal.
type Entry struct {
	// Seq orders a task's entries; the server assigns it, from 1.
	Seq int
	// Kind says what the entry records (a model reply, a command round
	// sent, its results, an answer); Key finds it again.
	Kind, Key string
	Data      json.RawMessage
}

// Device is a registered device's record.
type Device struct {
	ID string
	// Server is the id of the server that last held the device's
	// connection, when several share the store; Connected says it holds
	// it now. A write saying a device is not connected changes the record
	// only if its server wrote it last: a device that moved on stays
	// where it went.
	Server    string
	Connected bool
	UpdatedAt time.Time
	Data      json.RawMessage
}

// Store is where the server keeps its state. Implementations are safe for
// concurrent use.
type Store interface {
	// PutTask writes a task's record, replacing the one it had. With wait
	// false it may return before the record is durable, as Append does;
	// a task's records and journal entries are applied in the order they
	// are written.
	PutTask(ctx context.Context, t Task, wait bool) error
	// Task reads one task; ErrNotFound when there is none.
	Task(ctx context.Context, id string) (Task, error)
	// Tasks lists tasks newest first, only those with status when it is
	// not empty, at most limit when it is positive.
	Tasks(ctx context.Context, status string, limit int) ([]Task, error)
	// DeleteTask removes a task and its journal.
	DeleteTask(ctx context.Context, id string) error

	// Append adds an entry to a task's journal; Journal reads them in
	// order of Seq. A task's writes are applied in the order they are
	// made: with wait false, Append may return before the entry is
	// durable, which it is once a later write of the task that waits has
	// returned without error (a failure is returned by a later write that
	// waits). Only a running task is resumed: once a task's record says
	// it is no longer running, a store may drop its journal.
	Append(ctx context.Context, taskID string, e Entry, wait bool) error
	Journal(ctx context.Context, taskID string) ([]Entry, error)
	// Sync returns once every write of the task made before it is
	// durable (or with the error of one that failed): a server that hands
	// a task to another calls it, so that the other reads all of it.
	Sync(ctx context.Context, taskID string) error

	// PutDevice, DeleteDevice and Devices keep the device registry.
	// DeleteDevice removes a record only if server wrote it last: a
	// server forgetting a device that moved to another leaves it.
	PutDevice(ctx context.Context, d Device) error
	DeleteDevice(ctx context.Context, id, server string) error
	// Device reads one device's record; ErrNotFound when there is none.
	Device(ctx context.Context, id string) (Device, error)
	Devices(ctx context.Context) ([]Device, error)

	// Post queues a frame for a device that is away; Take removes and
	// returns its queued frames, oldest first.
	Post(ctx context.Context, clientID string, frame []byte) error
	Take(ctx context.Context, clientID string) ([][]byte, error)

	// Close releases the store.
	Close() error
}

// ErrNotFound is returned for a task that is not in the store.
var ErrNotFound = errors.New("store: not found")

// ErrFull is in the error of a write that the store refused because its
// disk is full. The database keeps what it had (the refused transaction
// is rolled back), and the write can be made again once there is room.
// A write nobody waits for is not refused: the store keeps it and
// writes it, before anything later, once the disk has room.
var ErrFull = errors.New("the disk is full")

// Spec forms accepted by Open.
const specHelp = `use "memory", "sqlite:PATH" or "postgres://USER:PASSWORD@HOST:PORT/DB"`

// Open opens the store a spec names:
//   - "memory": nothing survives the process;
//   - "sqlite:PATH": an SQLite database file, created if missing;
//   - "postgres://..." or "postgresql://...": a PostgreSQL database (its
//     URL, with sslmode and the like as query parameters).
//
// The schema is brought up to date before Open returns.
func Open(ctx context.Context, spec string) (Store, error) {
	switch kind, target, err := Parse(spec); {
	case err != nil:
		return nil, err
	case kind == "memory":
		return NewMemory(), nil
	case kind == "sqlite":
		return OpenSQLite(ctx, target)
	default:
		return OpenPostgres(ctx, target)
	}
}

// Parse splits a spec into its kind (memory, sqlite or postgres) and its
// target (a path or a URL), or says what is wrong with it.
func Parse(spec string) (kind, target string, err error) {
	switch {
	case spec == "memory":
		return "memory", "", nil
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		if path == "" {
			return "", "", fmt.Errorf("store %q: no file after sqlite: (%s)", spec, specHelp)
		}
		return "sqlite", path, nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return "postgres", spec, nil
	case spec == "":
		return "", "", fmt.Errorf("store: none given (%s)", specHelp)
	}
	return "", "", fmt.Errorf("store %q is not one this server knows (%s)", config.RedactURL(spec), specHelp)
}

// Redact hides a password in a store spec, for logs.
func Redact(spec string) string { return config.RedactURL(spec) }
