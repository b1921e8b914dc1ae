package shell

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/saucerhq/saucer/tools"
)

// StreamOutput is the stream execute_command declares: while a command
// runs, its latest lines of output travel as progress reports, whose
// Progress is the number of lines written so far and whose Message is the
// latest lines, one per line.
const StreamOutput = "output"

// What a command's output stream reports, and how often.
const (
	// DefaultReportEvery is the least time between two reports of one
	// command; a command that ends sooner reports nothing (its result has
	// its output).
	DefaultReportEvery = 250 * time.Millisecond
	// tailLines is how many of the latest lines a report carries.
	tailLines = 5
	// lineBytes cuts each reported line.
	lineBytes = 200
)

// lineStream turns a command's output into throttled progress reports:
// at most one per interval, each with the number of lines so far and the
// latest lines. A carriage return ends a line too, so that a progress bar
// redrawn in place reports its latest state. It is safe for concurrent
// use: stdout and stderr write to it from goroutines of their own.
type lineStream struct {
	ctx      context.Context
	interval time.Duration
	start    time.Time

	mu       sync.Mutex
	partial  [2][]byte // the line being written, per stream
	afterCR  [2]bool   // the stream's last byte was \r (a \n next ends nothing)
	lines    int
	reported int // lines at the last report
	lastAt   time.Time
	tail     []string
	timer    *time.Timer
	closed   bool
}

func newLineStream(ctx context.Context, interval time.Duration) *lineStream {
	return &lineStream{ctx: ctx, interval: interval, start: time.Now()}
}

// streamWriter is the io.Writer of one stream (0 stdout, 1 stderr).
type streamWriter struct {
	ls *lineStream
	i  int
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.ls.write(w.i, p)
	return len(p), nil
}

func (ls *lineStream) write(i int, p []byte) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return
	}
	if len(p) == 0 {
		return
	}
	if bytes.IndexByte(p, '\r') < 0 {
		ls.writeLinesLocked(i, p)
		return
	}
	added := false
	for _, b := range p {
		switch {
		case b == '\n' && ls.afterCR[i]:
			ls.afterCR[i] = false
		case b == '\n' || b == '\r':
			ls.endLineLocked(i)
			ls.afterCR[i] = b == '\r'
			added = true
		default:
			ls.afterCR[i] = false
			if len(ls.partial[i]) < 4*lineBytes { // the rest of a huge line is not shown anyway
				ls.partial[i] = append(ls.partial[i], b)
			}
		}
	}
	if added {
		ls.scheduleLocked()
	}
}

// writeLinesLocked takes output without a carriage return, as the byte
// loop of write would, in time linear in its lines' ends alone: only the
// lines that can still be among the latest are copied (a command that
// prints megabytes must not spend its time here).
func (ls *lineStream) writeLinesLocked(i int, p []byte) {
	if ls.afterCR[i] && p[0] == '\n' {
		p = p[1:] // the \n of a \r\n ends nothing
	}
	ls.afterCR[i] = false
	n := bytes.Count(p, []byte{'\n'})
	if n == 0 {
		ls.appendPartialLocked(i, p)
		return
	}
	last := bytes.LastIndexByte(p, '\n')
	body, rest := p[:last], p[last+1:]
	if n > tailLines {
		// Lines before the latest tailLines are only counted.
		start := len(body)
		for range tailLines {
			start = bytes.LastIndexByte(body[:start], '\n')
		}
		ls.lines += n - tailLines
		ls.partial[i] = ls.partial[i][:0]
		body = body[start+1:]
	}
	for {
		line, more, found := bytes.Cut(body, []byte{'\n'})
		ls.appendPartialLocked(i, line)
		ls.endLineLocked(i)
		if !found {
			break
		}
		body = more
	}
	ls.appendPartialLocked(i, rest)
	ls.scheduleLocked()
}

// appendPartialLocked adds to the line being written, up to what a report
// could show of it.
func (ls *lineStream) appendPartialLocked(i int, b []byte) {
	if room := 4*lineBytes - len(ls.partial[i]); room > 0 {
		ls.partial[i] = append(ls.partial[i], b[:min(room, len(b))]...)
	}
}

func (ls *lineStream) endLineLocked(i int) {
	line := cutLine(string(ls.partial[i]))
	ls.partial[i] = ls.partial[i][:0]
	ls.lines++
	ls.tail = append(ls.tail, line)
	if len(ls.tail) > tailLines {
		ls.tail = ls.tail[len(ls.tail)-tailLines:]
	}
}

// scheduleLocked reports now if the last report is old enough, or sets a
// timer for when it will be. Nothing is reported before the command has
// run for an interval.
func (ls *lineStream) scheduleLocked() {
	if ls.timer != nil {
		return // a report is due already
	}
	since := ls.start
	if !ls.lastAt.IsZero() {
		since = ls.lastAt
	}
	wait := ls.interval - time.Since(since)
	if wait <= 0 {
		ls.reportLocked()
		return
	}
	ls.timer = time.AfterFunc(wait, func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		ls.timer = nil
		if !ls.closed {
			ls.reportLocked()
		}
	})
}

func (ls *lineStream) reportLocked() {
	if ls.lines == ls.reported {
		return
	}
	ls.reported, ls.lastAt = ls.lines, time.Now()
	tools.ReportProgress(ls.ctx, tools.Progress{Progress: float64(ls.lines), Message: strings.Join(ls.tail, "\n")})
}

// close stops the reports. A command that has reported sends its last
// lines, so that the last report shows how it ended (the result follows).
func (ls *lineStream) close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return
	}
	ls.closed = true
	if ls.timer != nil {
		ls.timer.Stop()
		ls.timer = nil
	}
	for i := range ls.partial {
		if len(ls.partial[i]) > 0 {
			ls.endLineLocked(i)
		}
	}
	if ls.reported > 0 {
		ls.reportLocked()
	}
}

// cutLine shortens a line for a report, on a character boundary.
func cutLine(s string) string {
	if len(s) <= lineBytes {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := lineBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "…"
}
