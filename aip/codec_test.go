package aip_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/aiptest"
)

const aipDir = "../testdata/aip"

// goldenFiles lists the recorded frames in the repo's testdata.
func goldenFiles(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(aipDir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden AIP frames match %s in %s", pattern, aipDir)
	}
	return files
}

// value decodes JSON into plain Go values for comparison.
func value(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// dropNulls removes null-valued object fields, so that a frame written
// with every field equals one written with only the set ones.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out[k] = dropNulls(e)
			}
		}
		return out
	case []any:
		for i := range x {
			x[i] = dropNulls(x[i])
		}
	}
	return v
}

// reencode decodes one frame as its direction says and encodes it again.
func reencode(t *testing.T, dir string, frame []byte) []byte {
	t.Helper()
	var out []byte
	var err error
	switch dir {
	case "c2s":
		out, err = decodeValid(t, frame, aip.DecodeClient)
	case "s2c":
		out, err = decodeValid(t, frame, aip.DecodeServer)
	default:
		var probe struct{ Type string }
		json.Unmarshal(frame, &probe)
		var v any
		switch probe.Type {
		case aip.TypeBinaryData:
			v = &aip.BinaryMetadata{}
		case aip.TypeFileTransferStart:
			v = &aip.FileTransferStart{}
		case aip.TypeFileTransferComplete:
			v = &aip.FileTransferComplete{}
		default:
			t.Fatalf("unknown file-transfer frame type %q", probe.Type)
		}
		if err := json.Unmarshal(frame, v); err != nil {
			t.Fatal(err)
		}
		out, err = json.Marshal(v)
	}
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return out
}

// decodeValid decodes a frame, fails the test unless it decodes and is
// valid, and encodes it again.
func decodeValid[M message](t *testing.T, b []byte, decode func([]byte) (M, error)) ([]byte, error) {
	t.Helper()
	m := mustDecode(t, b, decode)
	if err := m.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return m.Append(nil)
}

// TestGoldenFrames decodes every frame UFO's own code produced, validates
// it, encodes it again and gets the same JSON: every field, nulls included
// (the file-transfer frames, which UFO writes sparsely, compare without
// nulls).
func TestGoldenFrames(t *testing.T) {
	for _, file := range goldenFiles(t, "*.json") {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			frame, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir, _, _ := strings.Cut(name, "_")
			out := reencode(t, dir, frame)
			want, got := value(t, frame), value(t, out)
			if dir == "any" {
				want, got = dropNulls(want), dropNulls(got)
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("re-encoded frame differs\nwant %s\ngot  %s", frame, out)
			}
		})
	}
}

// TestTranscriptFrames decodes, validates and re-encodes every frame of the
// live UFO transcripts to identical JSON.
func TestTranscriptFrames(t *testing.T) {
	n := 0
	for _, file := range goldenFiles(t, "transcripts/*.jsonl") {
		for i, l := range aiptest.Transcript(t, file) {
			out := reencode(t, l.Dir, l.Frame)
			if !reflect.DeepEqual(value(t, l.Frame), value(t, out)) {
				t.Errorf("%s line %d: re-encoded frame differs\nwant %s\ngot  %s", filepath.Base(file), i+1, l.Frame, out)
			}
			n++
		}
	}
	if n < 20 {
		t.Errorf("only %d transcript frames checked; the transcripts hold more", n)
	}
}

func TestDecodeLenient(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		check func(t *testing.T, m *aip.ClientMessage)
	}{
		{"only type and status", `{"type":"heartbeat","status":"ok"}`, func(t *testing.T, m *aip.ClientMessage) {
			if m.ClientType != aip.ClientDevice || m.ClientID != "" || m.ActionResults != nil || m.Metadata != nil {
				t.Errorf("defaults wrong: %+v", m)
			}
		}},
		{"nulls everywhere", `{"type":"task","status":"continue","client_type":null,"session_id":null,"request":"x","action_results":null,"metadata":null,"error":null}`,
			func(t *testing.T, m *aip.ClientMessage) {
				if m.Request != "x" || m.SessionID != "" || m.ClientType != aip.ClientDevice {
					t.Errorf("got %+v", m)
				}
			}},
		{"unknown fields ignored", `{"type":"heartbeat","status":"ok","client_id":"d","brand_new":{"a":[1,2]},"x":null}`,
			func(t *testing.T, m *aip.ClientMessage) {
				if m.ClientID != "d" {
					t.Errorf("client id %q", m.ClientID)
				}
			}},
		{"error without status (UFO client quirk)", `{"type":"error","client_id":"d","error":"boom"}`,
			func(t *testing.T, m *aip.ClientMessage) {
				if m.Status != aip.StatusError || m.Error != "boom" {
					t.Errorf("got %+v", m)
				}
			}},
		{"results with null fields", `{"type":"command_results","status":"continue","prev_response_id":"r","action_results":[{"status":"success","result":null,"error":null,"namespace":null,"call_id":null}]}`,
			func(t *testing.T, m *aip.ClientMessage) {
				if len(m.ActionResults) != 1 || m.ActionResults[0].Status != command.Success || m.ActionResults[0].Result != nil {
					t.Errorf("got %+v", m.ActionResults)
				}
			}},
		{"saucer progress extension", `{"type":"heartbeat","status":"ok","progress":{"response_id":"r","call_id":"c","state":"running","index":1,"elapsed_ms":5}}`,
			func(t *testing.T, m *aip.ClientMessage) {
				if m.Progress == nil || m.Progress.CallID != "c" || m.Progress.Index != 1 {
					t.Errorf("progress %+v", m.Progress)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := aip.DecodeClient([]byte(tt.frame))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			tt.check(t, m)
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, frame, want string
		server            bool
	}{
		{"not JSON", `hello`, "not a JSON object", false},
		{"broken JSON", `{"type":"heartbeat",`, "not valid JSON", false},
		{"array", `[1,2]`, "not a JSON object", false},
		{"empty", ``, "empty", false},
		{"no type", `{"status":"ok"}`, "no type", false},
		{"upper-case type", `{"type":"REGISTER","status":"ok"}`, `unknown client message type "REGISTER"`, false},
		{"capitalised status", `{"type":"heartbeat","status":"OK"}`, `unknown status "OK"`, false},
		{"command from a client", `{"type":"command","status":"continue"}`, `unknown client message type "command"`, false},
		{"register to a client", `{"type":"register","status":"ok"}`, `unknown server message type "register"`, true},
		{"no status", `{"type":"heartbeat"}`, "no status", false},
		{"bad client type", `{"type":"heartbeat","status":"ok","client_type":"robot"}`, `unknown client_type "robot"`, false},
		{"wrong field type", `{"type":"heartbeat","status":"ok","client_id":5}`, "client_id", false},
		{"results not a list", `{"type":"command_results","status":"continue","action_results":{"a":1}}`, "action_results", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.server {
				_, err = aip.DecodeServer([]byte(tt.frame))
			} else {
				_, err = aip.DecodeClient([]byte(tt.frame))
			}
			if err == nil {
				t.Fatal("decoded a bad frame")
			}
			if !errors.Is(err, aip.ErrBadFrame) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q; want ErrBadFrame mentioning %q", err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct{ dir, name, frame, want string }{
		{"c2s", "register without id", `{"type":"register","status":"ok"}`, "client_id"},
		{"c2s", "constellation without target", `{"type":"register","status":"ok","client_id":"c","client_type":"constellation"}`, "target_id"},
		{"c2s", "task without request", `{"type":"task","status":"continue","client_id":"d"}`, "request"},
		{"c2s", "results without prev id", `{"type":"command_results","status":"continue","action_results":[]}`, "prev_response_id"},
		{"c2s", "results without list", `{"type":"command_results","status":"continue","prev_response_id":"r"}`, "action_results"},
		{"c2s", "result with bad status", `{"type":"command_results","status":"continue","prev_response_id":"r","action_results":[{"status":"SUCCESS"}]}`, `"SUCCESS"`},
		{"s2c", "command without response id", `{"type":"command","status":"continue","actions":[]}`, "response_id"},
		{"s2c", "command without actions", `{"type":"command","status":"continue","response_id":"r"}`, "actions"},
		{"s2c", "bad tool type", `{"type":"command","status":"continue","response_id":"r","actions":[{"tool_name":"x","tool_type":"magic"}]}`, "magic"},
		{"s2c", "task without request", `{"type":"task","status":"continue"}`, "user_request"},
		{"s2c", "task_end continuing", `{"type":"task_end","status":"continue"}`, "completed or failed"},
	}
	for _, tt := range cases {
		t.Run(tt.dir+"/"+tt.name, func(t *testing.T) {
			var err error
			if tt.dir == "c2s" {
				err = mustDecode(t, []byte(tt.frame), aip.DecodeClient).Validate()
			} else {
				err = mustDecode(t, []byte(tt.frame), aip.DecodeServer).Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate error %v; want one mentioning %s", err, tt.want)
			}
		})
	}
}

// mustDecode decodes a frame that must decode.
func mustDecode[M message](t *testing.T, b []byte, decode func([]byte) (M, error)) M {
	t.Helper()
	m, err := decode(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return m
}

// TestEncodeStrings checks the hand-written string encoder against
// encoding/json's decoder on awkward text.
func TestEncodeStrings(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f",
		"<html>&amp;", "ünïcödé 日本 🚀", "line\u2028sep\u2029", "bad \xff utf8 \xc3"} {
		m := aip.ServerMessage{Type: aip.TypeError, Status: aip.StatusError, Error: s, Messages: []string{s}}
		b, err := m.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Error    *string  `json:"error"`
			Messages []string `json:"messages"`
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q encoded to invalid JSON %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if s == "" {
			if back.Error != nil {
				t.Errorf("empty error encoded as %q, want null", *back.Error)
			}
			continue
		}
		if back.Error == nil || *back.Error != want || back.Messages[0] != want {
			t.Errorf("%q came back as %v / %q", s, back.Error, back.Messages)
		}
	}
}

// TestLifecycleRoundTrip checks Saucer's extension field survives a round
// trip and that plain UFO frames carry none.
func TestLifecycleRoundTrip(t *testing.T) {
	m := aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, ResponseID: "r",
		Actions:   []command.Command{{ToolName: "x", ToolType: command.Action, CallID: "c"}},
		Lifecycle: &aip.Lifecycle{QueuedBy: "api:test"}}
	b, _ := m.Append(nil)
	back, err := aip.DecodeServer(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Lifecycle == nil || back.Lifecycle.QueuedBy != "api:test" {
		t.Errorf("lifecycle lost: %s", b)
	}
	m.Lifecycle = nil
	b, _ = m.Append(nil)
	if bytes.Contains(b, []byte("lifecycle")) {
		t.Errorf("a frame without lifecycle mentions it: %s", b)
	}
}

// TestDecodeEscapes: escaped and non-ASCII strings and keys decode as JSON
// says, at the top level and inside free-form values.
func TestDecodeEscapes(t *testing.T) {
	m, err := aip.DecodeClient([]byte(`{"type":"heartbeat","status":"ok","client_id":"d\u00e9v\n\"q\"","error":"日本 \ud83d\ude80",` +
		`"metadata":{"k\u00e9y":["v",1.5,true,null,{"n":-2e3}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.ClientID != "dév\n\"q\"" || m.Error != "日本 🚀" {
		t.Errorf("strings %q %q", m.ClientID, m.Error)
	}
	want := []any{"v", 1.5, true, nil, map[string]any{"n": -2000.0}}
	if !reflect.DeepEqual(m.Metadata["kéy"], want) {
		t.Errorf("metadata %#v", m.Metadata)
	}
	s, err := aip.DecodeServer([]byte(`{"type":"command","status":"continue","response_id":"r","actions":[{"tool_name":"t","tool_type":"action","parameters":{"a\u0062":{"x":[1,"\u00ff"]}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Actions[0].Parameters["ab"]; !reflect.DeepEqual(got, map[string]any{"x": []any{1.0, "ÿ"}}) {
		t.Errorf("parameters %#v", s.Actions[0].Parameters)
	}
	for _, bad := range []string{`{"type":"heartbeat","status":"ok"} x`, `{"type":"heartbeat","status":"ok","a":01}`,
		`{"type":"heartbeat","status":"ok","a":"\x"}`, `{"type":"heartbeat","status":"ok","a":tru}`, "{\"type\":\"heartbeat\",\"status\":\"ok\",\"a\":\"\x01\"}"} {
		if _, err := aip.DecodeClient([]byte(bad)); err == nil {
			t.Errorf("accepted invalid JSON %q", bad)
		}
	}
}

// Saucer's background and progress requests travel in the lifecycle and
// come back as they went; bad values are refused with the field's name.
func TestLifecycleDetachAndProgress(t *testing.T) {
	m := aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, ResponseID: "r",
		Actions:   []command.Command{{ToolName: "x", ToolType: command.Action, CallID: "c"}},
		Lifecycle: &aip.Lifecycle{DetachAfter: 1500 * time.Millisecond, Progress: true}}
	b, _ := m.Append(nil)
	if !bytes.Contains(b, []byte(`"detach_after_ms":1500,"progress":true}`)) {
		t.Errorf("encoded %s", b)
	}
	back, err := aip.DecodeServer(b)
	if err != nil {
		t.Fatal(err)
	}
	if l := back.Lifecycle; l == nil || l.DetachAfter != 1500*time.Millisecond || !l.Progress {
		t.Errorf("decoded %+v", back.Lifecycle)
	}
	for _, bad := range []string{`{"detach_after_ms":"soon"}`, `{"detach_after_ms":-1}`, `{"progress":"yes"}`} {
		_, err := aip.DecodeServer([]byte(`{"type":"command","status":"continue","response_id":"r","actions":[],"lifecycle":` + bad + `}`))
		if err == nil || !strings.Contains(err.Error(), "lifecycle.") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// A progress report's tool fields travel on the heartbeat and come back.
func TestProgressReportRoundTrip(t *testing.T) {
	m := aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: "d",
		Progress: &aip.Progress{ResponseID: "r", CallID: "c", State: "running", ElapsedMS: 1200, Progress: 7, Total: 10, Message: "line 6\nline 7"}}
	b, err := m.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := aip.DecodeClient(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Progress == nil || *back.Progress != *m.Progress {
		t.Errorf("got %+v from %s", back.Progress, b)
	}
}
