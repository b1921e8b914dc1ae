package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/session"
)

// clusterPair is two servers, alpha and beta, on one PostgreSQL, with
// the device box (real shell and files tools) connected to alpha.
func clusterPair(t *testing.T, script string) (alpha, beta *fixture, dir string, alphaMember *store.Member) {
	return clusterPairTB(t, script)
}

func clusterPairTB(t testing.TB, script string, tweak ...func(*server.Options)) (alpha, beta *fixture, dir string, alphaMember *store.Member) {
	t.Helper()
	url := storetest.Postgres(t)
	cfg := scriptedConfig(t, script)
	var fs []*fixture
	for _, id := range []string{"alpha", "beta"} {
		st, m := member(t, url, id) // closed after the server's own cleanup
		if alphaMember == nil {
			alphaMember = m
		}
		opts := server.Options{NewSession: server.Sessions(cfg, session.Options{}), Store: st, Cluster: m, AskTimeout: time.Minute}
		for _, f := range tweak {
			f(&opts)
		}
		fs = append(fs, newFixture(t, opts))
	}
	dir = t.TempDir()
	connect(t, fs[0].wsURL, "box", realDevice(t, dir), nil)
	return fs[0], fs[1], dir, alphaMember
}

// TestClusterPassesCallsOn: a question of a task on alpha is listed and
// answered through beta, and another task is cancelled through beta;
// each call reaches alpha through the database.
func TestClusterPassesCallsOn(t *testing.T) {
	alpha, beta, dir, am := clusterPair(t, askScript)
	var d server.DispatchResponse
	// An API caller cannot name who queued its task: queued_by is read on
	// calls passed on by another server only, and beta names its caller.
	if code := beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file", "queued_by": "constellation"}, &d); code != 200 {
		t.Fatalf("dispatch through beta: %d", code)
	}
	if ti, ok := alpha.srv.Task(d.TaskID); !ok {
		t.Fatal("the task does not run on alpha, which holds the device")
	} else if !strings.HasPrefix(ti.QueuedBy, "api-key:") {
		t.Errorf("alpha's task was queued by %q, want beta's caller (api-key:…)", ti.QueuedBy)
	}
	list := beta.waitPending(t, d.TaskID, 1)
	if list[0].Kind != "question" || !strings.Contains(list[0].Question, "Which file?") {
		t.Fatalf("pending through beta: %+v", list)
	}
	var it server.PendingInfo
	if code := beta.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/1", map[string]string{"answer": "out.txt"}, &it); code != 200 || !strings.HasPrefix(it.SettledBy, "api-key:") { // the key that answered, by its hash
		t.Fatalf("answer through beta: %d %+v", code, it)
	}
	beta.waitPending(t, d.TaskID, 2)
	approve := true
	beta.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/2", server.Answer{Approve: &approve}, nil)
	if info := beta.waitTask(t, d.TaskID); info.Status != server.StatusCompleted {
		t.Fatalf("task: %s %s", info.Status, info.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "yes\n" {
		t.Fatalf("out.txt = %q", b)
	}

	// A second task waits on its question; beta cancels it.
	if code := beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "again"}, &d); code != 200 {
		t.Fatalf("the next task, dispatched as soon as the first was seen ended: %d", code)
	}
	beta.waitPending(t, d.TaskID, 1)
	var info server.TaskInfo
	if code := beta.api(t, "DELETE", "/api/tasks/"+d.TaskID, nil, &info); code != 200 || info.Status != server.StatusCancelled {
		t.Fatalf("cancel through beta: %d %+v", code, info)
	}
	var gone map[string]any
	if code := beta.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/1", map[string]string{"answer": "x"}, &gone); code != http.StatusGone {
		t.Errorf("answering a cancelled task through beta: %d %v", code, gone)
	}
	var tasks struct{ Tasks []server.TaskInfo }
	if beta.api(t, "GET", "/api/tasks", nil, &tasks); len(tasks.Tasks) != 2 {
		t.Errorf("beta lists %d tasks, want both of alpha's", len(tasks.Tasks))
	}
	var unknown map[string]any
	if code := beta.api(t, "GET", "/api/tasks/no-such-task", nil, &unknown); code != http.StatusNotFound {
		t.Errorf("an unknown task through beta: %d", code)
	}

	// alpha's session ends (as when it dies): beta answers about its
	// running task from the store, and says why it cannot act on it.
	if code := beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "third"}, &d); code != 200 {
		t.Fatalf("third dispatch: %d", code)
	}
	beta.waitPending(t, d.TaskID, 1)
	am.Close()
	if code := beta.api(t, "GET", "/api/tasks/"+d.TaskID, nil, &info); code != 200 || info.Status != server.StatusRunning || info.ID != d.TaskID {
		t.Errorf("GET of a dead server's task: %d %+v", code, info)
	}
	var refused map[string]string
	if code := beta.api(t, "DELETE", "/api/tasks/"+d.TaskID, nil, &refused); code != http.StatusServiceUnavailable ||
		!strings.Contains(refused["error"], "ran on server alpha, which is gone; it resumes when device box connects") {
		t.Errorf("DELETE of a dead server's task: %d %v", code, refused)
	}
	alpha.srv.Cancel(d.TaskID, "test")
}

// appendTask has a task append L1..L6 to log.txt, one command each.
const appendTask = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: shell, subtask: "append six lines"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'L1\\n' >> log.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'L2\\n' >> log.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'L3\\n' >> log.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'L4\\n' >> log.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'L5\\n' >> log.txt"}}]
  - tool_calls: [{name: execute_command, arguments: {command: "printf 'L6\\n' >> log.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "appended"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "six lines appended"}}]
`

// TestClusterUnderLoad: six devices spread over two servers get 60
// tasks (360 commands) through either server, and alpha stops in the
// middle of them (as at a deploy). Its devices move to beta, which takes
// their tasks over: every task completes and every command ran exactly
// once.
func TestClusterUnderLoad(t *testing.T) {
	url := storetest.Postgres(t)
	cfg := scriptedConfig(t, appendTask)
	var fs [2]*fixture
	for i, id := range []string{"alpha", "beta"} {
		st, m := member(t, url, id)
		fs[i] = newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{}), Store: st, Cluster: m})
	}
	alpha, beta := fs[0], fs[1]
	const devices, perDevice = 6, 10
	dirs := make([]string, devices)
	for i := range devices {
		dirs[i] = t.TempDir()
		urls := alpha.wsURL + "," + beta.wsURL
		if i%2 == 1 {
			urls = beta.wsURL + "," + alpha.wsURL
		}
		connect(t, urls, fmt.Sprintf("dev%d", i), realDevice(t, dirs[i]), nil)
	}

	var stopped atomic.Bool
	done := make(chan struct{}, devices*perDevice)
	errs := make(chan error, devices*perDevice)
	var wg sync.WaitGroup
	for i := range devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perDevice {
				via := fs[(i+k)%2]
				if stopped.Load() {
					via = beta
				}
				id, err := dispatchUntilTaken(t, beta, via, fmt.Sprintf("dev%d", i))
				if err != nil {
					errs <- err
					return
				}
				info, err := waitThrough(t, beta, id)
				if err != nil {
					errs <- err
					return
				}
				if info.Status != server.StatusCompleted {
					errs <- fmt.Errorf("task %s on dev%d: %s %s", id, i, info.Status, info.Error)
				}
				done <- struct{}{}
			}
		}()
	}
	for range devices * perDevice / 3 {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("a third of the tasks did not end within a minute")
		}
	}
	stopped.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := alpha.srv.Suspend(ctx); err != nil {
		t.Errorf("alpha's stop: %v", err)
	}
	cancel()
	fs[0].http.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, dir := range dirs {
		b, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
		for l := 1; l <= 6; l++ {
			if n := strings.Count(string(b), fmt.Sprintf("L%d\n", l)); n != perDevice {
				t.Errorf("dev%d: L%d is in log.txt %d times, want %d (one per task)", i, l, n, perDevice)
			}
		}
	}
}

// dispatchUntilTaken dispatches through via (or beta once via is
// stopped) until a server takes the task: the device may be moving or
// busy for a moment. It asks again each time a server has logged
// something (a device registered, a task ended).
func dispatchUntilTaken(t *testing.T, beta, via *fixture, dev string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs := testLogs(t)
	for mark, ok := logs.mark(), true; ok; mark, ok = logs.next(ctx, mark) {
		code, body, err := rawAPI(via, "POST", "/api/dispatch", map[string]string{"client_id": dev, "request": "append six lines"})
		if err == nil && code == 200 {
			var d server.DispatchResponse
			json.Unmarshal(body, &d)
			return d.TaskID, nil
		}
		if err != nil || code == http.StatusServiceUnavailable {
			via = beta
		}
	}
	return "", fmt.Errorf("no server took a task for %s within 30s", dev)
}

// waitThrough waits, through beta, for a task to end: a long poll, asked
// again each time a server has logged something when the one that ran
// the task is gone (its record says running until another takes it).
func waitThrough(t *testing.T, beta *fixture, id string) (server.TaskInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := testLogs(t)
	for mark, ok := logs.mark(), true; ok; mark, ok = logs.next(ctx, mark) {
		var info server.TaskInfo
		code, body, err := rawAPI(beta, "GET", "/api/tasks/"+id+"?wait=20s", nil)
		if err == nil && code == 200 && json.Unmarshal(body, &info) == nil && info.Status != server.StatusRunning {
			return info, nil
		}
	}
	return server.TaskInfo{}, fmt.Errorf("task %s still running after 60s", id)
}

func rawAPI(f *fixture, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.http.URL+path, r)
	req.Header.Set("X-API-Key", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// BenchmarkForwardedCall: an API call about a running task, asked of
// the server that runs it and of another one, which passes it on
// through PostgreSQL (a bus row, NOTIFY, and the reply the same way).
func BenchmarkForwardedCall(b *testing.B) {
	alpha, beta, _, _ := clusterPairTB(b, askScript)
	var d server.DispatchResponse
	code, body, err := rawAPI(beta, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"})
	if err != nil || code != 200 {
		b.Fatalf("dispatch: %d %v", code, err)
	}
	json.Unmarshal(body, &d)
	path := "/api/tasks/" + d.TaskID + "/pending"
	alpha.logs.waitFor(b, 1, "task "+d.TaskID+": ", " 1 from ", " is waiting")
	call := func(f *fixture) time.Duration {
		start := time.Now()
		if code, _, err := rawAPI(f, "GET", path, nil); code != 200 || err != nil {
			b.Fatalf("GET: %d %v", code, err)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	var local, forwarded time.Duration
	for range b.N {
		local += call(alpha)
		forwarded += call(beta)
	}
	b.ReportMetric(float64(local.Nanoseconds())/float64(b.N), "local-ns/op")
	b.ReportMetric(float64(forwarded.Nanoseconds())/float64(b.N), "forwarded-ns/op")
	b.ReportMetric(float64(forwarded)/float64(local), "ratio")
}

// TestStrandedTaskEnds: the server running a task dies and its device
// never comes back anywhere. Another server takes the task and, after
// the away timeout, ends it failed with the reason, instead of leaving
// it running until some server restarts.
func TestStrandedTaskEnds(t *testing.T) {
	alpha, beta, _, am := clusterPairTB(t, askScript, func(o *server.Options) { o.AwayTimeout = 500 * time.Millisecond })
	var d server.DispatchResponse
	beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d)
	beta.waitPending(t, d.TaskID, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	alpha.srv.Suspend(ctx) // its device keeps trying alpha, which refuses it
	cancel()
	am.Close()
	beta.logs.waitFor(t, 1, "task "+d.TaskID+" failed ")
	var info server.TaskInfo
	if beta.api(t, "GET", "/api/tasks/"+d.TaskID, nil, &info); info.Status != server.StatusFailed {
		t.Fatalf("the stranded task is %q", info.Status)
	}
	// 500ms, and the 2.05s the device's client may take to register again
	// once it can (its backoff cap and registration timeout).
	if !strings.Contains(info.Error, "the server running this task went away and device box did not come back within 2.55s") {
		t.Errorf("error %q", info.Error)
	}
}
