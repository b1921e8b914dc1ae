package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/tools"
)

// gateFIFO is a named pipe a command reads a line from to go on; the test
// writes the lines.
func gateFIFO(t *testing.T) (path string, release func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read and write: the command's open for reading never waits.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, func() { f.WriteString("go\n") }
}

// reports collects a call's progress reports and hands each to a channel.
type reports struct {
	mu  sync.Mutex
	all []tools.Progress
	ch  chan tools.Progress
}

func newReports() *reports { return &reports{ch: make(chan tools.Progress, 1000)} }

func (r *reports) add(p tools.Progress) {
	r.mu.Lock()
	r.all = append(r.all, p)
	r.mu.Unlock()
	r.ch <- p
}

func (r *reports) next(t *testing.T) tools.Progress {
	t.Helper()
	select {
	case p := <-r.ch:
		return p
	case <-time.After(waitLimit):
		t.Fatal("no progress report")
		return tools.Progress{}
	}
}

func callTool(ctx context.Context, srv *tools.Server, args map[string]any, progress func(tools.Progress)) <-chan tools.Result {
	ch := make(chan tools.Result, 1)
	b, _ := json.Marshal(args)
	go func() { ch <- srv.Tool("execute_command").Call(ctx, b, progress) }()
	return ch
}

// A running command's output streams as progress: the number of lines so
// far and the latest lines, stdout and stderr alike, a carriage return
// ending a line too; the last report, before the result, shows the end.
func TestOutputStreamsAsProgress(t *testing.T) {
	gate, release := gateFIFO(t)
	srv := New(Options{ReportEvery: time.Millisecond})
	if got := srv.Tool("execute_command").Annotations.Streams; !slices.Equal(got, []string{StreamOutput}) {
		t.Errorf("declared streams %q", got)
	}
	rep := newReports()
	script := `for i in 1 2 3 4 5 6; do echo "line $i"; read x < "$1"; done; echo "to stderr" >&2; read x < "$1"; printf 'bar 50%%\rbar 100%%\n'`
	res := callTool(context.Background(), srv, map[string]any{"command": script, "args": []string{gate}}, rep.add)
	for i := 1; i <= 6; i++ {
		p := rep.next(t)
		lines := strings.Split(p.Message, "\n")
		if p.Progress != float64(i) || lines[len(lines)-1] != "line "+string(rune('0'+i)) || len(lines) != min(i, tailLines) {
			t.Fatalf("report %d: %+v", i, p)
		}
		release()
	}
	if p := rep.next(t); p.Progress != 7 || !strings.HasSuffix(p.Message, "line 6\nto stderr") {
		t.Errorf("stderr line: %+v", p)
	}
	release()
	r := <-res
	if r.IsError || !strings.Contains(r.Text(), `bar 100%`) {
		t.Fatalf("result %+v", r)
	}
	last := rep.next(t)
	if last.Progress != 9 || !strings.HasSuffix(last.Message, "to stderr\nbar 50%\nbar 100%") {
		t.Errorf("last report %+v", last)
	}
	select {
	case p := <-rep.ch:
		t.Errorf("a report after the last: %+v", p)
	default:
	}
}

// A flood of output is reported at most once per interval, never line by
// line.
func TestOutputReportsAreThrottled(t *testing.T) {
	gate, release := gateFIFO(t)
	const every = 20 * time.Millisecond
	srv := New(Options{ReportEvery: every})
	rep := newReports()
	start := time.Now()
	res := callTool(context.Background(), srv, map[string]any{"command": `seq 1 20000; read x < "$1"; seq 20001 40000`, "args": []string{gate}}, rep.add)
	rep.next(t) // the first half streams
	release()
	if r := <-res; r.IsError {
		t.Fatalf("result %+v", r)
	}
	elapsed := time.Since(start)
	rep.mu.Lock()
	defer rep.mu.Unlock()
	n := len(rep.all)
	if limit := int(elapsed/every) + 2; n > limit || n < 2 {
		t.Errorf("%d reports in %s; at most %d (one per %s, plus the last)", n, elapsed, limit, every)
	}
	for i := 1; i < n; i++ {
		if rep.all[i].Progress <= rep.all[i-1].Progress {
			t.Errorf("progress went from %v to %v", rep.all[i-1].Progress, rep.all[i].Progress)
		}
	}
	if last := rep.all[n-1]; last.Progress != 40000 || !strings.HasSuffix(last.Message, "39999\n40000") {
		t.Errorf("last report %+v", last)
	}
}

// A command that ends within the interval reports nothing: its result has
// its output.
func TestShortCommandReportsNothing(t *testing.T) {
	srv := New(Options{ReportEvery: time.Hour})
	rep := newReports()
	r := <-callTool(context.Background(), srv, map[string]any{"command": "seq 1 100"}, rep.add)
	if r.IsError {
		t.Fatalf("result %+v", r)
	}
	if len(rep.all) != 0 {
		t.Errorf("reports %+v", rep.all)
	}
}

func TestCutLine(t *testing.T) {
	long := strings.Repeat("é", lineBytes) // two bytes each
	got := cutLine(long)
	if !strings.HasSuffix(got, "…") || len(got) > lineBytes+len("…") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("cut %q", got)
	}
	if got := cutLine("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}
