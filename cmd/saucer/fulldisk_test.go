package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// TestServeOnAFullDisk: saucer serve with its SQLite store on a small
// disk. A task is answered 200 and runs; the disk fills; POST
// /api/dispatch answers 507 saying the disk is full and where, and
// /api/health 503. The server is killed (SIGKILL), the disk freed, and
// the server started again shows the task that was answered 200, and no
// other.
func TestServeOnAFullDisk(t *testing.T) {
	bin := saucerBinary(t)
	disk := storetest.TinyDisk(t, 8<<20)
	path := filepath.Join(disk, "state.db")
	addr, tmp := freeAddr(t), t.TempDir()
	work := filepath.Join(tmp, "work")
	os.MkdirAll(work, 0o755)
	env := []string{"SAUCER_RUNS=" + filepath.Join(tmp, "runs"), "XDG_CACHE_HOME=" + tmp}
	serveArgs := []string{"serve", "--model", "scripted:../../examples/demo.yaml", "--addr", addr, "--token", "k", "--store", "sqlite:" + path}
	srv := startSaucer(t, bin, env, serveArgs...)
	waitHTTP(t, addr)
	cl := startSaucer(t, bin, env, "client", "--server", "ws://"+addr+"/ws", "--token", "k", "--id", "box", "-C", work,
		"--journal", filepath.Join(tmp, "box.journal"))
	logs := func() string { return "server:\n" + srv.out.String() + "\nclient:\n" + cl.out.String() }
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var list struct{ Clients []server.ClientInfo }
		apiCall(t, addr, "GET", "/api/clients", nil, &list)
		if len(list.Clients) == 1 && list.Clients[0].Status == "connected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client never registered\n%s", logs())
		}
	}
	request := server.DispatchRequest{ClientID: "box", Request: "Write 'Hello from Saucer' to notes/hello.txt, then list the notes folder"}
	var disp server.DispatchResponse
	if code := apiCall(t, addr, "POST", "/api/dispatch", request, &disp); code != 200 {
		t.Fatalf("dispatch: %d\n%s", code, logs())
	}
	waitCompleted(t, addr, disp.TaskID, logs)

	// No room left: the store's WAL emptied into the database first (by
	// a connection of this test's), so that its next write must grow a
	// file, then the disk filled.
	st, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.(*store.SQL).DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	free := storetest.Fill(t, disk)
	var refused map[string]string
	if code := apiCall(t, addr, "POST", "/api/dispatch", request, &refused); code != 507 ||
		!strings.Contains(refused["error"], "the disk is full") || !strings.Contains(refused["error"], disk) {
		t.Fatalf("dispatch on a full disk: %d %v; want 507 saying the disk is full and where\n%s", code, refused, logs())
	}
	var health server.Health
	if code := apiCall(t, addr, "GET", "/api/health", nil, &health); code != 503 || health.Status != "degraded" {
		t.Errorf("health on a full disk: %d %+v", code, health)
	}

	srv.kill(t)
	free()
	srv = startSaucer(t, bin, env, serveArgs...)
	waitHTTP(t, addr)
	var list struct{ Tasks []server.TaskInfo }
	apiCall(t, addr, "GET", "/api/tasks", nil, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != disp.TaskID || list.Tasks[0].Status != server.StatusCompleted {
		t.Fatalf("after the kill and a restart: %+v; want the one task answered 200, completed\n%s", list.Tasks, logs())
	}
}
