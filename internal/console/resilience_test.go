package console_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"
	"github.com/chromedp/chromedp/kb"

	"github.com/saucerhq/saucer/internal/console"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/session"
)

// approveScript writes a file once a person approves it.
const approveScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write ok to phone.txt"}}]
  - tool_calls:
      - {name: request_approval, arguments: {reason: "creates phone.txt"}}
      - {name: write_file, arguments: {path: phone.txt, content: "ok\n"}}
  - expect: "approved"
    tool_calls: [{name: finish_task, arguments: {result: "Wrote phone.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "phone.txt written"}}]
`

// TestApproveOnAPhone: on a phone's screen (an iPhone's size, touch) the
// console fits the width, and a person taps Approve: the command runs.
func TestApproveOnAPhone(t *testing.T) {
	axe := axeScript(t)
	s := newSite(t, scripts{"Write on the phone": approveScript})
	ctx := browser(t)
	run(t, ctx, "a phone", chromedp.Emulate(device.IPhone13))
	loggedIn(t, ctx, s.url)
	var d server.DispatchResponse
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Write on the phone"}`, &d)
	run(t, ctx, "the approval on the list", waitFor(ctx, hasText("li.pending.approval .reason", "creates phone.txt")),
		waitFor(ctx, hasText("#waiting", "1 waiting for you")))
	if fits := get(t, ctx, "the width", chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`)); !fits {
		t.Error("the page is wider than the phone's screen")
	}
	checkA11y(t, ctx, axe, "tasks on a phone")
	run(t, ctx, "tap Approve", chromedp.Tap(chromedp.CSS("li.pending.approval button.approve")),
		waitFor(ctx, hasText("#waiting", "0 waiting for you")))
	if info := waitEnded(t, s.srv, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task: %s %s", info.Status, info.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(s.dir, "phone.txt")); string(b) != "ok\n" {
		t.Errorf("phone.txt = %q", b)
	}
}

// TestConsoleAcrossARestart: the page shows a question waiting; the
// server stops (for a restart) and the page says it is reconnecting;
// a new server on the same store and address resumes the task, and the
// page, reconnected on its own, shows what the API shows: the task, its
// question asked again; answered there, the task completes.
func TestConsoleAcrossARestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "state.db")
	cfg := scriptConfig(t, waitScript)
	start := func(addr string) (*server.Server, func()) {
		st, err := store.Open(context.Background(), "sqlite:"+dbPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.(*store.SQL).Lock(context.Background()); err != nil {
			t.Fatal(err)
		}
		srv, err := server.New(server.Options{Token: key, Store: st, NewSession: server.Sessions(cfg, session.Options{}),
			Logf: func(f string, a ...any) { t.Logf("server: "+f, a...) }})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: console.Handler(srv.Handler())}
		go hs.Serve(ln)
		stop := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Suspend(ctx)
			hs.Close()
			st.Close()
		}
		return srv, stop
	}
	probe, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := probe.Addr().String()
	probe.Close()
	srv1, stop1 := start(addr)
	url := "http://" + addr
	connectDevice(t, "ws://"+addr+"/ws", "box", t.TempDir())
	ctx := browser(t)
	loggedIn(t, ctx, url)
	var d server.DispatchResponse
	postJSON(t, url+"/api/dispatch", `{"client_id":"box","request":"Wait for me"}`, &d)
	run(t, ctx, "the question before the restart", waitFor(ctx, hasText("li.pending.question label", "Shall I go on?")))
	_ = srv1
	stop1()
	run(t, ctx, "the page sees the server gone", waitFor(ctx, hasText(".conn", "reconnecting")))
	srv2, stop2 := start(addr)
	defer stop2()
	run(t, ctx, "the page back", waitFor(ctx, hasText(".conn", "live")),
		waitFor(ctx, hasText("li.pending.question label", "Shall I go on?")), waitFor(ctx, hasText("#waiting", "1 waiting for you")))
	// The same truth as the API.
	var info server.TaskInfo
	getJSON(t, url+"/api/tasks/"+d.TaskID, &info)
	var open []server.PendingInfo
	for _, p := range info.Pending {
		if p.Status == "open" {
			open = append(open, p)
		}
	}
	if len(open) != 1 || open[0].Question != "Shall I go on?" || info.Status != server.StatusRunning {
		t.Fatalf("the API after the restart: %s, open %+v", info.Status, open)
	}
	shown := get(t, ctx, "the item the page shows", chromedp.Evaluate[string](`document.querySelector("li.pending.question").dataset.pending`))
	if shown != open[0].ID {
		t.Errorf("the page shows question %s, the API %s", shown, open[0].ID)
	}
	run(t, ctx, "answer after the restart", chromedp.SendKeys(chromedp.CSS("li.pending.question input"), "yes"+kb.Enter),
		waitFor(ctx, hasText("#waiting", "0 waiting for you")))
	if info := waitEnded(t, srv2, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task after the restart: %s %s", info.Status, info.Error)
	}
}

// getJSON calls the API with the key.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
