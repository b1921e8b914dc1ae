package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
)

// recordConstellations runs the bundled constellation suite with saucer
// eval (an agent server on loopback, three real shell devices each, the
// scripted planner and agents), and returns its results directory: each
// trial's folder holds its constellation's recording.
func recordConstellations(t *testing.T) string {
	t.Helper()
	res := t.TempDir()
	if out, code := saucer(t, "eval", "../../evals/suites/constellation.yaml", "-o", res, "-q", "--min-success", "1"); code != 0 {
		t.Fatalf("recording the constellations: exit %d\n%s", code, out)
	}
	return res
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tamper rewrites the recorded result of node's completed end.
func tamper(t *testing.T, from, to, node, was, now string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	changed := 0
	for line := range bytes.Lines(b) {
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		if o, ok := e["outcome"].(map[string]any); ok && e["kind"] == "node_end" && e["node"] == node && o["ok"] == true && o["result"] == was {
			o["result"] = now
			changed++
			line, _ = json.Marshal(e)
			line = append(line, '\n')
		}
		out.Write(line)
	}
	if changed != 1 {
		t.Fatalf("tampering: %d ends of %s with result %q, want 1", changed, node, was)
	}
	if err := os.WriteFile(to, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// saucer replay takes a constellation's recording (the file a server
// writes under RUNS/constellations/, or a folder holding one), replays it
// offline and prints its graph versions, edits, node ends and end; a
// tampered recording exits 1 with the divergence named.
func TestReplayConstellationRecording(t *testing.T) {
	res := recordConstellations(t)
	trial := filepath.Join(res, "cases", "failed-node-replanned", "trial-1")
	runs := filepath.Join(t.TempDir(), "constellations")
	rec := filepath.Join(runs, "c1.jsonl")
	copyFile(t, filepath.Join(trial, "constellation.jsonl"), rec)

	for _, p := range []string{rec, trial} {
		out, code := saucer(t, "replay", p)
		if code != 0 {
			t.Fatalf("replay %s: exit %d\n%s", p, code, out)
		}
		for _, want := range []string{
			`"Compute the value on linux2, or on linux3 if linux2 cannot, and keep it on linux1", offline`,
			"graph version 0: 0 node(s), 0 edge(s)",
			"planner: CONTINUE, 4 edit(s): add_node risky, add_node keep, add_edge risky→keep, finish_when_done",
			"risky on linux2: will be tried again: the task ended in FAIL",
			"risky on linux2: failed: the task ended in FAIL",
			"planner: CONTINUE, 2 edit(s): update_node risky, update_node keep",
			"risky on linux3: completed: 40",
			"keep on linux1: completed: 40",
			"- risky [completed] on linux3",
			"\ncompleted\n40\nidentical to the recording: 4 graph versions, 2 planner steps, 4 node attempts\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("replay %s: no %q in\n%s", p, want, out)
			}
		}
	}
	out, code := saucer(t, "replay", "-q", rec)
	if code != 0 || out != "completed\n40\nidentical to the recording: 4 graph versions, 2 planner steps, 4 node attempts\n" {
		t.Errorf("replay -q: exit %d\n%s", code, out)
	}

	// The runs folder with two recordings: name one.
	copyFile(t, filepath.Join(res, "cases", "report-copy-check", "trial-1", "constellation.jsonl"), filepath.Join(runs, "c2.jsonl"))
	out, code = saucer(t, "replay", runs)
	if code != 2 || !strings.Contains(out, "holds 2 constellation recordings (c1.jsonl, c2.jsonl): name one of them") {
		t.Errorf("a folder of two: exit %d\n%s", code, out)
	}

	// A node's recorded result changed: the replay parts where its
	// dependent was sent the recorded one.
	bad := filepath.Join(t.TempDir(), "tampered.jsonl")
	tamper(t, rec, bad, "risky", "40", "41")
	out, code = saucer(t, "replay", bad)
	if code != 1 || !strings.Contains(out, "risky on linux3: completed: 41") ||
		!strings.Contains(out, "DIVERGED from the recording at event 15 of 18 (node_start, graph version 6, node keep): node keep was sent") ||
		!strings.Contains(out, `risky (on linux3): 41"`) || strings.Contains(out, "identical") || strings.Contains(out, "keep on linux1") {
		t.Errorf("tampered: exit %d\n%s", code, out)
	}
	// The last node's result changed: the end's graph differs there.
	last := filepath.Join(t.TempDir(), "last.jsonl")
	tamper(t, rec, last, "keep", "40", "39")
	out, code = saucer(t, "replay", last)
	if code != 1 || !strings.Contains(out, "(end, graph version 7): the replayed graph differs from the recorded one: node keep: linux1/completed/1 \"39\", recorded linux1/completed/1 \"40\"") {
		t.Errorf("tampered end: exit %d\n%s", code, out)
	}

	// Offline only, and the task recordings' path as it was.
	if out, code := saucer(t, "replay", "--live-model", rec); code != 2 || !strings.Contains(out, "replays offline only") {
		t.Errorf("--live-model: exit %d\n%s", code, out)
	}
	if out, code := saucer(t, "replay", filepath.Join(t.TempDir(), "nothing")); code != 2 || !strings.Contains(out, "a recorded run directory?") {
		t.Errorf("no recording: exit %d\n%s", code, out)
	}
}

// An eval case takes a constellation's recording as its recorded device:
// it replays offline, its answer and node checks judge the graph it ends
// with, and a tampered recording fails the case as a divergence that
// names the node.
func TestEvalReplaysConstellationRecording(t *testing.T) {
	res := recordConstellations(t)
	dir := t.TempDir()
	copyFile(t, filepath.Join(res, "cases", "failed-node-replanned", "trial-1", "constellation.jsonl"), filepath.Join(dir, "runs", "constellations", "c1.jsonl"))
	tamper(t, filepath.Join(dir, "runs", "constellations", "c1.jsonl"), filepath.Join(dir, "tampered.jsonl"), "risky", "40", "41")
	suite := `name: replayed
model: replay
cases:
  - id: replayed
    task: "Compute the value on linux2, or on linux3 if linux2 cannot, and keep it on linux1"
    device: {recording: runs/constellations}
    checks:
      - {answer: {exact: "40"}}
      - {name: moved to its fallback, node: {id: risky, device: linux3, result: {exact: "40"}}}
      - {node: {id: keep, result: {number: 40}}}
  - id: wrong-expectation
    task: "the same recording, expected otherwise"
    device: {recording: runs/constellations/c1.jsonl}
    checks:
      - {name: risky failed, node: {id: risky, status: failed}}
  - id: tampered
    task: "a tampered recording"
    device: {recording: tampered.jsonl}
    checks:
      - {answer: {exact: "40"}}
`
	file := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(file, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	text, code := saucer(t, "eval", file, "-o", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, text)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep evals.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]*evals.TrialResult{}
	for _, c := range rep.Cases {
		got[c.ID] = c.Trials[0]
	}
	if tr := got["replayed"]; tr == nil || !tr.Success || len(tr.Checks) != 3 || !tr.IsRecording || tr.Model != "replay" ||
		tr.Answer != "40" || tr.Steps != 4 || !strings.HasSuffix(tr.Trajectory, "runs/constellations/c1.jsonl") {
		t.Errorf("replayed: %+v", tr)
	}
	if tr := got["wrong-expectation"]; tr == nil || tr.Success || tr.Failure != evals.FailCheckerFailed ||
		!strings.Contains(tr.Detail, "risky failed: node risky ended completed on linux3, want failed") {
		t.Errorf("wrong expectation: %+v", tr)
	}
	if tr := got["tampered"]; tr == nil || tr.Success || tr.Failure != evals.FailDivergence || tr.IsRecording ||
		!strings.Contains(tr.Detail, "the replay diverged from the recording: replay: event 15 (node_start, version 6): node keep was sent") {
		t.Errorf("tampered: %+v", tr)
	}
}
