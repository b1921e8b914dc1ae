package trajectory

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// packets is a pair of connected packet sockets: each write to out is one
// read from in. They are non-blocking, so that reads from in keep their
// deadlines.
func packets(t *testing.T) (out, in *os.File) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, in = os.NewFile(uintptr(fds[0]), "out"), os.NewFile(uintptr(fds[1]), "in")
	t.Cleanup(func() { in.Close() })
	return out, in
}

// TestLinesGoOutInBatches: the lines of a served task reach the file in a
// few writes, each ending with the end of a step, an agent or the session
// (the file here is a packet socket, which keeps each write apart), and
// together they are the whole trajectory.
func TestLinesGoOutInBatches(t *testing.T) {
	tr, err := Read("testdata/served-task")
	if err != nil {
		t.Fatal(err)
	}
	out, in := packets(t)
	w := newWriter(t.TempDir(), out, Options{})
	w.flushAfter = time.Hour // no write but at the ends
	w.writeGap = 0           // each end written at once
	ends := 0
	for _, e := range tr.Events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
		if flushes(e.Type) {
			ends++
		}
		runtime.Gosched() // give the background writer its chance
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var all []byte
	writes := 0
	buf := make([]byte, 1<<20)
	if err := in.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := in.Read(buf)
		if n == 0 || err != nil {
			break // out is closed: every write was read
		}
		writes++
		got := bytes.TrimSuffix(buf[:n], []byte("\n"))
		last := got[bytes.LastIndexByte(got, '\n')+1:]
		var e Event
		if err := json.Unmarshal(last, &e); err != nil || !flushes(e.Type) {
			t.Errorf("write %d ends with a %s line, not the end of a step, agent or session (%v)", writes, e.Type, err)
		}
		all = append(all, buf[:n]...)
	}
	if lines := bytes.Count(all, []byte("\n")); lines != len(tr.Events) || writes == 0 || writes > ends {
		t.Fatalf("%d lines in %d writes; want %d lines in at most %d", lines, writes, len(tr.Events), ends)
	}
	back, err := Decode(bytes.NewReader(all), "")
	if err != nil || len(back) != len(tr.Events) {
		t.Fatalf("what was written reads back as %d events: %v", len(back), err)
	}
}

// TestAWaitingLineGoesOutSoon: a line that no end follows (a step whose
// model call takes minutes) is written FlushAfter after it came, without
// Flush or Close.
func TestAWaitingLineGoesOutSoon(t *testing.T) {
	out, in := packets(t)
	w := newWriter(t.TempDir(), out, Options{})
	defer w.Close()
	w.flushAfter = 10 * time.Millisecond
	for _, e := range []Event{{Type: TypeSessionStart, Session: &Session{Format: Format}}, {Type: TypeAgentStart, Agent: "host", Role: "host"}} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, err := in.Read(buf)
	if err != nil || bytes.Count(buf[:n], []byte("\n")) != 2 {
		t.Fatalf("read %q, %v; want both lines in one write", buf[:n], err)
	}
}

// TestAWriteEndsAtTheEndOfAStep: lines written after the end of a step,
// before the background writer took it, wait for the next end (here the
// session's): the first write ends with the step.
func TestAWriteEndsAtTheEndOfAStep(t *testing.T) {
	out, in := packets(t)
	w := newWriter(t.TempDir(), out, Options{})
	w.q.started = true // the test starts it below
	w.flushAfter, w.writeGap = time.Hour, 0
	for _, e := range []Event{{Type: TypeStep, Agent: "host", Step: 1}, {Type: TypeTransition, Agent: "host", From: "CONTINUE", To: "FINISH"}} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	go w.background() // it finds both lines waiting
	if err := in.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, err := in.Read(buf)
	if err != nil || bytes.Count(buf[:n], []byte("\n")) != 1 || !bytes.Contains(buf[:n], []byte(`"type":"step"`)) {
		t.Fatalf("the first write is %q (%v), want the step's line alone", buf[:n], err)
	}
	if err := w.Write(Event{Type: TypeSessionEnd, End: &End{Status: "FINISH"}}); err != nil {
		t.Fatal(err)
	}
	n, err = in.Read(buf)
	if err != nil || bytes.Count(buf[:n], []byte("\n")) != 2 || !bytes.HasSuffix(buf[:n], []byte("}}\n")) {
		t.Fatalf("the second write is %q (%v), want the transition and the session's end", buf[:n], err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEndsCloseTogetherShareAWrite: a served task whose steps all end
// within WriteGap of the file's creation (a trivial task recorded in a
// few milliseconds) reaches the file in one write, at Close, where each
// end would otherwise have had a write of its own.
func TestEndsCloseTogetherShareAWrite(t *testing.T) {
	tr, err := Read("testdata/served-task")
	if err != nil {
		t.Fatal(err)
	}
	out, in := packets(t)
	w := newWriter(t.TempDir(), out, Options{})
	w.flushAfter, w.writeGap = time.Hour, time.Hour
	for _, e := range tr.Events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched() // give the background writer its chance
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var writes [][]byte
	for {
		n, err := in.Read(buf)
		if n == 0 || err != nil {
			break // out is closed: every write was read
		}
		writes = append(writes, append([]byte(nil), buf[:n]...))
	}
	if len(writes) != 1 || bytes.Count(writes[0], []byte("\n")) != len(tr.Events) {
		t.Fatalf("%d writes; want the %d lines in one", len(writes), len(tr.Events))
	}
}

// TestAnEndAfterAGapIsWrittenAtOnce: an end that comes WriteGap or more
// after the last write is written at once, without Flush or Close (a
// step that waited for its model); one that comes sooner waits, and goes
// out with what follows it.
func TestAnEndAfterAGapIsWrittenAtOnce(t *testing.T) {
	out, in := packets(t)
	w := newWriter(t.TempDir(), out, Options{})
	w.flushAfter, w.writeGap = time.Hour, time.Hour
	w.q.mu.Lock()
	w.q.wrote = time.Now().Add(-2 * time.Hour) // the last write was long ago
	w.q.mu.Unlock()
	if err := in.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	for _, e := range []Event{{Type: TypeSessionStart, Session: &Session{Format: Format}}, {Type: TypeStep, Agent: "host", Step: 1}} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	n, err := in.Read(buf)
	if err != nil || bytes.Count(buf[:n], []byte("\n")) != 2 || !bytes.Contains(buf[:n], []byte(`"type":"step"`)) {
		t.Fatalf("the first write is %q (%v), want the session's start and the step", buf[:n], err)
	}
	// The next step ends just after that write: it waits, and goes out
	// with the session's end, in one write.
	for _, e := range []Event{{Type: TypeStep, Agent: "host", Step: 2}, {Type: TypeSessionEnd, End: &End{Status: "FINISH"}}} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = in.Read(buf)
	if err != nil || bytes.Count(buf[:n], []byte("\n")) != 2 || !bytes.Contains(buf[:n], []byte(`"step":2`)) {
		t.Fatalf("the second write is %q (%v), want the second step and the session's end", buf[:n], err)
	}
}

// TestAWaitingEndGoesOutWithTheNextLine: an end that came within
// WriteGap of the last write is written with the first line recorded
// once WriteGap has passed, without Flush or Close, and the write ends
// with it (the new line waits for the next end).
func TestAWaitingEndGoesOutWithTheNextLine(t *testing.T) {
	out, in := packets(t)
	w := newWriter(t.TempDir(), out, Options{})
	defer w.Close()
	w.flushAfter, w.writeGap = time.Hour, time.Hour
	for _, e := range []Event{{Type: TypeSessionStart, Session: &Session{Format: Format}}, {Type: TypeStep, Agent: "host", Step: 1}} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.q.mu.Lock()
	w.q.wrote = time.Now().Add(-2 * time.Hour) // WriteGap has passed
	w.q.mu.Unlock()
	if err := w.Write(Event{Type: TypeAgentStart, Agent: "app:x#1", Role: "app"}); err != nil {
		t.Fatal(err)
	}
	if err := in.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, err := in.Read(buf)
	if err != nil || bytes.Count(buf[:n], []byte("\n")) != 2 || !bytes.HasSuffix(buf[:n], []byte("\"step\":1}\n")) {
		t.Fatalf("read %q, %v; want the session's start and the step in one write", buf[:n], err)
	}
}
