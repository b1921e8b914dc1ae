// Package aiptest reads the AIP transcripts recorded from UFO's server
// and client (testdata/aip/transcripts): JSON Lines, one frame a line
// with the way it went.
package aiptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// Line is one frame of a transcript: Dir is "s2c" (server to client) or
// "c2s", Frame the frame as it was sent.
type Line struct {
	Dir   string          `json:"dir"`
	Frame json.RawMessage `json:"frame"`
}

// Transcript reads the transcript at path, passing over blank lines; a
// file that cannot be read or a line that is not a frame ends the test.
func Transcript(t testing.TB, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: line %d: %v", path, n, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
