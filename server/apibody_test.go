package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server"
)

// rawCall sends body as it is (not marshalled) and returns the status,
// the headers and the body of the answer.
func rawCall(t *testing.T, method, url, key, contentType, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// jsonError is the "error" of a JSON error body, failing the test when
// the body is not one.
func jsonError(t *testing.T, h http.Header, body string) string {
	t.Helper()
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error answered as %q, not JSON: %s", ct, body)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
		t.Errorf("error body is not {\"error\": ...}: %q (%v)", body, err)
	}
	return e.Error
}

// TestBlankRequestIsRefused: a request of only whitespace starts no task
// (no agents, no model call), over the API (400 saying what to send) and
// from a device's own task frame.
func TestBlankRequestIsRefused(t *testing.T) {
	var sessions atomic.Int32
	f := newFixture(t, server.Options{NewSession: func(server.SessionSpec) (server.Runner, error) {
		sessions.Add(1)
		return nil, io.EOF
	}})
	raw := f.rawConn(t)
	register(t, raw, "dev")
	for _, req := range []string{"", "   ", "\n\t "} {
		body, _ := json.Marshal(server.DispatchRequest{ClientID: "dev", Request: req})
		code, h, b := rawCall(t, "POST", f.http.URL+"/api/dispatch", token, "application/json", string(body))
		if msg := jsonError(t, h, b); code != http.StatusBadRequest || !strings.Contains(msg, `send "request"`) {
			t.Errorf("dispatch of %q: %d %q; want 400 saying to send a request", req, code, msg)
		}
	}
	send(t, raw, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientID: "dev", Request: "  ", TaskName: "t"})
	// The server may ask the device things first (its tools): the answer
	// to the task frame is the first error.
	m := readServer(t, raw)
	for i := 0; i < 5 && m.Type != aip.TypeError; i++ {
		m = readServer(t, raw)
	}
	if m.Type != aip.TypeError || !strings.Contains(m.Error, "the request is empty") {
		t.Errorf("a device's blank task request: %+v", m)
	}
	if n := len(f.srv.Tasks()); n != 0 || sessions.Load() != 0 {
		t.Errorf("blank requests made %d task(s) and %d session(s)", n, sessions.Load())
	}
}

// TestBodiesOverTheLimitAre413: every endpoint that reads a body answers
// one over its limit with 413 and a JSON error naming the limit, and one
// that is not JSON with 400 saying what to send.
func TestBodiesOverTheLimitAre413(t *testing.T) {
	f := newFixture(t, server.Options{})
	mib := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		path, contentType, body string
		want                    int
		says                    string
	}{
		{"/api/dispatch", "application/json", `{"client_id":"dev","request":"` + mib + `"}`, 413, "larger than 1 MiB, the most POST /api/dispatch takes"},
		{"/api/dispatch", "application/json", `client_id=dev`, 400, `the body must be JSON {"client_id": "...", "request"`},
		{"/api/dispatch", "application/json", ``, 400, "the body is empty"},
		{"/api/tasks/t1/pending/p1", "application/json", `{"answer":"` + mib + `"}`, 413, "larger than 1 MiB"},
		{"/api/login", "application/json", `{"key":"` + mib[:1<<16] + `"}`, 413, "larger than 64 KiB, the most POST /api/login takes"},
		{"/api/login", "application/x-www-form-urlencoded", `key=` + mib[:1<<16], 413, "larger than 64 KiB"},
		{"/api/login", "application/json", `{"key":`, 400, `the body must be JSON {"key": "..."}`},
	} {
		code, h, b := rawCall(t, "POST", f.http.URL+tc.path, token, tc.contentType, tc.body)
		if msg := jsonError(t, h, b); code != tc.want || !strings.Contains(msg, tc.says) {
			t.Errorf("POST %s (%.20s...): %d %q; want %d saying %q", tc.path, tc.body, code, msg, tc.want, tc.says)
		}
	}
}

// TestAuthRefusalsAreJSON: 401 and 403 are JSON errors like the rest of
// the API, on the API and on /ws, and say what to send.
func TestAuthRefusalsAreJSON(t *testing.T) {
	f := newFixture(t, server.Options{})
	for _, tc := range []struct {
		method, path, key string
		want              int
		says              string
	}{
		{"GET", "/api/clients", "", 401, "missing API key: send the server's key as the X-API-Key header"},
		{"GET", "/api/clients", "wrong", 403, "invalid API key"},
		{"POST", "/api/dispatch", "", 401, "missing API key"},
		{"GET", "/api/runs", "wrong", 403, "invalid API key"},
		{"GET", "/ws", "", 401, "missing API key"},
		{"GET", "/ws", "wrong", 403, "invalid API key"},
	} {
		code, h, b := rawCall(t, tc.method, f.http.URL+tc.path, tc.key, "", "")
		if msg := jsonError(t, h, b); code != tc.want || !strings.Contains(msg, tc.says) {
			t.Errorf("%s %s (key %q): %d %q; want %d saying %q", tc.method, tc.path, tc.key, code, msg, tc.want, tc.says)
		}
	}
}
