package console_test

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"

	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/strategy"
)

// TestDeviceToolsOnAPhone: on a phone's screen, a device's page lists the
// tools the server asked the device for when it registered (no task has
// run), by app, with their annotations and streams; the search narrows
// them; the page fits the width and passes axe-core.
func TestDeviceToolsOnAPhone(t *testing.T) {
	axe := axeScript(t)
	s := newSite(t, scripts{})
	ctx := browser(t)
	run(t, ctx, "a phone", chromedp.Emulate(device.IPhone13))
	loggedIn(t, ctx, s.url)
	run(t, ctx, "the devices", chromedp.Navigate(s.url+"/#/devices"),
		waitFor(ctx, hasText("li.device .tools-count", "tools")),
		chromedp.Tap(chromedp.CSS(`li.device h2 a`)),
		waitFor(ctx, `location.hash === "#/devices/box"`),
		waitFor(ctx, hasText(".note", "asked of the device at")),
		waitFor(ctx, hasText(`li.tool[data-tool="shell.execute_command"] .hints`, "streams output")),
		waitFor(ctx, hasText(`li.tool[data-tool="shell.execute_command"] .hints`, "destructive")),
		waitFor(ctx, hasText(`li.tool[data-tool="files.read_file"] .hints`, "read-only")),
		waitFor(ctx, hasText(`section.ns h3`, "files")))
	if fits := get(t, ctx, "the width", chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`)); !fits {
		t.Error("the device's page is wider than the phone's screen")
	}
	checkA11y(t, ctx, axe, "a device's tools on a phone")
	all := get(t, ctx, "the tools", chromedp.Evaluate[int](`document.querySelectorAll("li.tool").length`))
	run(t, ctx, "search",
		chromedp.SendKeys(chromedp.CSS("#tool-q"), "read_file"),
		waitFor(ctx, `document.querySelectorAll("li.tool").length === 1`),
		waitFor(ctx, `!!document.querySelector('li.tool[data-tool="files.read_file"]')`),
		waitFor(ctx, hasText(".search [role=status]", "1 of ")))
	if all < 3 {
		t.Errorf("%d tools listed before the search", all)
	}
}

// plannerScript is the constellation agent's model: it plans build and
// check (after build), adds publish (after check) once build has
// completed, and finishes once check has.
const plannerScript = `
replies:
  - tool_calls:
      - {name: add_node, arguments: {id: build, device: box, task: "Build the report", apps: [shell]}}
      - {name: add_node, arguments: {id: check, device: box, task: "Check the report", apps: [shell]}}
      - {name: add_edge, arguments: {from: build, to: check}}
  - expect: "build completed on box"
    tool_calls:
      - {name: add_node, arguments: {id: publish, device: box, task: "Publish the report", apps: [shell]}}
      - {name: add_edge, arguments: {from: check, to: publish}}
  - expect: "check completed on box"
    tool_calls: [{name: finish_task, arguments: {result: "The report is built, checked and published."}}]
`

// nodeScript is a node's device task: a shell command, then the end.
func nodeScript(subtask, command, result string) string {
	return `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "` + subtask + `"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "` + command + `"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "` + result + `"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "` + result + `"}}]
`
}

// TestConstellationDrawnLive: a constellation started from the page is
// drawn as it runs: its nodes with their device and state (build
// running while check waits after it), the dependency edges; build's end
// turns it completed and starts check; the planner's first plan (made
// before the page opened its stream) is in its edits, and its edit that adds
// publish appears, in the graph and in the edits, as it happens; its
// FINISH on check's end, while publish runs, shows as declared with the
// nodes still running, and final at the end; a node's task opens from
// the graph; the end shows the answer, and the list shows the
// constellation. axe-core passes on both pages.
func TestConstellationDrawnLive(t *testing.T) {
	axe := axeScript(t)
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scripted.Parse([]byte(plannerScript), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := newSiteWith(t, scripts{
		"Build the report":   nodeScript("Build the report", "cat build.pipe", "report.txt built"),
		"Check the report":   nodeScript("Check the report", "cat check.pipe", "report.txt checked"),
		"Publish the report": nodeScript("Publish the report", "cat publish.pipe", "report published"),
	}, func(srv *server.Server) http.Handler {
		o, err := constellation.New(constellation.Options{Devices: constellation.ServerDevices{Server: srv},
			NewPlanner: func(*constellation.Graph) (constellation.Stepper, error) {
				return constellation.NewPlanner(constellation.PlannerOptions{Model: scripted.New(*plan), Prompts: set,
					Limits: strategy.Limits{RetryBackoff: 1}})
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Stop)
		return constellation.ServerHandler(o, srv, srv.Handler())
	})
	for _, p := range []string{"build.pipe", "check.pipe", "publish.pipe"} {
		if err := syscall.Mkfifo(filepath.Join(s.dir, p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := browser(t)
	loggedIn(t, ctx, s.url)
	node := func(id, status string) string {
		return `!!document.querySelector('svg g.node[data-node="` + id + `"][data-status="` + status + `"][data-device="box"]')`
	}
	run(t, ctx, "the constellations", chromedp.Navigate(s.url+"/#/constellations"), waitFor(ctx, hasText("main", "No constellation yet.")))
	checkA11y(t, ctx, axe, "constellations")
	run(t, ctx, "start one",
		chromedp.SendKeys(chromedp.CSS("#c-request"), "Build, check and publish the report"),
		chromedp.Click(chromedp.CSS(`form.dispatch button[type=submit]`)),
		waitFor(ctx, `location.hash.startsWith("#/constellations/")`),
		waitFor(ctx, hasText("article.constellation h1", "Build, check and publish the report")),
		waitFor(ctx, node("build", "running")), waitFor(ctx, node("check", "pending")),
		// The first plan, made before the page could listen, is shown.
		waitFor(ctx, hasText("ol.edits li.ok", "add_node id build, device box")),
		waitFor(ctx, hasText("ol.edits li.ok", "add_edge from build, to check")),
		waitFor(ctx, `!!document.querySelector('svg path.edge[data-edge="build-check"]')`),
		waitFor(ctx, hasText(`table.nodes tr[data-node="check"]`, "build")))
	checkA11y(t, ctx, axe, "a constellation running")
	if err := os.WriteFile(filepath.Join(s.dir, "build.pipe"), []byte("built\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "build ends; the planner adds publish",
		waitFor(ctx, node("build", "completed")), waitFor(ctx, node("check", "running")),
		waitFor(ctx, node("publish", "pending")),
		waitFor(ctx, `!!document.querySelector('svg path.edge[data-edge="check-publish"]')`),
		waitFor(ctx, hasText("ol.edits li.ok", "add_node id publish, device box")),
		waitFor(ctx, hasText("ol.edits li.ok", "add_edge from check, to publish")))
	buildTask := get(t, ctx, "build's task link", chromedp.Evaluate[string](`document.querySelector('svg a g.node[data-node="build"]').parentNode.getAttribute("href")`))
	if err := os.WriteFile(filepath.Join(s.dir, "check.pipe"), []byte("checked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The planner finishes on check's end while publish still runs: its
	// FINISH is a declaration until the constellation ends.
	run(t, ctx, "the planner declares finish while publish runs",
		waitFor(ctx, node("check", "completed")), waitFor(ctx, node("publish", "running")),
		waitFor(ctx, hasText(`ol.edits .s-declared[data-declared="FINISH"]`, "FINISH declared · 1 node still running")))
	if n := get(t, ctx, "a final FINISH", chromedp.Evaluate[int](`document.querySelectorAll("ol.edits .s-finish").length`)); n != 0 {
		t.Errorf("%d final FINISH badges while publish runs", n)
	}
	if st := get(t, ctx, "the status", chromedp.Evaluate[string](`document.querySelector("article.constellation").dataset.status`)); st != "running" {
		t.Errorf("the constellation is %s while publish runs", st)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "publish.pipe"), []byte("published\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "the end",
		waitFor(ctx, hasText("article.constellation .result", "The report is built, checked and published.")),
		waitFor(ctx, hasText("ol.edits .s-finish", "FINISH")), waitFor(ctx, `!document.querySelector("ol.edits .s-declared")`),
		waitFor(ctx, node("check", "completed")), waitFor(ctx, node("publish", "completed")),
		waitFor(ctx, `document.querySelector("article.constellation").dataset.status === "completed"`))
	checkA11y(t, ctx, axe, "a constellation ended")
	run(t, ctx, "a node's task", chromedp.Navigate(s.url+"/"+buildTask),
		waitFor(ctx, hasText("article.task h1", "Build the report")), waitFor(ctx, hasText("article.task .status", "completed")))
	run(t, ctx, "the list", chromedp.Navigate(s.url+"/#/constellations"),
		waitFor(ctx, hasText("table.cons td", "Build, check and publish the report")),
		waitFor(ctx, hasText("table.cons td", "3 (3 done)")))
}
