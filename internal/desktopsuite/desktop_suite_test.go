// Package desktopsuite runs evals/suites/desktop.yaml on a private
// desktop. It is a package of its own so that its trials, which start
// real applications, have a test binary's time limit to themselves.
package desktopsuite

import (
	"context"
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/internal/display"
)

var (
	desktopAll   = flag.Bool("desktop-suite", false, "TestDesktopSuite runs every case of suites/desktop.yaml, not only its CI subset")
	desktopCases = flag.String("desktop-cases", "", "TestDesktopSuite runs these tasks (comma-separated ids) and their negative controls")
	desktopJobs  = flag.Int("desktop-jobs", 1, "trials TestDesktopSuite runs in parallel")
	desktopOut   = flag.String("desktop-results", "", "TestDesktopSuite keeps its results (reports, trajectories) in this directory, a folder per display server")
	desktopKind  = flag.String("desktop-display", "xvfb,sway", "TestDesktopSuite runs on these display servers (comma-separated): xvfb, sway")
)

// desktopApps are the programs suites/desktop.yaml runs (and checks with).
var desktopApps = []string{"localc", "lowriter", "loimpress", "soffice", "gnome-text-editor", "gnome-calculator", "chromium", "thunar", "drawing", "gsettings", "python3"}

// TestDesktopSuite runs the desktop suite on a private X11 desktop and on
// a headless sway: every task's scripted run passes its checks, which
// read what the application saved (or, for the calculator, shows, and for
// a page, the browser's history), and every negative control (a
// plausible wrong run, the same checks) fails them. By default it runs
// the tasks labelled ci and their controls; -desktop-suite runs them all.
func TestDesktopSuite(t *testing.T) {
	for _, name := range strings.Split(*desktopKind, ",") {
		kind, err := display.ParseKind(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(string(kind), func(t *testing.T) { runSuite(t, kind) })
	}
}

func runSuite(t *testing.T, kind display.Kind) {
	desktoptest.RequireKind(t, kind, desktopApps...)
	s := desktoptest.StartKind(t, kind)
	// One LibreOffice profile for the whole run, made once: each task
	// starts LibreOffice on it without first-run dialogs.
	if err := s.PrepareLibreOffice(); err != nil {
		t.Fatal(err)
	}
	// The suite's applications, its shell and its checks run on the
	// private desktop, with its home folder.
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	suite, err := evals.LoadSuite("../../evals/suites/desktop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var picked []string
	if *desktopCases != "" {
		picked = strings.Split(*desktopCases, ",")
	}
	if !*desktopAll {
		var cases []evals.Case
		for _, c := range suite.Cases {
			task := strings.TrimSuffix(c.ID, ".wrong")
			if picked != nil && slices.Contains(picked, task) {
				cases = append(cases, c)
				continue
			}
			if picked == nil && slices.ContainsFunc(suite.Cases, func(p evals.Case) bool { return p.ID == task && slices.Contains(p.Labels, "ci") }) {
				cases = append(cases, c)
			}
		}
		suite.Cases = cases
	}
	out := filepath.Join(*desktopOut, string(kind))
	if *desktopOut == "" {
		out = t.TempDir()
	}
	rep, err := evals.Run(context.Background(), suite, evals.Options{Results: out, Jobs: *desktopJobs})
	if err != nil {
		t.Fatal(err)
	}
	tasks, controls := 0, 0
	for _, c := range rep.Cases {
		negative := strings.HasSuffix(c.ID, ".wrong")
		for _, tr := range c.Trials {
			switch {
			case negative && (tr.Success || tr.Failure != evals.FailCheckerFailed):
				t.Errorf("negative control %s: want its checks failed, got success=%v %s %s", c.ID, tr.Success, tr.Failure, tr.Detail)
			case !negative && !tr.Success:
				t.Errorf("task %s: %s %s", c.ID, tr.Failure, tr.Detail)
			}
		}
		if negative {
			controls++
		} else {
			tasks++
		}
	}
	if tasks == 0 || tasks != controls {
		t.Errorf("%d tasks and %d negative controls ran: want as many of each, at least one", tasks, controls)
	}
	t.Logf("%d tasks, %d negative controls", tasks, controls)
}
