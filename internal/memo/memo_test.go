package memo

import (
	"errors"
	"strconv"
	"testing"
)

// TestBytes: the same bytes are computed once, an error is not kept, and
// past Max inputs it starts again rather than grow.
func TestBytes(t *testing.T) {
	var m Bytes[int]
	calls := 0
	length := func(b []byte) (int, error) {
		calls++
		if string(b) == "bad" {
			return 0, errors.New("bad input")
		}
		return len(b), nil
	}
	buf := []byte("four")
	for range 3 {
		if v, err := m.Get(buf, length); v != 4 || err != nil {
			t.Fatalf("Get = %d, %v", v, err)
		}
	}
	if calls != 1 {
		t.Fatalf("computed %d times for the same bytes", calls)
	}
	// The key is a copy: changing the caller's bytes changes nothing.
	buf[0] = 'F'
	if v, _ := m.Get([]byte("four"), length); v != 4 || calls != 1 {
		t.Fatalf("after the caller's bytes changed: %d, %d calls", v, calls)
	}
	for range 2 {
		if _, err := m.Get([]byte("bad"), length); err == nil {
			t.Fatal("no error")
		}
	}
	if calls != 3 {
		t.Fatalf("an error was remembered: %d calls", calls)
	}
	for i := range 2 * Max {
		m.Get([]byte(strconv.Itoa(i)), length)
	}
	if len(m.seen) > Max {
		t.Fatalf("%d inputs remembered, more than %d", len(m.seen), Max)
	}
}
