package shell

import (
	"fmt"
	"strings"
)

// capped keeps the first and the last max/2 bytes written to it and counts
// the rest: the head of an output says what ran, the tail says how it ended.
type capped struct {
	max     int
	head    []byte
	tail    []byte // ring buffer once full
	next    int    // where the ring writes next
	dropped int64
}

func newCapped(max int) *capped { return &capped{max: max} }

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	headMax := c.max - c.max/2
	if room := headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailMax := c.max / 2
	if len(p) >= tailMax {
		// p alone fills the tail: what was there and p's start are dropped.
		c.dropped += int64(len(c.tail) + len(p) - tailMax)
		c.tail = append(c.tail[:0], p[len(p)-tailMax:]...)
		c.next = 0
		return n, nil
	}
	for _, b := range p {
		if len(c.tail) < tailMax {
			c.tail = append(c.tail, b)
			continue
		}
		c.tail[c.next] = b
		c.next = (c.next + 1) % tailMax
		c.dropped++
	}
	return n, nil
}

// String is the kept output, with a marker where bytes were cut out.
func (c *capped) String() string {
	tail := append(append([]byte(nil), c.tail[c.next:]...), c.tail[:c.next]...)
	if c.dropped == 0 {
		return string(c.head) + string(tail)
	}
	// Cutting may split a multi-byte character; show it as U+FFFD rather
	// than as invalid UTF-8.
	return strings.ToValidUTF8(string(c.head), "\uFFFD") +
		fmt.Sprintf("\n…[truncated %d bytes]…\n", c.dropped) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
