package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// interrupts turn SIGINT (Ctrl-C) and SIGTERM into a stop in stages. The
// first ends Stop, at once and saying so: a session stops between
// commands (the one running goes on to its end) and a prompt waiting at
// the terminal gives up. The second ends Abort: the command in progress
// is cancelled (the shell kills it). A third exits at once. The process
// then exits 130 after SIGINT, 143 after SIGTERM (128 + the signal).
type interrupts struct {
	// Stop ends at the first signal, Abort at the second.
	Stop, Abort context.Context

	stop, abort context.CancelCauseFunc
	w           io.Writer
	what        string // what stops, for the messages: "the run", "the trials"
	sig         atomic.Value
	ch          chan os.Signal
	done        chan struct{}
}

// errInterrupted is the cause of Stop and Abort.
var errInterrupted = errors.New("interrupted")

// watchInterrupts starts watching for SIGINT and SIGTERM until close;
// messages go to w.
func watchInterrupts(parent context.Context, w io.Writer, what string) *interrupts {
	in := &interrupts{w: w, what: what, ch: make(chan os.Signal, 3), done: make(chan struct{})}
	in.Stop, in.stop = context.WithCancelCause(parent)
	in.Abort, in.abort = context.WithCancelCause(context.WithoutCancel(parent))
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go in.watch()
	return in
}

func (in *interrupts) watch() {
	for n := 1; ; n++ {
		var sig os.Signal
		select {
		case sig = <-in.ch:
		case <-in.done:
			return
		}
		again := "press Ctrl-C again"
		if sig == syscall.SIGTERM {
			again = "send SIGTERM again"
		}
		switch n {
		case 1:
			in.sig.Store(sig)
			fmt.Fprintf(in.w, "\nsaucer: %s: stopping %s after the current command (%s to stop the command now)\n", name(sig), in.what, again)
			in.stop(fmt.Errorf("%w (%s)", errInterrupted, name(sig)))
		case 2:
			fmt.Fprintf(in.w, "\nsaucer: stopping the current command now (%s to exit at once)\n", again)
			in.abort(fmt.Errorf("%w (%s, twice)", errInterrupted, name(sig)))
		default:
			fmt.Fprintf(in.w, "\nsaucer: exiting now\n")
			os.Exit(in.code())
		}
	}
}

func name(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "terminated"
	}
	return "interrupted"
}

// interrupted reports whether a signal came.
func (in *interrupts) interrupted() bool { return in.sig.Load() != nil }

// code is the exit code for the signal that came: 128 + its number (130
// for SIGINT, 143 for SIGTERM), or 0 when none came.
func (in *interrupts) code() int {
	sig, _ := in.sig.Load().(os.Signal)
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 0
}

// close stops watching: signals act as by default again.
func (in *interrupts) close() {
	signal.Stop(in.ch)
	close(in.done)
	in.stop(nil)
	in.abort(nil)
}

// lineReader reads the lines typed at the terminal's prompts. A read of a
// terminal cannot be interrupted, so one goroutine reads, and a prompt
// waits for the next line or for its context, whichever comes first: at
// Ctrl-C it gives up at once instead of waiting for Enter.
type lineReader struct {
	in    io.Reader
	once  sync.Once
	lines chan string
	err   error // set before lines is closed
}

func newLineReader(in io.Reader) *lineReader {
	return &lineReader{in: in, lines: make(chan string)}
}

func (r *lineReader) read() {
	sc := bufio.NewScanner(r.in)
	for sc.Scan() {
		r.lines <- sc.Text()
	}
	r.err = sc.Err()
	if r.err == nil {
		r.err = io.EOF
	}
	close(r.lines)
}

// next returns the next line typed, or ctx's cause when it ends first,
// or the input's end (io.EOF).
func (r *lineReader) next(ctx context.Context) (string, error) {
	r.once.Do(func() { go r.read() })
	select {
	case line, ok := <-r.lines:
		if !ok {
			return "", r.err
		}
		return line, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
