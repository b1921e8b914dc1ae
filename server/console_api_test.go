package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
)

// call makes an API request with the given headers (no key unless one is
// given) through c, and decodes the JSON answer into out.
func call(t *testing.T, c *http.Client, method, url, body string, hdr map[string]string, out any) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp
}

// TestConsoleLogin: a wrong key is refused with what to give, and too
// many from one address wait; the right key sets an http-only,
// SameSite=Strict session cookie (Secure behind a TLS proxy) that the
// API takes in place of the key, for reading at once and for changes
// only with the session's CSRF token and from this origin; logging out
// forgets it. The key still works alone, as for programs.
func TestConsoleLogin(t *testing.T) {
	f := newFixture(t, server.Options{})
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	base := f.http.URL

	var errBody map[string]string
	if r := call(t, browser, "GET", base+"/api/tasks", "", nil, &errBody); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key, no session: %d", r.StatusCode)
	}
	if r := call(t, browser, "POST", base+"/api/login", `{"key":"wrong"}`, nil, &errBody); r.StatusCode != http.StatusForbidden ||
		!strings.Contains(errBody["error"], "wrong key: the console takes the server's API key") {
		t.Fatalf("a wrong key: %d %v", r.StatusCode, errBody)
	}
	if r := call(t, browser, "GET", base+"/api/tasks", "", nil, nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after a wrong key: %d", r.StatusCode)
	}

	var sess server.ConsoleSession
	r := call(t, browser, "POST", base+"/api/login", `{"key":"`+token+`"}`, map[string]string{"X-Forwarded-Proto": "https"}, &sess)
	if r.StatusCode != 200 || sess.CSRF == "" || time.Until(sess.ExpiresAt) < time.Hour {
		t.Fatalf("login: %d %+v", r.StatusCode, sess)
	}
	cookie := r.Header.Get("Set-Cookie")
	for _, want := range []string{server.SessionCookie + "=", "HttpOnly", "SameSite=Strict", "Secure", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("the cookie %q lacks %s", cookie, want)
		}
	}
	// The jar keeps a Secure cookie for http:// too only when told; log in
	// again over plain http as the browser would.
	r = call(t, browser, "POST", base+"/api/login", `{"key":"`+token+`"}`, nil, &sess)
	if strings.Contains(r.Header.Get("Set-Cookie"), "Secure") {
		t.Errorf("Secure over plain http: %s", r.Header.Get("Set-Cookie"))
	}
	var tasks map[string]any
	if r := call(t, browser, "GET", base+"/api/tasks", "", nil, &tasks); r.StatusCode != 200 {
		t.Fatalf("GET with the session: %d", r.StatusCode)
	}
	var again server.ConsoleSession
	if r := call(t, browser, "GET", base+"/api/session", "", nil, &again); r.StatusCode != 200 || again.CSRF != sess.CSRF {
		t.Errorf("GET /api/session: %d %+v, want the login's token", r.StatusCode, again)
	}

	dispatch := `{"client_id":"nobody","request":"x"}`
	if r := call(t, browser, "POST", base+"/api/dispatch", dispatch, nil, &errBody); r.StatusCode != http.StatusForbidden ||
		!strings.Contains(errBody["error"], "CSRF token") {
		t.Errorf("a change without the CSRF token: %d %v", r.StatusCode, errBody)
	}
	if r := call(t, browser, "POST", base+"/api/dispatch", dispatch, map[string]string{"X-CSRF-Token": sess.CSRF, "Origin": "https://evil.example"}, &errBody); r.StatusCode != http.StatusForbidden ||
		!strings.Contains(errBody["error"], "Origin https://evil.example is not this server's") {
		t.Errorf("a change from another origin: %d %v", r.StatusCode, errBody)
	}
	// With both, the change goes through (to its own error: no such device).
	if r := call(t, browser, "POST", base+"/api/dispatch", dispatch, map[string]string{"X-CSRF-Token": sess.CSRF, "Origin": base}, &errBody); r.StatusCode != http.StatusNotFound {
		t.Errorf("a change with the token from this origin: %d %v", r.StatusCode, errBody)
	}
	// A forged or altered cookie is refused.
	forged := &http.Client{}
	if r := call(t, forged, "GET", base+"/api/tasks", "", map[string]string{"Cookie": server.SessionCookie + "=9999999999.00.AAAA"}, &errBody); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", r.StatusCode)
	}

	if r := call(t, browser, "POST", base+"/api/logout", "", map[string]string{"X-CSRF-Token": sess.CSRF}, nil); r.StatusCode != 200 {
		t.Fatalf("logout: %d", r.StatusCode)
	}
	if r := call(t, browser, "GET", base+"/api/tasks", "", nil, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("after logout: %d", r.StatusCode)
	}
	if r := call(t, forged, "GET", base+"/api/tasks", "", map[string]string{"X-API-Key": token}, nil); r.StatusCode != 200 {
		t.Errorf("the key alone: %d", r.StatusCode)
	}

	// Five wrong keys in all from one address, then it must wait.
	for i := 0; i < 4; i++ {
		call(t, forged, "POST", base+"/api/login", `{"key":"wrong"}`, nil, nil)
	}
	r = call(t, forged, "POST", base+"/api/login", `{"key":"`+token+`"}`, nil, &errBody)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(errBody["error"], "too many wrong keys") {
		t.Errorf("after five wrong keys: %d %v", r.StatusCode, errBody)
	}
}

// progressScript runs one command that waits for the test (cat of a
// named pipe).
const progressScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "wait for the pipe"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "cat pipe"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "read it"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done"}}]
`

// TestServerStreamAndProgress: the server's stream starts with its
// clients and tasks, then tells of a new task, its end, and devices
// leaving; a running command's progress, through the server's hook,
// reaches its task's stream and GET /api/tasks/{id}, and is gone once
// the command ends; progress for a command no task runs is refused.
// Idle streams get keepalive comments.
func TestServerStreamAndProgress(t *testing.T) {
	cfg := scriptedConfig(t, progressScript)
	f := newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{}), KeepAlive: 20 * time.Millisecond})
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	connect(t, f.wsURL, "box", realDevice(t, dir), func(o *remote.Options) { o.HeartbeatInterval = 20 * time.Millisecond })

	all := f.openEvents(t, "/api/events", "")
	snap := decode[server.Snapshot](t, all.next())
	if len(snap.Clients) != 1 || snap.Clients[0].ClientID != "box" || snap.Clients[0].Status != "connected" || len(snap.Tasks) != 0 {
		t.Fatalf("snapshot: %+v", snap)
	}
	select {
	case c := <-all.comments:
		if c != "keepalive" {
			t.Errorf("comment %q", c)
		}
	case <-time.After(10 * time.Second):
		t.Error("no keepalive on an idle stream")
	}

	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "wait"}, &d)
	// The device's entry may change first (the server learns its tools).
	read := all.until(func(e server.Event) bool { return e.Type != server.EventClient })
	created := read[len(read)-1]
	if sum := decode[server.TaskSummary](t, created); created.Type != server.EventTask || sum.ID != d.TaskID || sum.Status != server.StatusRunning || sum.ClientID != "box" {
		t.Fatalf("new task: %s %s", created.Type, created.Data)
	}

	ts := f.openEvents(t, "/api/tasks/"+d.TaskID+"/events", "")
	var running dispatcher.CommandState
	ts.until(func(e server.Event) bool {
		if e.Type == server.EventCommand {
			running = decode[dispatcher.CommandState](t, e)
		}
		return running.State == "running" && running.ElapsedMS >= 0 && running.ToolName == "execute_command"
	})
	if err := f.srv.CommandProgress("box", server.ProgressInfo{CallID: running.CallID, Progress: 3, Total: 10, Message: "copying",
		Lines: []string{"file 3 of 10"}}); err != nil {
		t.Fatal(err)
	}
	var p server.ProgressInfo
	ts.until(func(e server.Event) bool {
		if e.Type == server.EventProgress {
			p = decode[server.ProgressInfo](t, e)
			return true
		}
		return false
	})
	if p.CallID != running.CallID || p.Progress != 3 || p.Total != 10 || p.Message != "copying" || len(p.Lines) != 1 || p.UpdatedAt.IsZero() {
		t.Errorf("progress event: %+v", p)
	}
	var info server.TaskInfo
	f.api(t, "GET", "/api/tasks/"+d.TaskID, nil, &info)
	if len(info.Progress) != 1 || info.Progress[0].Message != "copying" {
		t.Errorf("the task's progress in the API: %+v", info.Progress)
	}
	if err := f.srv.CommandProgress("box", server.ProgressInfo{CallID: "no-such-call"}); err == nil {
		t.Error("progress for an unknown command was taken")
	}

	if err := os.WriteFile(pipe, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	end := all.until(func(e server.Event) bool { return e.Type == server.EventEnd })
	if sum := decode[server.TaskSummary](t, end[len(end)-1]); sum.Status != server.StatusCompleted {
		t.Fatalf("end: %+v", sum)
	}
	var ended server.TaskInfo
	f.api(t, "GET", "/api/tasks/"+d.TaskID, nil, &ended)
	if len(ended.Progress) != 0 {
		t.Errorf("an ended command's progress is still shown: %+v", ended.Progress)
	}
	if err := f.srv.CommandProgress("box", server.ProgressInfo{CallID: running.CallID}); err == nil {
		t.Error("progress for an ended command was taken")
	}
}
