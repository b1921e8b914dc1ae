package trajectory

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/saucerhq/saucer/internal/cputime"
)

// BenchmarkServedTaskWriter writes the 25 events of a trivial served task
// (testdata/served-task, recorded by server's BenchmarkServedTaskRecording)
// into a new trajectory, as a server records each task: Create, the
// events one by one, Close. "events" leaves out making the directory and
// the file (the lines go to /dev/null).
func BenchmarkServedTaskWriter(b *testing.B) {
	t, err := Read("testdata/served-task")
	if err != nil {
		b.Fatal(err)
	}
	red, err := NewRedactor([]string{"sk-test-secret-value"}, DefaultPatterns())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("task", func(b *testing.B) {
		dir := b.TempDir()
		b.ReportAllocs()
		n := 0
		cpu := cputime.Process()
		for b.Loop() {
			n++
			w, err := Create(filepath.Join(dir, strconv.Itoa(n)), Options{Redactor: red})
			if err != nil {
				b.Fatal(err)
			}
			writeAll(b, w, t.Events)
		}
		b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-us/task")
	})
	b.Run("events", func(b *testing.B) {
		dir := b.TempDir()
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			writeAll(b, newWriter(dir, f, Options{Redactor: red}), t.Events)
		}
		b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-us/task")
	})
}

// writeAll writes events to w, as a server records a task, and closes it.
func writeAll(b *testing.B, w *Writer, events []Event) {
	b.Helper()
	for _, e := range events {
		if err := w.Write(e); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
