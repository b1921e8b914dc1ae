// Package uuid makes the random ids Saucer gives commands, frames, tasks
// and devices. It sits below every package that needs one (dispatcher,
// client/remote, server), so that none of them imports another for it.
package uuid

import (
	"crypto/rand"
	"time"
)

// New returns a random (version 4) UUID string.
func New() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return format(&b)
}

// NewTime returns a version 7 UUID string: the time in milliseconds, then
// random bits (RFC 9562). Ids made one after another sort in the order
// they were made, so a database indexed by them adds each new one beside
// the last instead of at a random page of its index: the server's task
// ids, which key its store's tasks and journal.
func NewTime() string {
	var b [16]byte
	rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return format(&b)
}

// format writes a UUID in its usual form, by hand rather than with fmt:
// three ids are made per command round trip, and fmt's five %x took a
// tenth of the server's share.
func format(b *[16]byte) string {
	const hex = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(s[:])
}
