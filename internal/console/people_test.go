package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
)

// outputScript runs a command that prints two lines, warns on stderr and
// exits 3.
const outputScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "Print and fail"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'first line\\nsecond line\\n'; echo 'a warning' >&2; exit 3"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "printed"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "done printing"}}]
`

// TestCommandOutputAsLines: a shell command's output shows as its
// stdout and stderr lines and its exit code, as saucer run prints it,
// not as the JSON the tool returns. axe-core passes.
func TestCommandOutputAsLines(t *testing.T) {
	axe := axeScript(t)
	s := newSite(t, scripts{"Print and fail": outputScript})
	var d server.DispatchResponse
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Print and fail"}`, &d)
	waitEnded(t, s.srv, d.TaskID)
	ctx := browser(t)
	loggedIn(t, ctx, s.url)
	run(t, ctx, "the task's output", chromedp.Navigate(s.url+"/#/tasks/"+d.TaskID),
		waitFor(ctx, hasText("article.task .status", "completed")),
		waitFor(ctx, hasText(".cmd-out pre.stdout", "first line\nsecond line")),
		waitFor(ctx, hasText(".cmd-out pre.stderr", "a warning")),
		waitFor(ctx, hasText(".cmd-out .exit", "exit code 3")))
	if page := get(t, ctx, "the steps' text", chromedp.TextContent(chromedp.CSS("section[aria-labelledby=steps-h]"))); strings.Contains(page, `"stdout"`) {
		t.Errorf("the steps show raw JSON:\n%s", page)
	}
	checkA11y(t, ctx, axe, "a command's output")
}

// TestThousandTasksForPeople: with 1,000 tasks and 100 devices in the
// store, the task list (under its h1) draws one page of 50 rows with the
// count of all, and dates; the first-useful-paint mark fires once those
// rows are drawn; search, the status filter and the pages narrow and move
// it; the device list (under its h1) is searched, counted and paged; the
// dispatch drop-down is searched. axe-core passes on both pages.
func TestThousandTasksForPeople(t *testing.T) {
	axe := axeScript(t)
	st := filledStore(t, 1000, 100)
	_, url := serveConsole(t, server.Options{Token: key, Store: st, NewSession: func(server.SessionSpec) (server.Runner, error) {
		return nil, fmt.Errorf("none")
	}}, nil)
	ctx := browser(t)
	loggedIn(t, ctx, url)
	run(t, ctx, "the list",
		waitFor(ctx, hasText("main h1", "Tasks")),
		waitFor(ctx, hasText(".count", "Showing 1–50 of 1000 tasks")),
		waitFor(ctx, `performance.getEntriesByName("saucer:listed").length === 1`))
	if n := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll("tr[data-task]").length`)); n != 50 {
		t.Errorf("%d rows drawn, want a page of 50", n)
	}
	if rows := get(t, ctx, "the mark", chromedp.Evaluate[int](`performance.getEntriesByName("saucer:listed")[0].detail.rows`)); rows != 50 {
		t.Errorf("the first-paint mark fired with %d rows drawn, want 50", rows)
	}
	nodes := get(t, ctx, "the DOM", chromedp.Evaluate[int](`document.getElementsByTagName("*").length`))
	t.Logf("the list of 1,000 tasks: %d DOM nodes", nodes)
	if nodes > 1500 {
		t.Errorf("the list of 1,000 tasks takes %d DOM nodes", nodes)
	}
	// The newest task first, with its date.
	year := fmt.Sprint(time.Now().Year())
	run(t, ctx, "dates", waitFor(ctx, hasText(`tr[data-task="task-0999"] td.when`, year)))
	checkA11y(t, ctx, axe, "1,000 tasks")
	run(t, ctx, "the next page", chromedp.Click(chromedp.CSS(`nav.pager button:last-child`)),
		waitFor(ctx, hasText(".count", "Showing 51–100 of 1000 tasks")), waitFor(ctx, hasText("nav.pager", "Page 2 of 20")),
		waitFor(ctx, `!!document.querySelector('tr[data-task="task-0949"]') && !document.querySelector('tr[data-task="task-0999"]')`))
	run(t, ctx, "search", chromedp.SendKeys(chromedp.CSS("#task-q"), "number 123:"),
		waitFor(ctx, hasText(".count", "Showing 1–1 of 1 task (1000 in all)")),
		waitFor(ctx, `document.querySelectorAll("tr[data-task]").length === 1 && !!document.querySelector('tr[data-task="task-0123"]')`))
	run(t, ctx, "filter", chromedp.Clear(chromedp.CSS("#task-q")), chromedp.SendKeys(chromedp.CSS("#task-q"), "x"), chromedp.KeyEvent("\b"),
		chromedp.SetValue(chromedp.CSS("#task-status"), "running"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#task-status").dispatchEvent(new Event("change", {bubbles: true}))`),
		waitFor(ctx, hasText(".count", "No task matches (of 1000)")),
		waitFor(ctx, hasText("#task-status option", "completed (1000)")))
	run(t, ctx, "the dispatch drop-down", chromedp.SendKeys(chromedp.CSS("#device-q"), "device-04"),
		waitFor(ctx, hasText(".dispatch [role=status]", "10 of 100 devices match")),
		waitFor(ctx, `document.querySelectorAll("#device option").length === 10`))

	run(t, ctx, "the devices", chromedp.Navigate(url+"/#/devices"),
		waitFor(ctx, hasText("main h1", "Devices")),
		waitFor(ctx, hasText(".count", "Showing 1–20 of 100 devices")),
		waitFor(ctx, `document.querySelectorAll("li.device").length === 20`),
		waitFor(ctx, hasText("li.device", "Last seen "+"")))
	height := get(t, ctx, "the height", chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
	t.Logf("the devices' page: %d px high", height)
	if lastSeen := get(t, ctx, "last seen", chromedp.Evaluate[string](`[...document.querySelectorAll("li.device p")].find(p => p.textContent.startsWith("Last seen")).textContent`)); !strings.Contains(lastSeen, year) {
		t.Errorf("a device's last seen has no date: %q", lastSeen)
	}
	checkA11y(t, ctx, axe, "100 devices")
	run(t, ctx, "search the devices", chromedp.SendKeys(chromedp.CSS("#device-search"), "device-042"),
		waitFor(ctx, hasText(".count", "Showing 1–1 of 1 device (100 in all)")),
		waitFor(ctx, hasText("li.device h2", "device-042")))
	run(t, ctx, "a device's page", chromedp.Click(chromedp.CSS("li.device h2 a")),
		waitFor(ctx, hasText("main h1", "device-042")))
}

// labelled is a server whose key is labelled dana.
func labelled(o *server.Options) { o.KeyLabel = "dana" }

// TestWhoActed: a server whose key is labelled "dana": an approval
// clicked in the console is recorded as answered by dana and the page
// says "you"; a task cancelled with its button is recorded as cancelled
// by dana, and its page shows only that (no Failed, no Answer) and says
// "Cancelled by you"; a replay of a run that had a person's approval
// says why it diverges.
func TestWhoActed(t *testing.T) {
	axe := axeScript(t)
	s := newSiteOpts(t, scripts{"Write on the phone": approveScript, "Wait for me": waitScript}, func(srv *server.Server) http.Handler { return srv.Handler() }, labelled)
	ctx := browser(t)
	loggedIn(t, ctx, s.url)
	var d server.DispatchResponse
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Write on the phone"}`, &d)
	run(t, ctx, "approve in the console", chromedp.Navigate(s.url+"/#/tasks/"+d.TaskID),
		waitFor(ctx, hasText("article.task .meta", "queued by you")),
		waitFor(ctx, hasText("li.pending.approval .reason", "creates phone.txt")),
		chromedp.Click(chromedp.CSS("li.pending.approval button.approve")),
		waitFor(ctx, hasText("ul.settled li", "creates phone.txt: approved (answered by you)")),
		waitFor(ctx, hasText("article.task .status", "completed")))
	info := waitEnded(t, s.srv, d.TaskID)
	if len(info.Pending) != 1 || info.Pending[0].SettledBy != "dana" {
		t.Errorf("the approval's record: %+v, want settled by dana", info.Pending)
	}

	var w server.DispatchResponse
	postJSON(t, s.url+"/api/dispatch", `{"client_id":"box","request":"Wait for me"}`, &w)
	run(t, ctx, "cancel in the console", chromedp.Navigate(s.url+"/#/tasks/"+w.TaskID),
		waitFor(ctx, hasText("li.pending.question label", "Shall I go on?")),
		chromedp.Click(chromedp.CSS("article.task button.decline")),
		waitFor(ctx, hasText("article.task .status", "cancelled")),
		waitFor(ctx, hasText(".failure.cancelled", "Cancelled by you")))
	ended := waitEnded(t, s.srv, w.TaskID)
	if ended.Error != "cancelled by dana" {
		t.Errorf("the cancelled task's error: %q, want cancelled by dana", ended.Error)
	}
	if n := get(t, ctx, "answers and failures", chromedp.Evaluate[int](`document.querySelectorAll("article.task > .result, article.task > .failure:not(.cancelled)").length`)); n != 0 {
		t.Errorf("the cancelled task shows %d answers or failures beside its cancellation", n)
	}
	checkA11y(t, ctx, axe, "a cancelled task")

	run(t, ctx, "replay the approved run", chromedp.Navigate(s.url+"/#/runs/"+d.TaskID),
		waitFor(ctx, hasText(".stepnav", "Step 1 of")),
		chromedp.Click(chromedp.CSS(".run .row button")),
		waitFor(ctx, hasText(".replay", "Diverged from the recording")),
		waitFor(ctx, hasText(".replay .why", "the recorded run had a person's approval. A replay has no person to ask, so the approval is declined")))
	checkA11y(t, ctx, axe, "a diverged replay")
}

// TestKilledCommandThatStreamed: a command that streamed its output and
// was stopped without the device reporting its result says that it was
// running (the time the device reported and the lines it streamed), not
// that the device did not report whether it ran.
func TestKilledCommandThatStreamed(t *testing.T) {
	cfg := scriptConfig(t, holdScript)
	srv, url := serveConsole(t, server.Options{Token: key, NewSession: server.Sessions(cfg, session.Options{}), CancelGrace: 100 * time.Millisecond}, nil)
	dev := dialDevice(t, "ws"+strings.TrimPrefix(url, "http")+"/ws", "held")
	ctx := browser(t)
	loggedIn(t, ctx, url)
	info, err := srv.Dispatch("held", "build it", "test", "test")
	if err != nil {
		t.Fatal(err)
	}
	var frame *aip.ServerMessage
	select {
	case frame = <-dev.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the command never reached the device")
	}
	call := frame.Actions[0].CallID
	run(t, ctx, "the task", chromedp.Navigate(url+"/#/tasks/"+info.ID), waitFor(ctx, `!!document.querySelector(".live-cmd")`))
	dev.conn.Send(context.Background(), &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientType: aip.ClientDevice, ClientID: "held",
		Progress: &aip.Progress{ResponseID: frame.ResponseID, CallID: call, State: "running", ElapsedMS: 1500, Message: "compiling 1\ncompiling 2"}})
	run(t, ctx, "its output streams", waitFor(ctx, hasText(".live-cmd pre.lines", "compiling 1\ncompiling 2")),
		chromedp.Click(chromedp.CSS("article.task button.decline")),
		waitFor(ctx, hasText("article.task .status", "cancelled")),
		waitFor(ctx, hasText("li.step .action pre.err", "it was running when it was stopped")))
	text := get(t, ctx, "the error", chromedp.TextContent(chromedp.CSS("li.step .action pre.err")))
	if strings.Contains(text, "did not report whether it ran") || !strings.Contains(text, "1.5 s") || !strings.Contains(text, "2 lines") {
		t.Errorf("the killed command says: %q", text)
	}
}
