package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
)

// askScript asks the user which file, then has a write approved, then
// (after the task ends) nothing more.
const askScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write the file the user names."}}]
  - tool_calls: [{name: ask_user, arguments: {question: "Which file?"}}]
  - expect: "The user answered: out.txt"
    tool_calls:
      - {name: request_approval, arguments: {reason: "creates out.txt"}}
      - {name: write_file, arguments: {path: out.txt, content: "yes\n"}}
  - expect: "approved"
    tool_calls: [{name: finish_task, arguments: {result: "Wrote out.txt."}}]
  - tool_calls: [{name: finish_task, arguments: {result: "out.txt written."}}]
`

func pendingSetup(t *testing.T, script string, ask time.Duration) (*fixture, string) {
	t.Helper()
	cfg := scriptedConfig(t, script)
	f := newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{}), AskTimeout: ask})
	dir := t.TempDir()
	connect(t, f.wsURL, "box", realDevice(t, dir), nil)
	return f, dir
}

// waitPending waits until the server running the task (this one, or
// another of the test's) says its n-th question or approval waits, and
// returns the task's list as this server shows it.
func (f *fixture) waitPending(t *testing.T, task string, n int) []server.PendingInfo {
	t.Helper()
	f.logs.waitFor(t, 1, "task "+task+": ", fmt.Sprintf(" %d from ", n), " is waiting")
	var list []server.PendingInfo
	f.api(t, "GET", "/api/tasks/"+task+"/pending", nil, &list)
	if len(list) < n || list[n-1].Status != "open" {
		t.Fatalf("task %s: item %d is said to wait, but the list is %+v", task, n, list)
	}
	return list
}

// TestQuestionsAndApprovalsThroughTheAPI: a remote task's agents ask a
// question and an approval; a person answers both over the API, before
// anything runs; answering twice, or after the end, is refused.
func TestQuestionsAndApprovalsThroughTheAPI(t *testing.T) {
	f, dir := pendingSetup(t, askScript, time.Minute)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d)

	q := f.waitPending(t, d.TaskID, 1)[0]
	if q.Kind != "question" || q.Question != "Which file?" || !strings.HasPrefix(q.Agent, "app:files") {
		t.Fatalf("question: %+v", q)
	}
	var bad map[string]string
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+q.ID, map[string]bool{"approve": true}, &bad); code != http.StatusBadRequest ||
		!strings.Contains(bad["error"], `is a question: send {"answer": "..."}`) {
		t.Errorf("approving a question: %d %v", code, bad)
	}
	var got server.PendingInfo
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+q.ID, map[string]string{"answer": "out.txt"}, &got); code != 200 || got.Status != "answered" {
		t.Fatalf("answer: %d %+v", code, got)
	}
	var twice map[string]any
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+q.ID, map[string]string{"answer": "other.txt"}, &twice); code != http.StatusConflict ||
		!strings.Contains(twice["error"].(string), "already settled: question 1 was answered at") {
		t.Errorf("answering twice: %d %v", code, twice)
	}

	a := f.waitPending(t, d.TaskID, 2)[1]
	if a.Kind != "approval" || a.Reason != "creates out.txt" || len(a.Commands) != 1 || a.Commands[0].ToolName != "write_file" {
		t.Fatalf("approval: %+v", a)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Fatal("out.txt exists before the approval")
	}
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+a.ID, map[string]bool{"approve": true}, &got)
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusCompleted {
		t.Fatalf("task %s: %s", info.Status, info.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "yes\n" {
		t.Errorf("out.txt = %q", b)
	}
	if len(info.Pending) != 2 || info.Pending[1].Approved == nil || !*info.Pending[1].Approved || info.Pending[0].Answer != "out.txt" {
		b, _ := json.Marshal(info.Pending)
		t.Errorf("the task's record: %s", b)
	}
	var late map[string]any
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/9", map[string]bool{"approve": true}, &late); code != http.StatusNotFound {
		t.Errorf("an unknown item: %d %v", code, late)
	}
}

// TestLongPoll: GET /api/tasks/{id}?wait= answers at the end of its wait
// while the task runs, and as soon as the task ends when it ends first;
// Server.Wait, with no deadline, returns when the task has ended; a wait
// that is not a duration is refused with what to send.
func TestLongPoll(t *testing.T) {
	f, _ := pendingSetup(t, askScript, time.Minute)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d)
	q := f.waitPending(t, d.TaskID, 1)[0]

	// The task waits on a person: the poll's wait runs out first.
	var info server.TaskInfo
	if code := f.api(t, "GET", "/api/tasks/"+d.TaskID+"?wait=50ms", nil, &info); code != 200 || info.Status != server.StatusRunning {
		t.Fatalf("a poll while the task waits on a person: %d %s", code, info.Status)
	}
	var bad map[string]string
	for _, w := range []string{"soon", "NaN", "-3", "Inf"} {
		if code := f.api(t, "GET", "/api/tasks/"+d.TaskID+"?wait="+w, nil, &bad); code != http.StatusBadRequest ||
			!strings.Contains(bad["error"], `wait="`+w+`" is not a duration (use wait=10s`) {
			t.Errorf("wait=%s: %d %v", w, code, bad)
		}
	}
	if code := f.api(t, "GET", "/api/tasks/no-such-task?wait=1s", nil, &bad); code != http.StatusNotFound {
		t.Errorf("a poll of an unknown task: %d %v", code, bad)
	}

	type polled struct {
		info server.TaskInfo
		code int
	}
	long := make(chan polled, 1)
	go func() {
		var p polled
		p.code = f.api(t, "GET", "/api/tasks/"+d.TaskID+"?wait=25", nil, &p.info) // seconds, as a number
		long <- p
	}()
	waited := make(chan server.TaskInfo, 1)
	go func() {
		info, err := f.srv.Wait(context.Background(), d.TaskID)
		if err != nil {
			t.Error(err)
		}
		waited <- info
	}()
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+q.ID, map[string]string{"answer": "out.txt"}, nil)
	a := f.waitPending(t, d.TaskID, 2)[1]
	select {
	case p := <-long:
		t.Fatalf("the long poll answered before the task ended: %d %s", p.code, p.info.Status)
	case info := <-waited:
		t.Fatalf("Wait returned before the task ended: %s", info.Status)
	default:
	}
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+a.ID, map[string]bool{"approve": true}, nil)
	if p := <-long; p.code != 200 || p.info.Status != server.StatusCompleted || p.info.Result == "" || len(p.info.Pending) != 2 {
		t.Errorf("the long poll: %d %s %q, %d pending", p.code, p.info.Status, p.info.Result, len(p.info.Pending))
	}
	if info := <-waited; info.Status != server.StatusCompleted || info.EndedAt == nil {
		t.Errorf("Wait: %s, ended %v", info.Status, info.EndedAt)
	}
}

// A question nobody answers takes its default when the timeout comes, the
// record says so, and the agents go on.
func TestUnansweredQuestionTimesOut(t *testing.T) {
	f, _ := pendingSetup(t, `
replies:
  - tool_calls: [{name: ask_user, arguments: {question: "Which colour?"}}]
  - expect: "nobody answered within"
    tool_calls: [{name: fail_task, arguments: {reason: "no colour was given"}}]
`, 50*time.Millisecond)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "paint"}, &d)
	info := f.waitTask(t, d.TaskID)
	if info.Status != server.StatusFailed || len(info.Pending) != 1 || info.Pending[0].Status != "timed_out" || info.Pending[0].SettledBy != "timeout" {
		b, _ := json.Marshal(info)
		t.Fatalf("task: %s", b)
	}
	var gone map[string]any
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/1", map[string]string{"answer": "red"}, &gone); code != http.StatusGone {
		t.Errorf("answering a timed-out question of an ended task: %d %v", code, gone)
	}
}

// A task cancelled while a question is open withdraws it; answering it
// then is refused as too late.
func TestAnswerAfterTheTaskEnded(t *testing.T) {
	f, _ := pendingSetup(t, `
replies:
  - tool_calls: [{name: ask_user, arguments: {question: "Which colour?"}}]
`, time.Minute)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "paint"}, &d)
	f.waitPending(t, d.TaskID, 1)
	f.api(t, "DELETE", "/api/tasks/"+d.TaskID, nil, nil)
	f.waitTask(t, d.TaskID)
	var gone map[string]any
	if code := f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/1", map[string]string{"answer": "red"}, &gone); code != http.StatusGone ||
		!strings.Contains(gone["error"].(string), "the task has ended") {
		t.Errorf("answering after the end: %d %v", code, gone)
	}
}
