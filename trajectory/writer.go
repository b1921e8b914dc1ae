package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/saucerhq/saucer/llm"
)

// DefaultArtifactThreshold is the size from which a value moves into an
// artifact when Options.ArtifactThreshold is zero.
const DefaultArtifactThreshold = 4096

// Options configure a Writer. The zero value is usable.
type Options struct {
	// Redactor removes secrets before anything is written; nil redacts
	// only what DefaultPatterns match.
	Redactor *Redactor
	// ArtifactThreshold is the size in bytes from which message text, image
	// data, tool-call arguments, command parameters and results move into
	// artifacts; 0 means DefaultArtifactThreshold, a negative value never.
	ArtifactThreshold int
	// Now stamps events that have no time; nil means time.Now.
	Now func() time.Time
	// OnError, when set, is told of the first write that fails (a full
	// disk, say), once, as soon as the background writer meets it.
	OnError func(error)
}

// MaxQueued is how many bytes of lines and artifacts may wait for the
// disk: Write waits while more do.
const MaxQueued = 32 << 20

// Lines wait in memory and go to disk together, in one write: when a step,
// an agent or the session ends, when FlushBytes of lines and artifacts
// wait, and at the latest FlushAfter after the first of them was written.
// Ends that come close together share a write: an end is written at once
// when the last write (or the file's creation) was WriteGap ago or more;
// one that comes sooner waits for the first line recorded once WriteGap
// has passed, which has the lines up to the last end written, or else for
// FlushAfter (each write still ends with an end, unless it is FlushAfter's,
// Flush's or Close's). A step that waits for a model or a device is
// written when it ends, as before; a trivial task's 25 lines, recorded in
// a few milliseconds, cost one write, at the session's end, and no
// goroutine (see wake). Nothing is fsynced: a crash loses what waits, as
// it always lost the lines the background writer had not yet written.
const (
	FlushBytes = 64 << 10
	FlushAfter = 100 * time.Millisecond
	WriteGap   = 50 * time.Millisecond
)

// Writer appends events to a trajectory directory. It numbers them, stamps
// them, redacts secrets, moves large values into artifacts and hands each
// event's line to a background writer, which puts the artifacts a line
// refers to on disk before the line, and the lines that wait together in
// one write (see FlushAfter): a session does not wait for the disk (unless
// more than MaxQueued bytes wait), and an interrupted session keeps every
// event written before it stopped (Close writes what waits). The
// background writer starts when a write is first due; when none was
// before Close, Close writes what waits itself. Safe for concurrent use.
type Writer struct {
	mu        sync.Mutex // the encoding state below
	dir       string
	seq       int
	threshold int
	redactor  *Redactor
	store     store
	now       func() time.Time
	closed    bool
	// recent are the last model calls' full requests, which later
	// requests are written as continuations of.
	recent []recentCall
	// line encodes the events, one after the other.
	line *eventEncoder
	// flushAfter is FlushAfter and writeGap WriteGap (a test changes
	// them).
	flushAfter, writeGap time.Duration

	q     queue
	f     *os.File
	done  chan struct{} // the background writer has stopped
	onErr func(error)
}

// queue is what waits for the background writer.
type queue struct {
	mu   sync.Mutex
	cond sync.Cond
	// lines are the waiting lines, each ending in a newline; items say
	// where each ends and which artifacts it needs before it.
	lines []byte
	items []queued
	// spare is the buffer the background writer wrote last, given back
	// for the next lines.
	spare []byte
	// bytes counts what waits or is being written: lines and artifacts.
	bytes int
	// due asks the background writer to write the first due items (the
	// lines up to the end of a step, an agent or the session, or all
	// that wait when FlushBytes do, or when timer fires: FlushAfter after
	// a line came to wait alone, armed). Lines after them wait on: a
	// write always ends with the end of a step, an agent or the session
	// unless it is one of those.
	due int
	// ended is how many items end with the last end that waits (0: none):
	// it came within WriteGap of the last write.
	ended int
	// wrote is when the last write was taken (at first, the file's
	// creation).
	wrote   time.Time
	timer   *time.Timer
	armed   bool
	closing bool
	// started: the background writer runs, or Close runs it.
	started bool
	// failed is the write error that stopped the writer.
	failed error
}

// queued is one event line (it ends at offset end of queue.lines) and
// the new artifacts it refers to.
type queued struct {
	seq       int
	end       int
	artifacts []artifact
}

// Writers share their encoders through lineEncoders, and the buffers
// lines wait in through lineBuffers, so that a task's recording does not
// grow new ones.
var (
	lineEncoders = sync.Pool{New: func() any { return &eventEncoder{} }}
	lineBuffers  sync.Pool // of *[]byte, cap at most 2*FlushBytes
)

// flushes are the event types after which what waits is written at once:
// the ends of steps, agents and sessions.
func flushes(t Type) bool {
	return t == TypeStep || t == TypeAgentEnd || t == TypeSessionEnd
}

type recentCall struct {
	n   int
	req llm.Request
}

// recentCalls is how many earlier requests a new one is compared with:
// enough for a host agent and its app agents taking turns.
const recentCalls = 8

// Create makes dir and starts its trajectory.jsonl (dir/artifacts is made
// with the first artifact). It refuses a directory that already holds a
// trajectory.
func Create(dir string, opts Options) (*Writer, error) {
	// One mkdir for the usual case, a new directory in an existing one.
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("trajectory: %w", err)
		}
	}
	f, err := createFile(filepath.Join(dir, EventsFile))
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("trajectory: %s already holds a trajectory; record into a new directory", dir)
		}
		return nil, fmt.Errorf("trajectory: %w", err)
	}
	return newWriter(dir, f, opts), nil
}

// newWriter is a writer of events into f, the trajectory file of dir. Its
// background writer starts when a write is first due (see wake).
func newWriter(dir string, f *os.File, opts Options) *Writer {
	w := &Writer{dir: dir, f: f, threshold: opts.ArtifactThreshold, redactor: opts.Redactor,
		store: store{written: map[string]bool{}}, now: opts.Now, done: make(chan struct{}), onErr: opts.OnError}
	w.line = lineEncoders.Get().(*eventEncoder)
	w.flushAfter, w.writeGap = FlushAfter, WriteGap
	w.q.cond.L = &w.q.mu
	w.q.wrote = time.Now()
	if w.threshold == 0 {
		w.threshold = DefaultArtifactThreshold
	}
	if w.threshold < 0 {
		w.threshold = int(^uint(0) >> 1)
	}
	if w.redactor == nil {
		w.redactor, _ = NewRedactor(nil, DefaultPatterns())
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// Dir is the trajectory's directory.
func (w *Writer) Dir() string { return w.dir }

// Err is the write error that stopped the writer, if any.
func (w *Writer) Err() error {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	return w.q.failed
}

// Write numbers e (Seq), stamps it (Time, when zero) and queues its line.
// The caller's event is not changed. It returns the error that stopped
// the background writer, if one has (that write's event and those after
// it are not in the recording).
func (w *Writer) Write(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("trajectory: write after close")
	}
	if err := w.Err(); err != nil {
		return err
	}
	if e.Type == "" {
		return errors.New("trajectory: event without a type")
	}
	w.seq++
	e.Seq = w.seq
	if e.Time.IsZero() {
		e.Time = w.now()
	}
	e.Time = e.Time.UTC()
	if e.Type == TypeModelCall && e.Call != nil {
		e.Call = w.delta(e.Call)
	}
	w.store.queued = nil
	enc := w.line
	if err := enc.encode(&e, w.threshold); err != nil {
		w.seq--
		return fmt.Errorf("trajectory: encode %s event: %w", e.Type, err)
	}
	line, long := enc.b, enc.long
	var err error
	// The encoder saw whether a value may be long enough to move into an
	// artifact; mayHoldLarge looks closer before the line is decoded.
	if enc.large && len(line) >= w.threshold && mayHoldLarge(line, w.threshold) {
		v, err := decodeGeneric(line)
		if err == nil {
			v, err = w.externalize(v)
		}
		if err == nil {
			line, err = json.Marshal(v)
		}
		if err != nil {
			w.seq--
			return fmt.Errorf("trajectory: %s event: %w", e.Type, err)
		}
		long = nil
	} else if len(enc.escaped) > 0 {
		// Raw values came with their escapes: a secret may hide behind
		// them (`sk-\u0041...`). The large values' path above wrote every
		// string again as json.Marshal does, which undoes such escapes.
		if red, changed := w.redactor.decodeEscaped(line, enc.escaped); changed {
			line, long = red, nil
		}
	}
	if line, err = w.redactor.jsonPassing(line, long, &enc.clean); err != nil {
		w.seq--
		return fmt.Errorf("trajectory: redact %s event: %w", e.Type, err)
	}
	w.enqueue(e.Seq, line, w.store.queued, flushes(e.Type))
	return nil
}

// enqueue hands a line and its artifacts to the background writer,
// waiting while more than MaxQueued bytes wait for the disk, and has what
// waits written now (flush, or FlushBytes wait) or within FlushAfter.
func (w *Writer) enqueue(seq int, line []byte, artifacts []artifact, flush bool) {
	size := len(line) + 1
	for _, a := range artifacts {
		size += len(a.data)
	}
	q := &w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.bytes > 0 && q.bytes+size > MaxQueued && q.failed == nil {
		q.cond.Wait()
	}
	if q.failed != nil {
		return // the write error is returned by the next Write and Close
	}
	if q.lines == nil {
		q.lines, q.spare = q.spare[:0], nil
		if q.lines == nil {
			if p, ok := lineBuffers.Get().(*[]byte); ok {
				q.lines = (*p)[:0]
			}
		}
	}
	q.lines = append(append(q.lines, line...), '\n')
	if q.items == nil {
		q.items = make([]queued, 0, 32) // a trivial task's lines, at once
	}
	q.items = append(q.items, queued{seq: seq, end: len(q.lines), artifacts: artifacts})
	q.bytes += size
	if q.bytes >= FlushBytes {
		q.due = len(q.items)
		w.wake()
		return
	}
	if flush {
		q.ended = len(q.items)
	}
	if q.ended > q.due && time.Since(q.wrote) >= w.writeGap {
		q.due = q.ended
		w.wake()
	} else if !q.armed {
		w.arm()
	}
}

// wake has the background writer look at what is due, starting it if it
// has not started: a session whose lines all wait until Close (a trivial
// task, see WriteGap) has them written by Close, with no goroutine.
// Called with q.mu held.
func (w *Writer) wake() {
	q := &w.q
	if q.started {
		q.cond.Broadcast()
		return
	}
	q.started = true
	go w.background()
}

// arm starts the timer that has what waits written within FlushAfter.
// It is set once for lines that wait, not moved for each end: moving a
// timer earlier wakes the runtime's poller, which costs more than a
// write.
func (w *Writer) arm() {
	q := &w.q
	q.armed = true
	if q.timer == nil {
		q.timer = time.AfterFunc(w.flushAfter, w.flushSoon)
	} else {
		q.timer.Reset(w.flushAfter)
	}
}

// flushSoon has the background writer write what waits.
func (w *Writer) flushSoon() {
	q := &w.q
	q.mu.Lock()
	q.due = len(q.items)
	q.armed = false
	w.wake()
	q.mu.Unlock()
}

// background writes what is queued when it is due: the artifacts first,
// then the lines in one write. After a failed write it cuts the part of a
// line that reached the disk, so that what was written stays a readable
// trajectory, and writes nothing more.
func (w *Writer) background() {
	defer close(w.done)
	q := &w.q
	defer func() {
		if b := q.spare; b != nil {
			q.spare = nil
			lineBuffers.Put(&b)
		}
	}()
	var good int64 // the file's size up to its last whole line
	made := false  // the artifacts directory exists
	for {
		q.mu.Lock()
		for q.due == 0 && !q.closing {
			q.cond.Wait()
		}
		items, buf := q.items, q.lines
		q.items, q.lines = nil, nil
		q.wrote = time.Now()
		if n := q.due; n < len(items) && !q.closing {
			// The lines after the due ones wait on, in a buffer of their
			// own (buf is written outside the lock).
			end := items[n-1].end
			for _, it := range items[n:] {
				it.end -= end
				q.items = append(q.items, it)
			}
			q.lines = append([]byte(nil), buf[end:]...)
			items, buf = items[:n], buf[:end]
			q.ended = max(q.ended-n, 0) // an end may wait among them
			if !q.armed {
				w.arm()
			}
		} else {
			q.ended = 0
			if q.armed {
				q.timer.Stop()
				q.armed = false
			}
		}
		q.due = 0
		q.mu.Unlock()
		if len(items) == 0 {
			return // closing, and all is written
		}
		var err error
		end := 0                    // the end in buf of the last line whose artifacts are written
		written := items[0].seq - 1 // the last event up to end
		for _, it := range items {
			for _, a := range it.artifacts {
				if err = writeArtifact(w.dir, a, &made); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
			end, written = it.end, it.seq
		}
		if end > 0 {
			if n, werr := w.f.Write(buf[:end]); werr != nil {
				// Keep the whole lines that reached the file (a file size
				// limit or a full disk can take part of the batch).
				err = werr
				end = bytes.LastIndexByte(buf[:n], '\n') + 1
				written = items[0].seq - 1
				for _, it := range items {
					if it.end > end {
						break
					}
					written = it.seq
				}
			}
			good += int64(end)
		}
		size := len(buf)
		for _, it := range items {
			for _, a := range it.artifacts {
				size += len(a.data)
			}
		}
		q.mu.Lock()
		q.bytes -= size
		if q.spare == nil && cap(buf) <= FlushBytes*2 {
			q.spare = buf[:0] // a buffer for the next lines, unless a large one
		}
		first := err != nil && q.failed == nil
		if first {
			w.f.Truncate(good)
			q.failed = fmt.Errorf("trajectory: write %s: %w (the recording keeps its first %d events)", filepath.Join(w.dir, EventsFile), err, written)
			q.items, q.lines, q.ended = nil, nil, 0
		}
		q.cond.Broadcast()
		failed := q.failed
		q.mu.Unlock()
		if first && w.onErr != nil {
			w.onErr(failed)
		}
		if failed != nil {
			// Nothing more is written; wait for Close.
			q.mu.Lock()
			for !q.closing {
				q.items, q.lines = nil, nil
				q.cond.Wait()
			}
			q.mu.Unlock()
			return
		}
	}
}

// Flush waits until every event written so far is on disk (or the writer
// has failed) and returns the writer's error.
func (w *Writer) Flush() error {
	q := &w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.bytes > 0 && q.failed == nil {
		if len(q.items) > 0 {
			q.due = len(q.items)
			w.wake()
		}
		q.cond.Wait()
	}
	return q.failed
}

// mayHoldLarge reports whether an encoded event line can hold a value that
// moves into an artifact: a string of threshold bytes or more (as encoded,
// which is never shorter than the string) under one of externalKeys, or a
// result or parameters object or array (which moves out when its encoding
// is that long). It saves decoding and encoding again the lines that hold
// no such value (a session_start with its config, say).
func mayHoldLarge(line []byte, threshold int) bool {
	// A structured value is re-encoded before it is measured: keys sorted,
	// numbers as written, so about as long as in line. Half the threshold
	// leaves room for what re-encoding can lengthen (1e21 is 1e+21).
	for _, key := range [][]byte{[]byte(`"result":`), []byte(`"parameters":`)} {
		for rest := line; ; {
			i := bytes.Index(rest, key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			if len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') && valueLen(rest) >= threshold/2 {
				return true
			}
		}
	}
	for i := 0; i < len(line); {
		q := bytes.IndexByte(line[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := closingQuote(line, start)
		i = end + 1
		if end-start-1 < threshold {
			continue
		}
		// A value: its key and a colon before it.
		before := line[:start]
		if !bytes.HasSuffix(before, []byte(`":`)) {
			continue
		}
		k := bytes.LastIndexByte(before[:len(before)-2], '"')
		if k >= 0 && externalKeys[string(before[k+1:len(before)-2])] {
			return true
		}
	}
	return false
}

// closingQuote is the index of the quote that closes the JSON string
// opened at line[open] (len(line) when it is not closed): the next quote
// that an even number of backslashes precede.
func closingQuote(line []byte, open int) int {
	for i := open + 1; i < len(line); {
		q := bytes.IndexByte(line[i:], '"')
		if q < 0 {
			break
		}
		i += q
		n := 0
		for j := i - 1; j > open && line[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
		i++
	}
	return len(line)
}

// valueLen is the length of the JSON object or array b starts with (all
// of b when it is not closed).
func valueLen(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(b)
}

// delta returns c written as a continuation of the recent request that
// shares most of its messages (and, if it can, its tools), and remembers
// c's full request.
func (w *Writer) delta(c *Call) *Call {
	full := c.Request
	var base *CallBase
	for _, r := range w.recent {
		k := 0
		for k < len(full.Messages) && k < len(r.req.Messages) && full.Messages[k].Equal(r.req.Messages[k]) {
			k++
		}
		sameTools := slices.EqualFunc(full.Tools, r.req.Tools, func(a, b llm.Tool) bool { return a.Equal(b) })
		if k > 0 && (base == nil || k > base.Messages || k == base.Messages && sameTools && !base.Tools) {
			base = &CallBase{Call: r.n, Messages: k, Tools: sameTools && len(full.Tools) > 0}
		}
	}
	w.recent = append(w.recent, recentCall{n: c.N, req: full})
	if len(w.recent) > recentCalls {
		w.recent = w.recent[1:]
	}
	if base == nil {
		return c
	}
	out := *c
	out.Base = base
	out.Request.Messages = full.Messages[base.Messages:]
	if base.Tools {
		out.Request.Tools = nil
	}
	return &out
}

// Close writes what waits, stops the background writer and closes the
// file. It returns the error that stopped the writer, if any. Closing
// twice is harmless.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	q := &w.q
	q.mu.Lock()
	q.closing = true
	if q.started {
		q.cond.Broadcast()
		q.mu.Unlock()
		<-w.done
	} else {
		// Nothing was due before: write what waits here.
		q.started = true
		q.mu.Unlock()
		w.background()
	}
	if cap(w.line.b) <= 2*FlushBytes {
		lineEncoders.Put(w.line)
	}
	w.line = nil
	err := w.Err()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
