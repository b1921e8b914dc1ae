package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
)

// TestWaitAnywhereFollowsTheTask: beta dispatches a task to the device
// alpha holds (it runs on alpha) and waits for it; the device then moves
// to beta in the middle of the task, which beta takes over; the wait
// follows it there and returns the task's end, as beta finishes it.
func TestWaitAnywhereFollowsTheTask(t *testing.T) {
	url := storetest.Postgres(t)
	cfg := scriptedConfig(t, askScript)
	var fs []*fixture
	for _, id := range []string{"alpha", "beta"} {
		st, m := member(t, url, id)
		fs = append(fs, newFixture(t, server.Options{NewSession: server.Sessions(cfg, session.Options{}), Store: st, Cluster: m,
			AskTimeout: time.Minute, AwayTimeout: time.Minute}))
	}
	alpha, beta := fs[0], fs[1]
	dir := t.TempDir()
	dev := realDevice(t, dir)
	c, err := remote.New(dev, remote.Options{URL: alpha.wsURL, Token: token, ClientID: "box", MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-c.Connected():
	case <-time.After(10 * time.Second):
		t.Fatal("box did not register at alpha")
	}

	info, err := beta.srv.DispatchAnywhere(context.Background(), "box", "write a file", "moving", "test")
	if err != nil {
		t.Fatal(err)
	}
	if ti, ok := alpha.srv.Task(info.ID); !ok {
		t.Fatal("the task does not run on alpha, which holds the device")
	} else if ti.QueuedBy != "test" {
		t.Errorf("alpha's task was queued by %q, want test (who asked beta), not the call that carried it", ti.QueuedBy)
	}
	if got, ok := beta.srv.FindTask("box", "moving"); !ok || got.ID != info.ID {
		t.Fatalf("beta does not find the task by name: %+v %v", got, ok)
	}
	ended := make(chan server.TaskInfo, 1)
	go func() {
		wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer wcancel()
		got, err := beta.srv.WaitAnywhere(wctx, info.ID)
		if err != nil {
			t.Errorf("WaitAnywhere: %v", err)
		}
		ended <- got
	}()
	alpha.waitPending(t, info.ID, 1) // the task asks which file, on alpha

	// The device moves: its client stops at alpha and registers at beta,
	// which takes the task over.
	cancel()
	<-done
	connect(t, beta.wsURL, "box", dev, nil)
	// Taken over, the task asks again (its first question was withdrawn
	// by the move).
	beta.waitPending(t, info.ID, 2)
	if _, ok := beta.srv.Task(info.ID); !ok {
		t.Fatal("beta did not take the task over")
	}
	beta.api(t, "POST", "/api/tasks/"+info.ID+"/pending/2", map[string]string{"answer": "out.txt"}, nil)
	beta.waitPending(t, info.ID, 3)
	approve := true
	beta.api(t, "POST", "/api/tasks/"+info.ID+"/pending/3", server.Answer{Approve: &approve}, nil)
	select {
	case got := <-ended:
		if got.Status != server.StatusCompleted || got.Result != "out.txt written." {
			t.Fatalf("the wait returned %s %q %s", got.Status, got.Result, got.Error)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the wait did not return when the task ended on beta")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "yes\n" {
		t.Fatalf("out.txt = %q", b)
	}
}
