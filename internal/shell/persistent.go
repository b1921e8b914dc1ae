package shell

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// session is the one long-lived shell of a persistent server: every
// command is sourced into it, so cd, variables, functions and su carry over
// from one call to the next, as in a terminal (AgentBench's OS tasks rely
// on it). It is started at the first command and again after a command
// kills it (exit, a timeout).
//
// Each command reaches the shell's standard input as one eval of the
// command, quoted; a second line prints a marker with the exit status on
// stdout and stderr. The marker line is read by whichever shell reads
// input next: after `su - user`, the user's shell prints it, and the next
// command runs as that user. eval, not a file sourced with ".", so that
// the shell's messages name the shell ("bash: line 3: npm: command not
// found") and not a file of Saucer's, and $BASH_SOURCE is empty, as in a
// terminal. Its line numbers count every line the shell has read since
// it started, not the command's own (docs/rough_edges.md).
type session struct {
	opts Options
	env  []string

	mu       sync.Mutex // one command at a time
	cmd      *exec.Cmd
	group    *cmdGroup // the shell's cgroup, where there is one
	stdin    io.WriteCloser
	out, err *stream
	reads    []*os.File // the read ends of stdout and stderr
	marker   string
	exited   chan struct{}
	closed   bool
}

// stream collects what a shell writes on one of its outputs.
type stream struct {
	mu      sync.Mutex
	data    []byte
	eof     bool
	changed chan struct{} // closed at each write, then replaced
}

func newStream(r io.Reader) *stream {
	s := &stream{changed: make(chan struct{})}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			s.mu.Lock()
			s.data = append(s.data, buf[:n]...)
			if err != nil {
				s.eof = true
			}
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// cut looks for the end marker: it returns what came before it (and the
// rest after the marker line stays for the next command), the text between
// the marker and the line's end, and whether the marker was found. While
// not found it returns a channel that is closed at the next write.
func (s *stream) cut(marker []byte) (before, rest []byte, found, eof bool, wait <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := bytes.Index(s.data, marker)
	if i >= 0 {
		if end := bytes.IndexByte(s.data[i+len(marker):], '\n'); end >= 0 {
			before = bytes.Clone(s.data[:i])
			rest = bytes.Clone(s.data[i+len(marker) : i+len(marker)+end])
			s.data = s.data[i+len(marker)+end+1:]
			return before, rest, true, s.eof, nil
		}
	}
	return nil, nil, false, s.eof, s.changed
}

// drain takes everything collected.
func (s *stream) drain() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.data
	s.data = nil
	return d
}

func (p *session) start() error {
	var nonce [12]byte
	rand.Read(nonce[:])
	p.marker = "__saucer_done_" + hex.EncodeToString(nonce[:])
	// Its own process group and, on the host where the machine allows
	// it, its own cgroup: a timeout or Close kills the shell with
	// everything it started (background jobs, a user's shell after su,
	// children that left the group).
	var group *cmdGroup
	if p.opts.Jail == nil {
		group = newCmdGroup(newTag())
	}
	build := func(group *cmdGroup) *exec.Cmd {
		var cmd *exec.Cmd
		// $0, which names the shell in its messages, is its name rather
		// than its path, as in a terminal.
		name := filepath.Base(p.opts.Shell)
		if p.opts.Jail != nil {
			// Lives until killed: not bound to any one call's context.
			// The jail starts a path as it is given, so a shell that can
			// (bash) sets its own $0.
			argv := []string{p.opts.Shell}
			if name == "bash" {
				argv = []string{p.opts.Shell, "-c", `exec -a "$0" "$1"`, name, p.opts.Shell}
			}
			cmd = p.opts.Jail.Command(context.Background(), p.opts.Dir, p.env, argv...)
		} else {
			cmd = exec.Command(p.opts.Shell)
			cmd.Args[0] = name
			cmd.Dir = p.opts.Dir
			cmd.Env = p.env
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		dieWithParent(cmd.SysProcAttr)
		group.enter(cmd.SysProcAttr)
		return cmd
	}
	cmd := build(group)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		group.close()
		return err
	}
	// Pipes of our own, not StdoutPipe: Wait closes those when the shell
	// exits, and what it wrote last (echo bye; exit 3) could be lost
	// before it is read. Ours reach EOF when every writer is gone.
	stdout, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	stderr, errW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		outW.Close()
		return err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	if err != nil && group != nil {
		// A kernel that cannot start a process in a cgroup (clone3).
		stdin.Close()
		group.close()
		group = nil
		cmd = build(nil)
		cmd.Stdout, cmd.Stderr = outW, errW
		if stdin, err = cmd.StdinPipe(); err == nil {
			err = cmd.Start()
		}
	}
	outW.Close() // the shell has its own copies
	errW.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		group.close()
		return fmt.Errorf("could not start %s: %v", p.opts.Shell, err)
	}
	p.cmd, p.stdin, p.group = cmd, stdin, group
	p.out, p.err, p.reads = newStream(stdout), newStream(stderr), []*os.File{stdout, stderr}
	p.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return nil
}

// killAll kills the shell and everything it started: its cgroup where it
// has one, and its process group.
func (p *session) killAll() {
	p.group.kill()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// kill ends the shell and everything it started.
func (p *session) kill() {
	if p.cmd == nil {
		return
	}
	p.killAll()
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
	p.closeReads()
	p.group.close()
	p.cmd, p.group = nil, nil
}

// closeReads closes the read ends, so that their readers stop even when a
// child that left the process group still holds a write end.
func (p *session) closeReads() {
	for _, f := range p.reads {
		f.Close()
	}
	p.reads = nil
}

// Close kills the shell and its jobs.
func (p *session) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kill()
	p.closed = true
	return nil
}

// run runs one command in the shell.
func (p *session) run(ctx context.Context, command string, timeout time.Duration) (ExecuteOutput, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ExecuteOutput{}, errors.New("the shell server is closed")
	}
	if p.cmd != nil {
		select {
		case <-p.exited: // it ended between calls (killed from outside)
			p.kill()
		default:
		}
	}
	if p.cmd == nil {
		if err := p.start(); err != nil {
			return ExecuteOutput{}, err
		}
	}
	ctx, cancel := withTimeout(ctx, timeout, errTimedOut)
	defer cancel()
	for attempt := 0; ; attempt++ {
		// The command ends with a newline, as a file would: a here-document
		// whose delimiter is its last line is closed.
		line := fmt.Sprintf("eval %s\nprintf '\\n%s %%d\\n' \"$?\"; printf '\\n%s \\n' >&2\n", shellQuote(command+"\n"), p.marker, p.marker)
		err := p.send(ctx, line)
		if err == nil {
			break
		}
		p.kill()
		if ctx.Err() != nil {
			return ExecuteOutput{}, fmt.Errorf("command %s before the shell had read it, and the shell was killed (the next command starts a new shell)", stopped(ctx, timeout))
		}
		if attempt > 0 {
			return ExecuteOutput{}, fmt.Errorf("the shell is gone (%v); the next command starts a new one", err)
		}
		// It died since the check above (killed from outside), and the
		// command never reached it: a new shell runs it.
		if err := p.start(); err != nil {
			return ExecuteOutput{}, err
		}
	}
	marker := []byte("\n" + p.marker + " ")
	var out ExecuteOutput
	var stdout, stderr []byte
	gotOut, gotErr := false, false
	// Once the shell has exited, its outputs end when its jobs are
	// killed; one that left the group and holds them is not waited for
	// long.
	exited, graceOver := p.exited, false
	var grace <-chan time.Time
	for !gotOut || !gotErr {
		var waitOut, waitErr <-chan struct{}
		var eofOut, eofErr bool
		if !gotOut {
			var code []byte
			stdout, code, gotOut, eofOut, waitOut = p.out.cut(marker)
			if gotOut {
				out.ExitCode, _ = strconv.Atoi(string(bytes.TrimSpace(code)))
			}
		}
		if !gotErr {
			stderr, _, gotErr, eofErr, waitErr = p.err.cut(marker)
		}
		if gotOut && gotErr {
			break
		}
		if (gotOut || eofOut || graceOver) && (gotErr || eofErr || graceOver) {
			// The shell exited within the command (exit, or killed): its
			// jobs end with it, as a terminal's do when it closes.
			p.killAll()
			<-p.exited
			p.closeReads()
			p.group.close()
			p.group = nil
			out = p.output(append(stdout, p.out.drain()...), append(stderr, p.err.drain()...))
			out.ExitCode = p.cmd.ProcessState.ExitCode()
			out.Stderr += "\n[the shell exited; the next command starts a new one]"
			p.cmd = nil
			return out, nil
		}
		select {
		case <-waitOut:
		case <-waitErr:
		case <-exited:
			p.killAll()
			exited, grace = nil, time.After(2*time.Second)
		case <-grace:
			graceOver = true
		case <-ctx.Done():
			p.kill()
			out = p.output(append(stdout, p.out.drain()...), append(stderr, p.err.drain()...))
			return out, fmt.Errorf("command %s and was killed with the shell and its background jobs (the next command starts a new shell: cd and variables are lost); %s", stopped(ctx, timeout), capturedOutput(out))
		}
	}
	code := out.ExitCode
	out = p.output(stdout, stderr)
	out.ExitCode = code
	return out, nil
}

// send writes line to the shell's standard input. A long command fills
// the pipe and waits for the shell to read it, so the wait ends with ctx
// too: closing the pipe ends the write. A write that got through all the
// same (ctx ended as it did) is no error: the caller sees ctx's end
// while it waits for the command, as it would have anyway.
func (p *session) send(ctx context.Context, line string) error {
	written := make(chan error, 1)
	stdin := p.stdin
	go func() {
		_, err := io.WriteString(stdin, line)
		written <- err
	}()
	select {
	case err := <-written:
		return err
	case <-ctx.Done():
		select {
		case err := <-written: // both at once: the write is done
			return err
		default:
		}
		stdin.Close()
		if err := <-written; err != nil {
			return context.Cause(ctx)
		}
		return nil
	}
}

// output caps what a command wrote as a fresh shell's output is capped.
func (p *session) output(stdout, stderr []byte) ExecuteOutput {
	o, e := newCapped(p.opts.MaxOutput), newCapped(p.opts.MaxOutput)
	o.Write(stdout)
	e.Write(stderr)
	return ExecuteOutput{Stdout: o.String(), Stderr: e.String(), Truncated: o.dropped > 0 || e.dropped > 0}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte(`'\''`))) + "'"
}
