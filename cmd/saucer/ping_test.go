package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// doctor --ping sends the model one real request (here to an
// OpenAI-shaped server on loopback) and reports its answer or its error;
// without --ping nothing is sent.
func TestDoctorPing(t *testing.T) {
	var requests atomic.Int32
	status := atomic.Int32{}
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if s := int(status.Load()); s != 200 {
			w.WriteHeader(s)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		io.WriteString(w, `{"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	dir := t.TempDir()

	out, code := saucer(t, "doctor", "-m", "openai:gpt-4o", "-C", dir)
	if code != 0 || requests.Load() != 0 || !strings.Contains(out, "no request was sent") {
		t.Errorf("without --ping: exit %d, %d requests\n%s", code, requests.Load(), out)
	}
	out, code = saucer(t, "doctor", "--ping", "-m", "openai:gpt-4o", "-C", dir)
	if code != 0 || requests.Load() != 1 || !strings.Contains(out, "ok   provider: openai:gpt-4o answered in") || !strings.Contains(out, "(12+1 tokens): pong") {
		t.Errorf("--ping: exit %d\n%s", code, out)
	}
	status.Store(401)
	out, code = saucer(t, "doctor", "--ping", "-m", "openai:gpt-4o", "-C", dir)
	if code != 1 || !strings.Contains(out, "FAIL provider: openai:gpt-4o did not answer") || !strings.Contains(out, "Incorrect API key") {
		t.Errorf("--ping, bad key: exit %d\n%s", code, out)
	}
}

// saucer mcp --http refuses a request from a foreign web origin, and
// serves local ones.
func TestMCPRefusesForeignOrigin(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	h := sameOrigin(ok)
	for origin, want := range map[string]int{
		"":                      200,
		"http://localhost:3000": 200,
		"http://127.0.0.1:8931": 200,
		"http://[::1]:80":       200,
		"https://evil.example":  403,
		"http://192.168.1.4":    403,
		"null":                  403,
	} {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader("{}"))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Origin %q: %d, want %d", origin, rec.Code, want)
		}
	}
}

// saucer client --request gives up on a server that is down, after
// --connect-wait, with a clear message.
func TestClientRequestGivesUp(t *testing.T) {
	addr := freeAddr(t)
	out, code := saucer(t, "client", "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", t.TempDir(), "--journal", "off",
		"--request", "anything", "--connect-wait", "300ms")
	if code != 2 || !strings.Contains(out, "could not reach the server at ws://"+addr+"/ws within 300ms") {
		t.Errorf("exit %d\n%s", code, out)
	}
}
