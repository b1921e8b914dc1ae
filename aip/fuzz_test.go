package aip_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/aip"
)

// seedFrames adds the golden frames (when present) and a few odd ones.
func seedFrames(f *testing.F, prefix string) {
	files, _ := filepath.Glob(filepath.Join(aipDir, prefix+"*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{"type":"error"}`, `{"type":"heartbeat","status":"ok","metadata":{"a":[1,{"b":null}]}}`,
		`{"type":"command_results","status":"continue","prev_response_id":"r","action_results":[{"status":"success","result":{"x":"\u00ff"}}]}`,
		`{"type":"command","status":"continue","response_id":"r","actions":[{"tool_name":"t","tool_type":"action","parameters":{"k":1e400}}]}`,
		`{"type":"task","status":"continue","user_request":"\ud800","result":[1,2]}`, `  {}`, `{"type":"task_end","status":"failed","lifecycle":{"created_at":"2025-01-01T00:00:00Z"}}`} {
		f.Add([]byte(s))
	}
}

// FuzzDecodeClient: decoding never panics, and a decoded frame encodes to
// JSON that decodes to a frame encoding to the very same bytes.
func FuzzDecodeClient(f *testing.F) {
	seedFrames(f, "c2s_")
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, aip.DecodeClient) })
}

// FuzzDecodeServer is FuzzDecodeClient for server frames.
func FuzzDecodeServer(f *testing.F) {
	seedFrames(f, "s2c_")
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, aip.DecodeServer) })
}

// message is what both directions' messages do.
type message interface {
	Validate() error
	String() string
	Append([]byte) ([]byte, error)
}

// roundTrip checks the fuzzers' property on one input.
func roundTrip[M message](t *testing.T, b []byte, decode func([]byte) (M, error)) {
	m, err := decode(b)
	if err != nil {
		return
	}
	_ = m.Validate()
	_ = m.String()
	enc1, err := m.Append(nil)
	if err != nil {
		if strings.Contains(err.Error(), "unsupported") {
			return // e.g. a number too large for float64 cannot be written back
		}
		t.Fatalf("encode a decoded frame: %v", err)
	}
	m2, err := decode(enc1)
	if err != nil {
		t.Fatalf("decode our own encoding %s: %v", enc1, err)
	}
	enc2, err := m2.Append(nil)
	if err != nil || !bytes.Equal(enc1, enc2) {
		t.Fatalf("encoding is not stable:\n%s\n%s (%v)", enc1, enc2, err)
	}
}
