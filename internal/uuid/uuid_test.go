package uuid_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/uuid"
)

func TestNew(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 { // every nibble position sees many values
		id := uuid.New()
		if !v4.MatchString(id) || seen[id] {
			t.Fatalf("%q is not a fresh UUIDv4", id)
		}
		seen[id] = true
	}
}

func TestNewTime(t *testing.T) {
	v7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	before := time.Now().UnixMilli()
	prev := ""
	seen := map[string]bool{}
	for i := range 1000 {
		id := uuid.NewTime()
		if !v7.MatchString(id) || seen[id] {
			t.Fatalf("%q is not a fresh UUIDv7", id)
		}
		seen[id] = true
		ms, err := strconv.ParseInt(strings.ReplaceAll(id[:13], "-", ""), 16, 64)
		if err != nil || ms < before || ms > time.Now().UnixMilli() {
			t.Fatalf("%q: its time %d is not when it was made (from %d)", id, ms, before)
		}
		// Ids of different milliseconds sort in the order they were made.
		if i > 0 && id[:13] != prev[:13] && id < prev {
			t.Fatalf("%q sorts before the earlier %q", id, prev)
		}
		prev = id
	}
}
