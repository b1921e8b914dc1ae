package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// How long a stdio server gets to exit after its stdin closes, and after
// SIGTERM, before its process group is killed.
const (
	exitGrace = 2 * time.Second
	termGrace = 2 * time.Second
)

// process is one stdio server process. It runs in its own process group so
// that stopping it also stops what it started (npx starts node, node may
// start a browser). Its stdout and stderr are os.Pipes owned here, not by
// exec, so that waiting for the process never races with reading them.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *lineFilter
	outR   *os.File
	errR   *os.File
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result, readable after exited

	stderr     *tail
	stderrDone chan struct{}
	stopOnce   sync.Once
}

func startProcess(s Server, maxLine int, log *slog.Logger) (*process, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return nil, fmt.Errorf("cannot start %s: %w (is it installed and on PATH?)", s.Command, err)
	}
	// The child has its own copies; ours would keep the pipes open forever.
	outW.Close()
	errW.Close()
	p := &process{cmd: cmd, stdin: stdin, outR: outR, errR: errR,
		exited: make(chan struct{}), stderr: &tail{max: 2048}, stderrDone: make(chan struct{})}
	p.stdout = &lineFilter{r: bufio.NewReaderSize(outR, 64<<10), max: maxLine, log: log}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.stderrDone)
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.add(line)
			log.Debug("mcp server stderr", "line", line)
		}
		// A line too long for the scanner must not stop the draining: a
		// full pipe would block the server.
		io.Copy(io.Discard, errR)
	}()
	return p, nil
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitErr says how the process ended; call it after exited is closed.
func (p *process) exitErr() error {
	if !p.hasExited() {
		return errors.New("still running")
	}
	if p.err == nil {
		return errors.New("exit status 0")
	}
	return p.err
}

// lastWords is what the server last wrote to stderr and any non-JSON it
// wrote to stdout, for error messages. It is safe on a nil process.
func (p *process) lastWords() string {
	if p == nil {
		return ""
	}
	// Once it has exited, its last lines may still be in the pipe: let the
	// reader finish (briefly: a child it left may hold the pipe open).
	select {
	case <-p.exited:
		waitFor(p.stderrDone, time.Second)
	default:
	}
	var b strings.Builder
	if g := p.stdout.problem(); g != "" {
		b.WriteString("; " + g)
	}
	if t := p.stderr.String(); t != "" {
		fmt.Fprintf(&b, "; its stderr ends with: %s", t)
	}
	return b.String()
}

// stop ends the process: stdin is closed (a well-behaved server exits),
// then the group gets SIGTERM, then SIGKILL. It waits for the exit and
// closes the pipes. Calling it again does nothing.
func (p *process) stop() error {
	var err error
	p.stopOnce.Do(func() {
		p.stdin.Close()
		pgid := p.cmd.Process.Pid
		if !waitFor(p.exited, exitGrace) {
			syscall.Kill(-pgid, syscall.SIGTERM)
			syscall.Kill(-pgid, syscall.SIGCONT) // a stopped process cannot act on SIGTERM
			if !waitFor(p.exited, termGrace) {
				syscall.Kill(-pgid, syscall.SIGKILL)
				if !waitFor(p.exited, termGrace) {
					err = fmt.Errorf("process %d did not exit after SIGKILL", pgid)
				}
			}
		}
		// The leader is gone; anything it left in its group goes too.
		syscall.Kill(-pgid, syscall.SIGKILL)
		p.outR.Close()
		p.errR.Close()
		<-p.stderrDone
	})
	return err
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// lineFilter passes the server's stdout on to the MCP transport line by
// line, dropping what cannot be a JSON-RPC message: lines that are not
// JSON (a server that prints banners or logs to stdout) and lines over the
// size limit. What it dropped is remembered for error messages.
type lineFilter struct {
	r       *bufio.Reader
	max     int
	log     *slog.Logger
	pending []byte

	mu      sync.Mutex
	first   string // the first line dropped: a banner says the most
	dropped int
}

func (f *lineFilter) Read(b []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.readLine()
		if len(line) > 0 {
			f.pending = line
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(b, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine returns the next acceptable line with its newline, or nil for a
// dropped one.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > f.max {
			why := fmt.Sprintf("it sent a message of more than %d bytes, which was dropped", f.max)
			f.drop(why)
			head := append(line, chunk[:min(len(chunk), idWindow)]...)
			tail := keepTail(nil, chunk)
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
				chunk, err = f.r.ReadSlice('\n')
				tail = keepTail(tail, chunk)
			}
			// A response too big to pass on still answers a call: fail that
			// call now, rather than let it wait for its timeout.
			if id, ok := responseID(head, tail); ok {
				return failedResponse(id, why), err
			}
			return nil, err
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		trimmed := bytes.TrimSpace(line)
		switch {
		case len(trimmed) == 0:
			return nil, err
		case trimmed[0] != '{' || !json.Valid(trimmed):
			f.drop(fmt.Sprintf("it wrote non-JSON to stdout: %q", truncate(string(trimmed), 200)))
			return nil, err
		}
		if line[len(line)-1] != '\n' {
			line = append(line, '\n')
		}
		return line, err
	}
}

// idWindow is how much of a dropped line's start and end is kept to find
// its JSON-RPC id.
const idWindow = 512

// keepTail appends b to tail, keeping the last idWindow bytes.
func keepTail(tail, b []byte) []byte {
	tail = append(tail, b...)
	if len(tail) > idWindow {
		tail = append(tail[:0], tail[len(tail)-idWindow:]...)
	}
	return tail
}

var (
	// Servers write the id near the start (Go: jsonrpc, id, result) or at
	// the end (TypeScript: result, jsonrpc, id).
	idAtStart   = regexp.MustCompile(`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,\s*"(?:result|error)"`)
	resultFirst = regexp.MustCompile(`^\s*\{\s*"(?:result|error)"\s*:`)
	idAtEnd     = regexp.MustCompile(`"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$`)
)

// responseID finds the id of a dropped JSON-RPC response from the start
// and end of its line.
func responseID(head, tail []byte) (json.RawMessage, bool) {
	if m := idAtStart.FindSubmatch(head); m != nil {
		return json.RawMessage(m[1]), true
	}
	if resultFirst.Match(head) {
		if m := idAtEnd.FindSubmatch(tail); m != nil {
			return json.RawMessage(m[1]), true
		}
	}
	return nil, false
}

// failedResponse is the JSON-RPC error line that stands in for a dropped
// response.
func failedResponse(id json.RawMessage, why string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": -32603, "message": "the MCP server's reply was dropped: " + why},
	})
	return append(b, '\n')
}

func (f *lineFilter) drop(why string) {
	f.log.Warn("mcp server stdout: line dropped", "why", why)
	f.mu.Lock()
	if f.dropped == 0 {
		f.first = why
	}
	f.dropped++
	f.mu.Unlock()
}

func (f *lineFilter) problem() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.dropped {
	case 0:
		return ""
	case 1:
		return f.first
	}
	return fmt.Sprintf("%s (and %d more lines were dropped)", f.first, f.dropped-1)
}

// tail keeps the last lines written to it, up to max bytes.
type tail struct {
	mu    sync.Mutex
	max   int
	lines []string
	size  int
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line = truncate(line, t.max)
	t.lines = append(t.lines, line)
	t.size += len(line)
	for t.size > t.max && len(t.lines) > 1 {
		t.size -= len(t.lines[0])
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
