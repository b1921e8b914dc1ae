package evals_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/hosttest"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/trajectory"
)

// screenshotTrial writes a trial whose model saw a 200x100 screenshot and
// clicked at (50, 25), and returns its result.
func screenshotTrial(t *testing.T, results string) *evals.TrialResult {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for x := 0; x < 200; x++ {
		img.Set(x, 50, color.RGBA{0, 0, 255, 255})
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	rel := "cases/gui/trial-1/trajectory"
	w, err := trajectory.Create(filepath.Join(results, rel), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{llm.System("sys"), {Role: llm.RoleUser, Content: "screen", Images: []llm.Image{{MIMEType: "image/png", Data: buf.Bytes()}}}}}
	click := command.Command{ToolName: "click", Namespace: "desktop", Parameters: map[string]any{"x": 50, "y": 25}}
	for _, e := range []trajectory.Event{
		{Type: trajectory.TypeSessionStart, Session: &trajectory.Session{Format: trajectory.Format, Task: "click the button"}},
		{Type: trajectory.TypeModelCall, Agent: "app:desktop#1", Step: 1, Call: &trajectory.Call{N: 1, Request: req, Response: &llm.Response{Message: llm.Assistant("click")}}},
		{Type: trajectory.TypeStep, Agent: "app:desktop#1", Role: "app", Step: 1, Status: "CONTINUE", Decision: &trajectory.Decision{Status: "CONTINUE", Thought: "The button is on the left."},
			Commands: []command.Command{click}, Results: []command.Result{command.Succeeded("c1", "clicked")}, Usage: &llm.Usage{PromptTokens: 7, CompletionTokens: 3}, DurationMS: 4},
		{Type: trajectory.TypeSessionEnd, End: &trajectory.End{Status: "FINISH"}},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return &evals.TrialResult{Case: "gui", Trial: 1, Status: "FINISH", Success: true, Trajectory: rel, Steps: 1}
}

func chromium(t *testing.T) string {
	t.Helper()
	return hosttest.Program(t, "chromium", "chromium-browser")
}

func TestHTMLReportInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	rep, err := runSuite(t, "testdata/checkers.yaml", dir, evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep.Cases = append(rep.Cases, evals.CaseReport{ID: "gui", Trials: []*evals.TrialResult{screenshotTrial(t, dir)}, Successes: 1})
	if err := evals.WriteReports(rep, dir); err != nil {
		t.Fatal(err)
	}
	// Count the steps the trajectories hold, to see each one in the page.
	wantSteps := 0
	for _, c := range rep.Cases {
		for _, tr := range c.Trials {
			wantSteps += len(readTrajectory(t, filepath.Join(dir, tr.Trajectory)).Of(trajectory.TypeStep))
		}
	}
	page := filepath.Join(dir, "report.html")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console output: %s", line)
		}
	}
	dom := stdout.String()
	if !strings.Contains(dom, `data-ready="yes"`) {
		t.Fatal("the report's script did not run to its end")
	}
	if n := len(regexp.MustCompile(`class="step[ "]`).FindAllString(dom, -1)); n != wantSteps || wantSteps < 20 {
		t.Errorf("the page shows %d steps, the trajectories hold %d", n, wantSteps)
	}
	// The walk shows one step per trial at a time.
	if n := strings.Count(dom, `class="step current"`); n != 11 {
		t.Errorf("%d current steps, want one per trial (11)", n)
	}
	for _, want := range []string{"The button is on the left.", `class="mark" style="left:25.00%;top:25.00%"`, "data:image/png;base64,",
		"files.write_file", "notes/hello.txt", "step 1 of", "expected_fail_but_finished", "40.0%"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Self-contained: nothing is loaded from elsewhere.
	html, _ := os.ReadFile(page)
	if regexp.MustCompile(`(src|href)="(https?:)?//`).Match(html) {
		t.Error("the report loads something from the network")
	}
}
