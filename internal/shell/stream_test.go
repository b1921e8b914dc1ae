package shell

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// wantLines is what the stream must make of out: \n, \r\n and \r each
// end a line; the latest tailLines lines, cut; the line left unfinished.
func wantLines(out string) (count int, tail []string, partial string) {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	out = strings.ReplaceAll(out, "\r", "\n")
	lines := strings.Split(out, "\n")
	partial = lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	for _, l := range lines[max(0, len(lines)-tailLines):] {
		if len(l) > 4*lineBytes {
			l = l[:4*lineBytes]
		}
		tail = append(tail, cutLine(l))
	}
	if len(partial) > 4*lineBytes {
		partial = partial[:4*lineBytes]
	}
	return len(lines), tail, partial
}

// The stream counts and keeps lines the same whichever way the output is
// cut into writes, with or without carriage returns (output without one
// takes a path that copies only the latest lines).
func TestLineStreamCountsEveryWayItIsCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "\n", "\r", "\r\n", "line\n", strings.Repeat("x", 900), "é", ""}
	for trial := range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		out := b.String()
		if trial%2 == 0 {
			out = strings.ReplaceAll(out, "\r", "") // the fast path alone
		}
		ls := newLineStream(context.Background(), time.Hour)
		for rest := out; rest != ""; {
			n := min(len(rest), 1+rng.IntN(12))
			ls.write(0, []byte(rest[:n]))
			rest = rest[n:]
		}
		count, tail, partial := wantLines(out)
		ls.mu.Lock()
		got, gotTail, gotPartial := ls.lines, slices.Clone(ls.tail), string(ls.partial[0])
		if ls.timer != nil {
			ls.timer.Stop()
		}
		ls.mu.Unlock()
		if got != count || !slices.Equal(gotTail, tail) || gotPartial != partial {
			t.Fatalf("%q:\n got %d lines, tail %q, partial %q\nwant %d lines, tail %q, partial %q",
				out, got, gotTail, gotPartial, count, tail, partial)
		}
	}
}

// BenchmarkLineStream: a command printing 500,000 short lines (3.4 MB, as
// seq 1 500000 does) in 32 KiB writes. "lf" ends its lines with \n (the
// path that copies only the latest lines); "crlf", the baseline, with
// \r\n, which goes byte by byte.
func BenchmarkLineStream(b *testing.B) {
	for _, end := range []string{"\n", "\r\n"} {
		name := map[string]string{"\n": "lf", "\r\n": "crlf"}[end]
		b.Run(name, func(b *testing.B) {
			var sb strings.Builder
			for range 500000 {
				sb.WriteString("777777" + end)
			}
			out := []byte(sb.String())
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				ls := newLineStream(context.Background(), time.Hour)
				for p := out; len(p) > 0; {
					n := min(len(p), 32<<10)
					ls.write(0, p[:n])
					p = p[n:]
				}
				ls.mu.Lock()
				if ls.lines != 500000 {
					b.Fatalf("%d lines", ls.lines)
				}
				if ls.timer != nil {
					ls.timer.Stop()
				}
				ls.mu.Unlock()
			}
		})
	}
}
