package trajectory

import (
	"bufio"
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
}

// Writer appends events to a trajectory directory. It numbers them, stamps
// them, redacts secrets, moves large values into artifacts and writes each
// event as one line, flushed at once so that an interrupted session keeps
// everything up to its last event. Safe for concurrent use.
type Writer struct {
	mu        sync.Mutex
	dir       string
	f         *os.File
	buf       *bufio.Writer
	seq       int
	threshold int
	redactor  *Redactor
	store     store
	now       func() time.Time
	closed    bool
	// good is the size of the file up to its last whole line; failed is
	// the write error that stopped the writer.
	good   int64
	failed error
	// recent are the last model calls' full requests, which later
	// requests are written as continuations of.
	recent []recentCall
}

type recentCall struct {
	n   int
	req llm.Request
}

// recentCalls is how many earlier requests a new one is compared with:
// enough for a host agent and its app agents taking turns.
const recentCalls = 8

// Create makes dir (and dir/artifacts) and starts its trajectory.jsonl. It
// refuses a directory that already holds a trajectory.
func Create(dir string, opts Options) (*Writer, error) {
	if err := os.MkdirAll(filepath.Join(dir, ArtifactsDir), 0o755); err != nil {
		return nil, fmt.Errorf("trajectory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("trajectory: %s already holds a trajectory; record into a new directory", dir)
		}
		return nil, fmt.Errorf("trajectory: %w", err)
	}
	w := &Writer{dir: dir, f: f, buf: bufio.NewWriterSize(f, 64<<10), threshold: opts.ArtifactThreshold,
		redactor: opts.Redactor, store: store{dir: dir, written: map[string]bool{}}, now: opts.Now}
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
	return w, nil
}

// Dir is the trajectory's directory.
func (w *Writer) Dir() string { return w.dir }

// Write numbers e (Seq), stamps it (Time, when zero) and appends it. The
// caller's event is not changed.
func (w *Writer) Write(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("trajectory: write after close")
	}
	if w.failed != nil {
		return w.failed
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
	line, err := json.Marshal(e)
	if err != nil {
		w.seq--
		return fmt.Errorf("trajectory: encode %s event: %w", e.Type, err)
	}
	// A line shorter than the threshold cannot hold a value that long.
	if len(line) >= w.threshold {
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
	}
	if line, err = w.redactor.JSON(line); err != nil {
		w.seq--
		return fmt.Errorf("trajectory: redact %s event: %w", e.Type, err)
	}
	w.buf.Write(line)
	w.buf.WriteByte('\n')
	if err := w.buf.Flush(); err != nil {
		// Cut the part of the line that made it to the disk, so that what
		// was written stays a readable trajectory; write nothing more.
		w.buf.Reset(w.f)
		w.f.Truncate(w.good)
		w.failed = fmt.Errorf("trajectory: write %s: %w (the recording keeps its first %d events)", filepath.Join(w.dir, EventsFile), err, w.seq-1)
		return w.failed
	}
	w.good += int64(len(line) + 1)
	return nil
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

// Close flushes and closes the file. Closing twice is harmless.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.buf.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
