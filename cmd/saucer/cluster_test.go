package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
)

// cluster is two saucer serve sharing one PostgreSQL, both active.
type cluster struct {
	bin, pg, tmp, work, script string
	env                        []string
	addrs                      [2]string
	srv                        [2]*proc
}

func startCluster(t *testing.T) *cluster {
	c := &cluster{bin: saucerBinary(t), pg: storetest.Postgres(t), tmp: t.TempDir(), script: appendScript(t)}
	c.work = filepath.Join(c.tmp, "work")
	os.MkdirAll(c.work, 0o755)
	c.env = []string{"SAUCER_RUNS=" + filepath.Join(c.tmp, "runs"), "XDG_CACHE_HOME=" + c.tmp}
	for i := range 2 {
		c.addrs[i] = freeAddr(t)
		c.srv[i] = startSaucer(t, c.bin, c.env, "serve", "--model", "scripted:"+c.script, "--addr", c.addrs[i], "--token", "k",
			"--store", c.pg, "--server-id", []string{"alpha", "beta"}[i])
		waitHTTP(t, c.addrs[i])
	}
	return c
}

func (c *cluster) client(t *testing.T, urls ...string) *proc {
	return startSaucer(t, c.bin, c.env, "client", "--server", strings.Join(urls, ","), "--token", "k", "--id", "box",
		"-C", c.work, "--journal", filepath.Join(c.tmp, "box.journal"))
}

func (c *cluster) url(i int) string { return "ws://" + c.addrs[i] + "/ws" }

// waitClient waits until GET /api/clients on server i shows box
// connected, and returns what it says.
func (c *cluster) waitClient(t *testing.T, i int, logs func() string) server.ClientInfo {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var list struct{ Clients []server.ClientInfo }
		apiCall(t, c.addrs[i], "GET", "/api/clients", nil, &list)
		for _, ci := range list.Clients {
			if ci.ClientID == "box" && ci.Status == "connected" {
				return ci
			}
		}
	}
	t.Fatalf("server %d never showed box connected\n%s", i, logs())
	return server.ClientInfo{}
}

func (c *cluster) waitTask(t *testing.T, i int, id string, logs func() string) server.TaskInfo {
	t.Helper()
	return waitCompleted(t, c.addrs[i], id, logs)
}

// linesOnce checks each of the six lines is in log.txt once, or missing
// when its command is reported interrupted.
func (c *cluster) linesOnce(t *testing.T, info server.TaskInfo, logs func() string) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(c.work, "log.txt"))
	interrupted := 0
	for _, cs := range info.Commands {
		if strings.Contains(cs.Error, "interrupted") {
			interrupted++
		}
	}
	for i := 1; i <= 6; i++ {
		if n := strings.Count(string(b), fmt.Sprintf("L%d\n", i)); n != 1 && !(n == 0 && interrupted > 0) {
			t.Errorf("L%d is in log.txt %d times\nlog.txt: %q\n%s", i, n, b, logs())
		}
	}
	if info.Result != "six lines appended" {
		t.Errorf("result %q", info.Result)
	}
}

// TestServersShareAStore: two active saucer serve on one PostgreSQL. The
// device is connected to alpha; the task is dispatched, watched and
// listed through beta, which passes the calls on through the database.
// alpha is killed in the middle of the task: the client fails over to
// beta, which takes the task over from the dead server, and it
// completes, each command run once.
func TestServersShareAStore(t *testing.T) {
	c := startCluster(t)
	cl := c.client(t, c.url(0), c.url(1))
	logs := func() string {
		return "alpha:\n" + c.srv[0].out.String() + "\nbeta:\n" + c.srv[1].out.String() + "\nclient:\n" + cl.out.String()
	}
	if ci := c.waitClient(t, 1, logs); ci.Server != "alpha" {
		t.Fatalf("beta lists box at server %q, want alpha\n%s", ci.Server, logs())
	}
	var disp server.DispatchResponse
	if code := apiCall(t, c.addrs[1], "POST", "/api/dispatch", server.DispatchRequest{ClientID: "box", Request: "append six lines"}, &disp); code != 200 || disp.TaskID == "" {
		t.Fatalf("dispatch through beta: %d %+v\n%s", code, disp, logs())
	}
	// Beta passes the task on through the database: alpha starts it
	// (and says so) before its first command writes a line.
	waitLines(t, filepath.Join(c.work, "log.txt"), 2, logs)
	if !strings.Contains(c.srv[0].out.String(), "task "+disp.TaskID+" on box") {
		t.Errorf("the task does not run on alpha, which holds the device\n%s", logs())
	}
	var seen server.TaskInfo
	if code := apiCall(t, c.addrs[1], "GET", "/api/tasks/"+disp.TaskID, nil, &seen); code != 200 || seen.Status != server.StatusRunning || len(seen.Commands) < 2 {
		t.Errorf("GET through beta: %d %+v", code, seen)
	}
	var list struct{ Tasks []server.TaskInfo }
	if apiCall(t, c.addrs[1], "GET", "/api/tasks", nil, &list); len(list.Tasks) != 1 || list.Tasks[0].ID != disp.TaskID {
		t.Errorf("beta lists %+v", list.Tasks)
	}

	c.srv[0].kill(t)
	info := c.waitTask(t, 1, disp.TaskID, logs)
	c.linesOnce(t, info, logs)
	if !strings.Contains(c.srv[1].out.String(), "taken over from server alpha") {
		t.Errorf("beta did not say it took the task over\n%s", logs())
	}
	if out, code := saucer(t, "serve", "--model", "scripted:"+c.script, "--addr", "127.0.0.1:0", "--token", "k", "--store", c.pg, "--standby"); code == 0 || !strings.Contains(out, "servers sharing PostgreSQL are all active") {
		t.Errorf("--standby on PostgreSQL: exit %d\n%s", code, out)
	}
}

// TestDeviceMovesBetweenLiveServers: the device client dies in the
// middle of a task on alpha and comes back at beta while alpha lives:
// alpha lets go of the task, beta resumes it from its journal, and it
// completes, each command run once (the one cut short reported
// interrupted). A second client with the same id at alpha is refused
// while beta holds it.
func TestDeviceMovesBetweenLiveServers(t *testing.T) {
	c := startCluster(t)
	cl := c.client(t, c.url(0))
	first := ""
	logs := func() string {
		return "alpha:\n" + c.srv[0].out.String() + "\nbeta:\n" + c.srv[1].out.String() + "\nclient at alpha:\n" + first + "\nclient:\n" + cl.out.String()
	}
	c.waitClient(t, 0, logs)
	var disp server.DispatchResponse
	if code := apiCall(t, c.addrs[0], "POST", "/api/dispatch", server.DispatchRequest{ClientID: "box", Request: "append six lines"}, &disp); code != 200 {
		t.Fatalf("dispatch: %d\n%s", code, logs())
	}
	waitLines(t, filepath.Join(c.work, "log.txt"), 2, logs)
	cl.kill(t)
	first = cl.out.String()
	cl = c.client(t, c.url(1))
	info := c.waitTask(t, 0, disp.TaskID, logs) // asked of alpha, answered by beta
	c.linesOnce(t, info, logs)
	if !strings.Contains(c.srv[0].out.String(), "move to server beta") {
		t.Errorf("alpha did not say it let the task go\n%s", logs())
	}
	dup := startSaucer(t, c.bin, c.env, "client", "--server", c.url(0), "--token", "k", "--id", "box", "-C", c.work, "--journal", "off")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(dup.out.String(), "already registered (connected to server beta)") {
		if time.Now().After(deadline) {
			t.Fatalf("a second box at alpha was not refused\n%s\nsecond client:\n%s", logs(), dup.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServerThatLosesItsSessionStops: when the database session that
// shows a server alive ends (killed here by an administrator's command),
// the others may take its work, so saucer serve stops and says why.
func TestServerThatLosesItsSessionStops(t *testing.T) {
	bin, pg := saucerBinary(t), storetest.Postgres(t)
	addr := freeAddr(t)
	tmp := t.TempDir()
	srv := startSaucer(t, bin, []string{"SAUCER_RUNS=" + tmp, "XDG_CACHE_HOME=" + tmp}, "serve", "--model", "scripted:../../examples/demo.yaml",
		"--addr", addr, "--token", "k", "--store", pg, "--server-id", "gamma")
	waitHTTP(t, addr)
	db, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var killed int
	if err := db.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND classid = 7061729`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d sessions: %v", killed, err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(srv.out.String(), "the session that showed server gamma alive ended") ||
			!strings.Contains(srv.out.String(), "stopped so that the other servers take its devices and tasks") {
			t.Errorf("saucer serve ended with %v\n%s", err, srv.out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("saucer serve runs on without its session\n%s", srv.out.String())
	}
}
