package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/hosttest"

	"github.com/chromedp/chromedp"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/console"
	"github.com/saucerhq/saucer/internal/files"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/internal/tokens"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/serve"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

const key = "console-test-key"

// chromium is Debian's browser; missing, the test skips, or fails under CI.
func chromium(t testing.TB) string {
	t.Helper()
	return hosttest.Program(t, "chromium", "chromium-browser")
}

// axeScript is axe-core from the console's lockfile (npm ci in
// console/web).
func axeScript(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join("web", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core is not installed: run npm ci in console/web (%v)", err)
		}
		t.Skip("axe-core is not installed (npm ci in console/web)")
	}
	return string(b)
}

// browser starts a headless chromium for the test, with a fresh profile
// and nothing reaching the network.
func browser(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true), chromedp.WindowSize(1200, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	return ctx
}

// site is a server with the console on a loopback port, a real device
// (Saucer's shell and files tools in a folder) connected over AIP, tasks
// recorded, and an eval report to serve.
type site struct {
	srv  *server.Server
	url  string
	dir  string // the device's folder
	runs string
}

// scripts picks each task's scripted model by its request. A script
// that starts with unpricedNoUsage plays a model without a price whose
// provider reports no token usage (Saucer counts the tokens).
type scripts map[string]string

// unpricedNoUsage marks a script as a model without a price
// (openai-compatible:local) whose replies carry no usage.
const unpricedNoUsage = "# unpriced, no usage reported\n"

func newSite(t testing.TB, byRequest scripts) *site {
	t.Helper()
	return newSiteWith(t, byRequest, func(srv *server.Server) http.Handler { return srv.Handler() })
}

// newSiteWith is newSite with the API that handler makes of the server
// (the constellations' beside it, say). A task whose request starts with
// a script's request plays that script (a constellation's node adds its
// dependencies' results to its task).
func newSiteWith(t testing.TB, byRequest scripts, handler func(*server.Server) http.Handler) *site {
	t.Helper()
	return newSiteOpts(t, byRequest, handler, func(*server.Options) {})
}

// newSiteOpts is newSiteWith with the server's options changed by set.
func newSiteOpts(t testing.TB, byRequest scripts, handler func(*server.Server) http.Handler, set func(*server.Options)) *site {
	t.Helper()
	s := &site{dir: t.TempDir(), runs: t.TempDir()}
	evalsDir := t.TempDir()
	writeEval(t, filepath.Join(evalsDir, "nightly"))
	cfgs, opts := map[string]*config.Config{}, map[string]session.Options{}
	for req, script := range byRequest {
		cfgs[req] = scriptConfig(t, script)
		if strings.HasPrefix(script, unpricedNoUsage) {
			sc, err := scripted.Parse([]byte(script), "yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfgs[req].Model = "openai-compatible:local"
			opts[req] = session.Options{Model: tokens.Counted(scripted.New(*sc), cfgs[req].Model)}
		}
	}
	newSession := func(spec server.SessionSpec) (server.Runner, error) {
		cfg, req := cfgs[spec.Request], spec.Request
		for r, c := range cfgs {
			if cfg == nil && strings.HasPrefix(spec.Request, r+"\n") {
				cfg, req = c, r
			}
		}
		if cfg == nil {
			return nil, fmt.Errorf("the test has no script for %q", spec.Request)
		}
		return server.RecordTo(s.runs, cfg, trajectory.Options{}, server.Sessions(cfg, opts[req]))(spec)
	}
	o := server.Options{Token: key, NewSession: newSession, RunsDir: s.runs, EvalsDir: evalsDir, Review: serve.Review(nil),
		CancelGrace: 200 * time.Millisecond, Logf: func(f string, a ...any) { t.Logf("server: "+f, a...) }}
	set(&o)
	s.srv, s.url = serveConsole(t, o, handler)
	connectDevice(t, "ws"+strings.TrimPrefix(s.url, "http")+"/ws", "box", s.dir)
	return s
}

// serveConsole starts a server with o and serves the console over the
// API that api makes of it (nil: the server's own) on a loopback port
// until the test ends, then shuts the server down. It returns the
// server and the console's URL.
func serveConsole(t testing.TB, o server.Options, api func(*server.Server) http.Handler) (*server.Server, string) {
	t.Helper()
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if api != nil {
		h = api(srv)
	}
	hs := httptest.NewServer(console.Handler(h))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx, "test over")
		hs.Close()
	})
	return srv, hs.URL
}

// connectDevice runs Saucer's device client with the shell and files
// tools in dir until the test ends; it reports running commands every
// 50 ms.
func connectDevice(t testing.TB, url, id, dir string) {
	t.Helper()
	fs, err := files.New(files.Options{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := client.New(context.Background(), []client.Server{
		{Namespace: "shell", Description: "Run shell commands on the device.", MCP: shell.New(shell.Options{Dir: dir})},
		{Namespace: "files", Description: "Read and write files.", MCP: fs},
	}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.New(dev, remote.Options{URL: url, Token: key, ClientID: id, HeartbeatInterval: 50 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Logf: func(f string, a ...any) { t.Logf(id+": "+f, a...) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; dev.Close() })
	select {
	case <-c.Connected():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not register", id)
	}
}

// scriptConfig is the default config with a scripted model playing
// script.
func scriptConfig(t testing.TB, script string) *config.Config {
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model = "scripted:" + path
	cfg.Agent.RetryBackoff = config.Duration(time.Millisecond)
	return cfg
}

// writeEval writes an eval's results directory with its reports.
func writeEval(t testing.TB, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	tr := &evals.TrialResult{Case: "hello", Trial: 1, Status: "FINISH", Success: true}
	r := &evals.Report{Suite: "nightly-demo", Cases: []evals.CaseReport{{ID: "hello", Trials: []*evals.TrialResult{tr}, Successes: 1}},
		Metrics: evals.Metrics{Cases: 1, Trials: 1, Successes: 1, SuccessRate: 1}}
	if err := evals.WriteReports(r, dir); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until the JavaScript expression is true in the page.
func waitFor(_ context.Context, expr string) step {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(10*time.Millisecond))
}

type step = chromedp.Action[chromedp.Void]

// hasText is an expression: an element matching sel contains text.
func hasText(sel, text string) string {
	s, _ := json.Marshal(sel)
	x, _ := json.Marshal(text)
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.textContent.includes(%s))`, s, x)
}

// run runs actions within a deadline, failing the test with what step.
func run(t *testing.T, ctx context.Context, what string, actions ...step) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, body)
	}
}

// get runs one action that returns a value, within a deadline.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// checkA11y runs axe-core on the page: no serious or critical violation.
func checkA11y(t *testing.T, ctx context.Context, axe, page string) {
	t.Helper()
	type violation struct {
		ID, Impact, Help string
		Nodes            []struct{ Target []string }
	}
	script := axe + `;axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => ({target: n.target}))})))`
	found := get(t, ctx, "axe on "+page, chromedp.Evaluate[[]violation](script, chromedp.EvalAwaitPromise))
	for _, v := range found {
		t.Errorf("%s: accessibility: %s (%s): %s at %v", page, v.ID, v.Impact, v.Help, v.Nodes)
	}
}
