package desktop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/desktoptest"
)

// slowSite serves, on loopback, the pages of the waiting tests: /slow
// answers late and sends its link late, as a loaded server does; /later
// adds its link from a script a while after it has loaded.
func slowSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		pause := func() {
			select {
			case <-time.After(1500 * time.Millisecond): // the slow server this page stands for
			case <-r.Context().Done():
			}
		}
		pause()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>Slow page</title></head><body><h1>Slow page</h1>`+strings.Repeat(" ", 2048))
		w.(http.Flusher).Flush()
		pause()
		fmt.Fprint(w, `<p><a href="/later">Next page</a></p></body></html>`)
	})
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>Start</title></head><body><p><a href="/slow">Go slow</a></p></body></html>`)
	})
	mux.HandleFunc("/later", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>Later page</title></head><body><h1>Later page</h1><p id="p"></p>
<script>setTimeout(function () {
  var a = document.createElement("a"); a.href = "#done"; a.textContent = "Late link";
  document.getElementById("p").appendChild(a);
  document.title = "Later page, done";
}, 1500);</script></body></html>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// launchChromium launches Chromium on url with a profile of its own, and
// stops it when the test ends.
func launchChromium(t *testing.T, d *Desktop, url string) *Effect {
	t.Helper()
	eff, err := d.Launch(context.Background(), []string{"chromium", "--no-sandbox", "--no-first-run", "--disable-gpu",
		"--password-store=basic", "--user-data-dir=" + t.TempDir(), url}, "")
	if err != nil {
		t.Fatal(err)
	}
	p := d.launched[len(d.launched)-1]
	t.Cleanup(p.stop)
	return eff
}

// TestLaunchWaitsForThePage launches Chromium on a page that is slow to
// answer and slower to finish: launch_app returns once the page has
// loaded, so that the first observation holds its link and the result
// says what was waited for.
func TestLaunchWaitsForThePage(t *testing.T) {
	desktoptest.Require(t, "chromium")
	_, d := sharedDesktop(t)
	srv := slowSite(t)
	eff := launchChromium(t, d, srv.URL+"/slow")
	// (On a loaded machine the page may have loaded before the window
	// was found: then nothing was seen loading.)
	if !strings.HasPrefix(eff.Ready, "ready after") || !strings.Contains(eff.Ready, "page loaded") ||
		strings.Contains(eff.Ready, "waited for") && !strings.Contains(eff.Ready, "waited for the browser's page to appear") {
		t.Errorf("launch_app's ready = %q; want it to say the page loaded, and what it waited for", eff.Ready)
	}
	t.Logf("ready: %s", eff.Ready)
	obs, err := d.Observe(context.Background(), eff.Window.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obs.Find("link", "Next page"); !ok {
		t.Fatalf("launch_app returned (ready: %q) before the page had loaded: the first observation has no link \"Next page\":\n%s", eff.Ready, obs.Text())
	}
}

// TestWaitFor waits for a link a page adds after it has loaded, and for
// the title it then sets; a control that never comes fails the wait
// after its timeout with what the window has.
func TestWaitFor(t *testing.T) {
	desktoptest.Require(t, "chromium")
	_, d := sharedDesktop(t)
	srv := slowSite(t)
	eff := launchChromium(t, d, srv.URL+"/later")
	ctx := context.Background()
	w := eff.Window.ID
	got, err := d.WaitFor(ctx, Wait{Window: w, Role: "link", Name: "late LINK", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `] link "Late link"`) || !strings.HasPrefix(got, "found after ") {
		t.Fatalf("wait_for the late link returned %q; want its line with its id", got)
	}
	got, err = d.WaitFor(ctx, Wait{Title: "Later page, done", Timeout: time.Minute})
	if err != nil || !strings.Contains(got, `"Later page, done`) {
		t.Fatalf("wait_for the title: %q, %v", got, err)
	}
	_, err = d.WaitFor(ctx, Wait{Window: w, Role: "link", Name: "No such link", Timeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not found in 0.5 s") || !strings.Contains(err.Error(), `link "Late link"`) {
		t.Fatalf("wait_for a link that never comes: %v; want \"not found in 0.5 s\" and the controls there", err)
	}
	if _, err := d.WaitFor(ctx, Wait{Window: w}); err == nil || !strings.Contains(err.Error(), "nothing to wait for") {
		t.Fatalf("wait_for nothing: %v", err)
	}
}

// TestObserveFollowsANavigation clicks a link to a page that is slow to
// answer and slower to finish, then observes until the new page's link
// shows: a tree read while a document was loading is never reused, so
// the page shows as soon as it is there (a reused tree held the empty or
// busy document until the tree's age ran out).
func TestObserveFollowsANavigation(t *testing.T) {
	desktoptest.Require(t, "chromium")
	_, d := sharedDesktop(t)
	srv := slowSite(t)
	eff := launchChromium(t, d, srv.URL+"/start")
	ctx := context.Background()
	w := eff.Window.ID
	obs, err := d.Observe(ctx, w, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	link, ok := obs.Find("link", "Go slow")
	if !ok {
		t.Fatalf("no link \"Go slow\" after launch_app (ready: %q):\n%s", eff.Ready, obs.Text())
	}
	if _, err := d.Click(ctx, Target{ID: link.ID}, "left", 1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		obs, err := d.Observe(ctx, w, ObserveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := obs.Find("link", "Next page"); ok {
			return
		}
		d.mu.Lock()
		loading := d.trees[eff.Window.ref].loading
		d.mu.Unlock()
		if obs.Reused && loading {
			t.Fatalf("an observation reused a tree read while a document was loading:\n%s", obs.Text())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow page's link never showed:\n%s", obs.Text())
		}
	}
}
