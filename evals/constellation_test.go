package evals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A constellation's recording is known by its first line, as a file or
// in a folder of its own; a task's run directory and other files are not
// one, and a folder of several asks for one by name.
func TestConstellationRecordingFound(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) string {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := `{"constellation":"c1","kind":"graph","version":0,"graph":{"id":"c1","request":"r","version":0,"status":"running","nodes":[],"edges":[]},"time":"2026-01-01T00:00:00Z"}` + "\n"
	one := write("runs/constellations/c1.jsonl", first+`{"constellation":"c1","kind":"end","version":1}`+"\n")
	write("task/trajectory.jsonl", `{"type":"session_start"}`+"\n")
	write("task/other.jsonl", first) // beside a trajectory: a task's folder
	notOne := write("other/events.jsonl", `{"kind":"graph"}`+"\n")
	for path, want := range map[string]string{
		one: one,
		filepath.Join(dir, "runs/constellations"): one,
		filepath.Join(dir, "task"):                "",
		notOne:                                    "",
		filepath.Join(dir, "other"):               "",
		filepath.Join(dir, "missing"):             "",
	} {
		got, err := ConstellationRecording(path)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", path, got, err, want)
		}
	}
	write("runs/constellations/c2.jsonl", strings.ReplaceAll(first, "c1", "c2"))
	if _, err := ConstellationRecording(filepath.Join(dir, "runs/constellations")); err == nil ||
		!strings.Contains(err.Error(), "holds 2 constellation recordings (c1.jsonl, c2.jsonl): name one of them") {
		t.Errorf("two recordings: %v", err)
	}
}

// Node checks and constellation cases' own checks are refused where they
// cannot be judged, with what to do instead.
func TestConstellationChecksValidated(t *testing.T) {
	const plan = `
    constellation:
      devices: [{id: d1}]
      plan: [{id: n1, device: d1, run: "true"}]`
	for _, tc := range []struct{ cases, want string }{
		{`
  - id: live
    task: t
    checks: [{node: {id: n1}}]`, "a node check needs a constellation"},
		{`
  - id: both
    task: t
    device: {recording: x.jsonl}` + plan, "not both"},
		{`
  - id: state
    task: t
    checks: [{state: {run: "true"}}]` + plan, "a state check goes under the device it reads"},
		{`
  - id: status
    task: t
    checks: [{node: {id: n1, status: done}}]` + plan, `node.status "done": use one of completed, failed`},
		{`
  - id: noid
    task: t
    checks: [{node: {status: failed}}]` + plan, "node: no id"},
		{`
  - id: result
    task: t
    checks: [{node: {id: n1, result: {}}}]` + plan, "node.result: set one of exact, contains, regex, number"},
		{`
  - id: ondevice
    task: t
    constellation:
      devices: [{id: d1, checks: [{node: {id: n1}}]}]
      plan: [{id: n1, device: d1, run: "true"}]`, "node checks go in the case's checks"},
	} {
		_, err := ParseSuite([]byte("name: s\ncases:" + tc.cases + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cases, err, tc.want)
		}
	}
	ok := `name: s
model: replay
cases:
  - id: replayed
    task: t
    device: {recording: runs/constellations/c1.jsonl}
    checks: [{node: {id: n1, status: failed, device: d1, result: {contains: refused}}}, {answer: {exact: "x"}}]
  - id: live
    task: t
    model: scripted
    checks: [{node: {id: n1}}, {answer: {contains: x}}]` + plan + "\n"
	if _, err := ParseSuite([]byte(ok)); err != nil {
		t.Error(err)
	}
}

// A node check reads the graph a constellation ended with.
func TestMatchNode(t *testing.T) {
	graph := []ConstellationNode{{ID: "a", Device: "d1", Status: "completed", Result: "42"}, {ID: "b", Device: "d2", Status: "failed", Error: "exit 3"}}
	exact := "42"
	for _, tc := range []struct {
		check NodeCheck
		pass  bool
		want  string
	}{
		{NodeCheck{ID: "a", Result: &AnswerCheck{Exact: &exact}}, true, ""},
		{NodeCheck{ID: "a", Device: "d2"}, false, "node a ended on d1, want d2"},
		{NodeCheck{ID: "b"}, false, "node b ended failed on d2, want completed: exit 3"},
		{NodeCheck{ID: "b", Status: "failed", Result: &AnswerCheck{Contains: "exit 3"}}, true, ""},
		{NodeCheck{ID: "c"}, false, `the graph has no node "c" (its nodes: a, b)`},
	} {
		pass, detail := matchNode(&tc.check, graph)
		if pass != tc.pass || !strings.Contains(detail, tc.want) {
			t.Errorf("%+v: %v %q, want %v %q", tc.check, pass, detail, tc.pass, tc.want)
		}
	}
	if pass, detail := matchNode(&NodeCheck{ID: "a"}, nil); pass || !strings.Contains(detail, "node checks need a constellation") {
		t.Errorf("no constellation: %v %q", pass, detail)
	}
}
