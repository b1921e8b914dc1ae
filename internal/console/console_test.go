package console_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/saucerhq/saucer/internal/console"
	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/server"
)

// tidyScript asks a question, has one command approved and one declined,
// then runs a long command that prints two lines and waits (cat of a
// named pipe the test writes).
const tidyScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Tidy the notes"}}]
  - tool_calls: [{name: ask_user, arguments: {question: "Which name should the notes have?"}}]
  - expect: "alpha"
    tool_calls:
      - {name: request_approval, arguments: {reason: "writes alpha.txt"}}
      - {name: execute_command, arguments: {command: "echo approved > alpha.txt"}}
  - tool_calls:
      - {name: request_approval, arguments: {reason: "writes declined.txt"}}
      - {name: execute_command, arguments: {command: "echo no > declined.txt"}}
  - expect: "declined"
    tool_calls: [{name: execute_command, arguments: {command: "echo tidying 1; echo tidying 2; cat pipe"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Notes tidied."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "The notes are tidy."}}]
`

// waitScript asks a question nobody answers: the task is cancelled.
const waitScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Ask first"}}]
  - tool_calls: [{name: ask_user, arguments: {question: "Shall I go on?"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "went on"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done"}}]
`

// buildScript runs a command that prints two lines and would run for
// ever: the person cancels it, and the agent finishes once it sees that.
const buildScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Build it"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "echo building 1; echo building 2; while true; do sleep 0.05; done"}}]
  - expect: "cancel"
    tool_calls: [{name: finish_task, arguments: {result: "The build was cancelled."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Build stopped as asked."}}]
`

// helloScript writes a file: its recording replays identically.
const helloScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write hello to hello.txt"}}]
  - tool_calls: [{name: write_file, arguments: {path: hello.txt, content: "hello\n"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "Wrote hello.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "hello.txt written"}}]
`

// countScript is a model without a price whose provider reports no
// usage: Saucer counts its tokens.
const countScript = unpricedNoUsage + `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write count to count.txt"}}]
    usage: {prompt_tokens: 0, completion_tokens: 0}
  - tool_calls: [{name: write_file, arguments: {path: count.txt, content: "1\n"}}]
    usage: {prompt_tokens: 0, completion_tokens: 0}
  - tool_calls: [{name: finish_task, arguments: {result: "Wrote count.txt"}}]
    usage: {prompt_tokens: 0, completion_tokens: 0}
  - tool_calls: [{name: finish_task, arguments: {result: "count.txt written"}}]
    usage: {prompt_tokens: 0, completion_tokens: 0}
`

// TestConsoleShowsCostTruthfully: a task whose model has no price shows
// "cost unknown" (never $0.0000) in the list, on its page and on its
// recording's page; tokens Saucer counted, because the provider reported
// none, are marked estimated. A free model's task shows its $0.0000.
func TestConsoleShowsCostTruthfully(t *testing.T) {
	// The tokenizer's vocabulary is read the first time something is
	// counted: seconds under -race on a loaded machine, not the task's.
	tokens.Count("openai-compatible:local", "warm up")
	s := newSite(t, scripts{"Count for me": countScript, "Write hello": helloScript})
	var unpriced, free server.DispatchResponse
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Count for me"}`, &unpriced)
	if info := waitEnded(t, s.srv, unpriced.TaskID); info.Status != server.StatusCompleted || !info.Usage.Estimated || info.Cost != "cost unknown" {
		t.Fatalf("the unpriced task: %s %s, usage %+v, cost %q", info.Status, info.Error, info.Usage, info.Cost)
	}
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Write hello"}`, &free)
	waitEnded(t, s.srv, free.TaskID)
	ctx := browser(t)
	row := func(id string) string { return `tr[data-task="` + id + `"] td.cost` }
	run(t, ctx, "the list",
		chromedp.Navigate(s.url+"/#key="+key), waitFor(ctx, hasText(".conn", "live")),
		waitFor(ctx, hasText(row(unpriced.TaskID), "cost unknown")), waitFor(ctx, hasText(row(free.TaskID), "$0.0000")))
	run(t, ctx, "the unpriced task",
		chromedp.Navigate(s.url+"/#/tasks/"+unpriced.TaskID), waitFor(ctx, hasText("article.task .status", "completed")),
		waitFor(ctx, hasText(".usage", "cost unknown")), waitFor(ctx, hasText(".usage", "estimated: the provider reported none")),
		waitFor(ctx, hasText(".usage", "~")), waitFor(ctx, hasText("li.step .tokens", "(estimated)")))
	run(t, ctx, "its recording",
		chromedp.Navigate(s.url+"/#/runs/"+unpriced.TaskID), waitFor(ctx, hasText(".stepnav", "Step 1 of")),
		waitFor(ctx, hasText(".usage", "cost unknown")), waitFor(ctx, hasText(".usage", "estimated")))
	if page := get(t, ctx, "the recording's text", chromedp.TextContent(chromedp.CSS("main"))); strings.Contains(page, "$0.0000") {
		t.Errorf("the unpriced run shows $0.0000:\n%s", page)
	}
}

// TestConsoleInBrowser drives the console in Debian's chromium as a person
// would: a wrong key is refused and the right one lets in; a task is
// dispatched from the page; its question is answered and one approval
// approved (the command runs) and one declined with a key (the command
// does not run); a long command is seen running, its output lines
// streaming in; the steps come in with their outputs; a task is
// cancelled; another task's long command is cancelled with its button
// (the task goes on and completes); a recording is walked step by step
// and replayed; an eval report opens. Each page passes axe-core without a
// serious or critical violation.
func TestConsoleInBrowser(t *testing.T) {
	axe := axeScript(t)
	s := newSite(t, scripts{"Tidy the notes": tidyScript, "Wait for me": waitScript, "Write hello": helloScript,
		"Build it": buildScript})
	if err := syscall.Mkfifo(filepath.Join(s.dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)

	// Login: refused, then let in.
	run(t, ctx, "the login page", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#key")))
	checkA11y(t, ctx, axe, "login")
	run(t, ctx, "a wrong key",
		chromedp.SendKeys(chromedp.CSS("#key"), "not-the-key"), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		waitFor(ctx, hasText(`[role=alert]`, "wrong key: the console takes the server's API key")))
	run(t, ctx, "the right key",
		chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		waitFor(ctx, hasText(".conn", "live")), waitFor(ctx, hasText("#device option", "box (connected)")))
	checkA11y(t, ctx, axe, "tasks")

	// Dispatch from the page; the task's page opens and its question waits.
	run(t, ctx, "dispatch",
		chromedp.SendKeys(chromedp.CSS("#request"), "Tidy the notes"), chromedp.Click(chromedp.CSS(`form.dispatch button[type=submit]`)),
		waitFor(ctx, `location.hash.startsWith("#/tasks/")`), waitFor(ctx, hasText("article.task h1", "Tidy the notes")),
		waitFor(ctx, hasText("li.pending.question label", "Which name should the notes have?")),
		waitFor(ctx, hasText("#waiting", "1 waiting for you")))
	checkA11y(t, ctx, axe, "task with a question")
	run(t, ctx, "answer the question",
		chromedp.SendKeys(chromedp.CSS("li.pending.question input"), "alpha"+kb.Enter),
		waitFor(ctx, hasText("li.pending.approval .reason", "writes alpha.txt")),
		waitFor(ctx, hasText("ul.settled li", "Which name should the notes have? → alpha")))
	run(t, ctx, "approve with the button",
		chromedp.Click(chromedp.CSS("li.pending.approval button.approve")),
		waitFor(ctx, hasText("li.pending.approval .reason", "writes declined.txt")),
		waitFor(ctx, hasText("ul.settled li", "writes alpha.txt: approved")))
	run(t, ctx, "decline with the d key",
		chromedp.KeyEvent("d"),
		waitFor(ctx, hasText("ul.settled li", "writes declined.txt: declined")))

	// The long command: seen running, with its elapsed time and the
	// output lines it has printed so far, before it ends.
	run(t, ctx, "the long command runs",
		waitFor(ctx, hasText(`.live-cmd[data-state="running"]`, "shell.execute_command running")),
		waitFor(ctx, hasText(`.live-cmd[data-state="running"] .elapsed`, "running for")),
		waitFor(ctx, hasText(`.live-cmd[data-state="running"] pre.lines`, "tidying 1\ntidying 2")))
	checkA11y(t, ctx, axe, "task with a running command")
	if err := os.WriteFile(filepath.Join(s.dir, "pipe"), []byte("streamed-ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "the steps and the end",
		waitFor(ctx, hasText("article.task .status", "completed")),
		waitFor(ctx, hasText(".result", "The notes are tidy.")),
		waitFor(ctx, hasText("li.step .action.success", `echo approved > alpha.txt`)),
		waitFor(ctx, hasText("li.step .action pre.out", "streamed-ok")),
		waitFor(ctx, hasText("li.step .action pre.err", "not run: the user declined to approve it")),
		waitFor(ctx, hasText(".usage", "% of the prompt cached")))
	if b, err := os.ReadFile(filepath.Join(s.dir, "alpha.txt")); err != nil || string(b) != "approved\n" {
		t.Errorf("the approved command: alpha.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "declined.txt")); err == nil {
		t.Error("the declined command ran: declined.txt exists")
	}
	checkA11y(t, ctx, axe, "ended task")
	tidyURL := get(t, ctx, "the task's address", chromedp.Location())

	// Cancel a task that waits for an answer.
	run(t, ctx, "dispatch the task to cancel",
		chromedp.Navigate(s.url+"/#/tasks"), waitFor(ctx, hasText(".conn", "live")),
		chromedp.SendKeys(chromedp.CSS("#request"), "Wait for me"), chromedp.Click(chromedp.CSS(`form.dispatch button[type=submit]`)),
		waitFor(ctx, hasText("li.pending.question label", "Shall I go on?")),
		chromedp.Click(chromedp.CSS("article.task button.decline")),
		waitFor(ctx, hasText("article.task .status", "cancelled")),
		waitFor(ctx, hasText(".failure.cancelled", "Cancelled by you")),
		waitFor(ctx, hasText("ul.settled li", "Shall I go on? → (no answer) (withdrawn")))

	// Cancel one command: its output streams in, the button stops it, and
	// the task goes on to complete.
	run(t, ctx, "dispatch the build",
		chromedp.Navigate(s.url+"/#/tasks"), waitFor(ctx, hasText(".conn", "live")),
		chromedp.SendKeys(chromedp.CSS("#request"), "Build it"), chromedp.Click(chromedp.CSS(`form.dispatch button[type=submit]`)),
		waitFor(ctx, hasText("article.task h1", "Build it")),
		waitFor(ctx, hasText(`.live-cmd[data-state="running"] pre.lines`, "building 1\nbuilding 2")))
	run(t, ctx, "cancel the command",
		chromedp.Click(chromedp.CSS(`.live-cmd[data-state="running"] button.cancel-cmd`)),
		waitFor(ctx, hasText("article.task .status", "completed")),
		waitFor(ctx, hasText(".result", "Build stopped as asked.")),
		waitFor(ctx, `document.querySelectorAll(".live-cmd").length === 0`),
		waitFor(ctx, hasText("li.step .action pre.err", "cancel")))

	// Devices.
	run(t, ctx, "devices", chromedp.Navigate(s.url+"/#/devices"), waitFor(ctx, hasText("li.device h2", "box")),
		waitFor(ctx, hasText("li.device .apps dt", "shell")), waitFor(ctx, hasText("li.device", "Idle")))
	checkA11y(t, ctx, axe, "devices")

	// A recording: walked step by step, replayed identically.
	var d server.DispatchResponse
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Write hello"}`, &d)
	waitEnded(t, s.srv, d.TaskID)
	run(t, ctx, "the runs", chromedp.Navigate(s.url+"/#/runs"), waitFor(ctx, hasText("td a", "Write hello")))
	checkA11y(t, ctx, axe, "runs")
	run(t, ctx, "the recording",
		chromedp.Navigate(s.url+"/#/runs/"+d.TaskID), waitFor(ctx, hasText(".stepnav", "Step 1 of 4")),
		waitFor(ctx, hasText("li.step .action", `files.write_file{"content":"hello\n","path":"hello.txt"}`)),
		chromedp.Click(chromedp.CSS(".stepnav button:last-child")), waitFor(ctx, hasText(".stepnav", "Step 2 of 4")),
		waitFor(ctx, hasText("li.step .result", "Result: Wrote hello.txt")),
		chromedp.KeyEvent("k"), waitFor(ctx, hasText(".stepnav", "Step 1 of 4")),
		chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), waitFor(ctx, hasText(".stepnav", "Step 3 of 4")),
		waitFor(ctx, hasText("li.step .head", "host step 1")))
	checkA11y(t, ctx, axe, "recording")
	run(t, ctx, "replay", chromedp.Click(chromedp.CSS(".run .row button")),
		waitFor(ctx, hasText(".replay", "Identical to the recording: 4 model calls")))
	// The tidy task's recording is linked from its page.
	run(t, ctx, "the tidy task's recording", chromedp.Navigate(tidyURL), chromedp.Click(chromedp.CSS(`a[href^="#/runs/"]`)),
		waitFor(ctx, hasText(".run h1", "Tidy the notes")), waitFor(ctx, hasText(".stepnav", "Step 1 of")))

	// An eval report.
	run(t, ctx, "the evals", chromedp.Navigate(s.url+"/#/evals"), waitFor(ctx, hasText("td", "nightly-demo")),
		waitFor(ctx, hasText("td", "100.0%")))
	checkA11y(t, ctx, axe, "evals")
	href := get(t, ctx, "the report's link", chromedp.AttributeValue(chromedp.CSS(`a.file[href$="report.html"]`), "href")).Value
	run(t, ctx, "the report", chromedp.Navigate(s.url+href), waitFor(ctx, hasText("h1", "nightly-demo")))
}

// postJSON calls the API with the key.
func postJSON(t *testing.T, url, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if err := jsonUnmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// waitEnded waits for a task to end (two minutes at most: the deadline
// catches a hang, not a slow machine).
func waitEnded(t *testing.T, srv *server.Server, id string) server.TaskInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := srv.Wait(ctx, id)
	if err != nil || info.Status == server.StatusRunning {
		t.Fatalf("task %s: %s %v", id, info.Status, err)
	}
	return info
}

// TestAssetsEmbedded: the page and its assets come from the binary, with
// a policy that loads nothing from elsewhere; the API is behind it.
func TestAssetsEmbedded(t *testing.T) {
	h := console.Handler(http.NotFoundHandler())
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css"} {
		rec := newRecorder()
		h.ServeHTTP(rec, httpGet(path))
		if rec.code != 200 || rec.body.Len() == 0 {
			t.Errorf("GET %s: %d, %d bytes", path, rec.code, rec.body.Len())
		}
	}
	rec := newRecorder()
	h.ServeHTTP(rec, httpGet("/"))
	page := rec.body.String()
	if !strings.Contains(page, `src="/assets/app.js"`) || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page loads from elsewhere:\n%s", page)
	}
	if csp := rec.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("policy: %q", csp)
	}
	again := newRecorder()
	req := httpGet("/assets/app.js")
	req.Header.Set("If-None-Match", rec.header.Get("ETag"))
	h.ServeHTTP(again, httpGet("/assets/app.js"))
	etag := again.header.Get("ETag")
	cached := newRecorder()
	req = httpGet("/assets/app.js")
	req.Header.Set("If-None-Match", etag)
	h.ServeHTTP(cached, req)
	if cached.code != http.StatusNotModified {
		t.Errorf("a cached asset: %d", cached.code)
	}
	api := newRecorder()
	h.ServeHTTP(api, httpGet("/api/health"))
	if api.code != http.StatusNotFound {
		t.Errorf("/api/ did not go to the API handler: %d", api.code)
	}
	if console.Size() > 200<<10 {
		t.Errorf("the console's assets take %d bytes; keep them small", console.Size())
	}
}
