package desktop

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromiumCmd starts Debian's chromium on testdata/page.html with a
// profile in the shared desktop's folder (it outlives the test); as root
// it needs --no-sandbox.
func chromiumCmd(t testing.TB) []string {
	s, _ := sharedDesktop(t)
	page, err := filepath.Abs("testdata/page.html")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"chromium", "--no-sandbox", "--no-first-run", "--disable-gpu", "--password-store=basic",
		"--user-data-dir=" + filepath.Join(s.Dir(), "chromium"), "file://" + page}
}

// pageWindow waits until Chromium's window shows the page's title (it
// opens as "Untitled" and loads the page after).
func pageWindow(t testing.TB, d *Desktop, w Window) Window {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ws, err := d.Windows(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ws {
			if x.ref == w.ref && strings.Contains(x.Title, "Saucer test page") {
				return x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Chromium's window did not show the test page in a minute: %+v", ws)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestChromiumPage launches Chromium as a user would (no accessibility
// flag): launch_app turns its accessibility on, so that the page's
// controls are seen and driven like any others.
func TestChromiumPage(t *testing.T) {
	_, d, w := sharedApp(t, "chromium", chromiumCmd(t)...)
	ctx := context.Background()
	w = pageWindow(t, d, w)
	obs, err := d.Observe(ctx, w.ID, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := mustFind(t, obs, "entry", "Name")
	send := mustFind(t, obs, "push button", "Send")
	mustFind(t, obs, "heading", "Order form")
	mustFind(t, obs, "check box", "Gift wrap")
	mustFind(t, obs, "link", "Back to top")
	if _, err := d.Type(ctx, Target{ID: name.ID}, "", "Zoë", false); err != nil {
		t.Fatal(err)
	}
	eff, err := d.Click(ctx, Target{ID: send.ID}, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ch := range eff.Changed {
		if strings.Contains(ch.After, "Sent: Zoë") {
			found = true
		}
	}
	if !found {
		after, _ := d.Observe(ctx, w.ID, ObserveOptions{})
		t.Fatalf("pressing Send did not show \"Sent: Zoë\": %+v\n%s", eff.Changed, after.Text())
	}
}
