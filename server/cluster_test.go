package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/server/store/storetest"
	"github.com/saucerhq/saucer/session"
)

// clusterPair is two servers, alpha and beta, on one PostgreSQL, with
// the device box (real shell and files tools) connected to alpha.
func clusterPair(t *testing.T, script string) (alpha, beta *fixture, dir string, alphaMember *store.Member) {
	t.Helper()
	url := storetest.Postgres(t)
	path := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(path, []byte(script), 0o644)
	cfg := config.Default()
	cfg.Model = "scripted:" + path
	cfg.Agent.RetryBackoff = config.Duration(time.Millisecond)
	var fs []*fixture
	for _, id := range []string{"alpha", "beta"} {
		st, err := store.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.(*store.SQL).Join(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(); st.Close() }) // after the server's own cleanup
		if alphaMember == nil {
			alphaMember = m
		}
		fs = append(fs, newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{}), Store: st, Cluster: m,
			AskTimeout: time.Minute}))
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
	if code := beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d); code != 200 {
		t.Fatalf("dispatch through beta: %d", code)
	}
	if _, ok := alpha.srv.Task(d.TaskID); !ok {
		t.Fatal("the task does not run on alpha, which holds the device")
	}
	list := beta.waitPending(t, d.TaskID, 1)
	if list[0].Kind != "question" || !strings.Contains(list[0].Question, "Which file?") {
		t.Fatalf("pending through beta: %+v", list)
	}
	var it server.PendingInfo
	if code := beta.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/1", map[string]string{"answer": "out.txt"}, &it); code != 200 || it.SettledBy != "api" {
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
	beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "again"}, &d)
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
	beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "third"}, &d)
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
