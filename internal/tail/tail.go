// Package tail keeps the end of a process's error output, for the message
// when the process does not start or dies.
package tail

import (
	"strings"
	"sync"
)

// max is how much of the output is kept: its last bytes.
const max = 2048

// Buffer is an io.Writer that keeps the last bytes written to it. It is
// safe for concurrent use (exec copies a process's output from a goroutine).
type Buffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > max {
		t.b = t.b[len(t.b)-max:]
	}
	return len(p), nil
}

// String is what was kept, without surrounding white space.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
