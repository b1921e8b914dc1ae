package constellation

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// memberCluster is a cluster's server, id, on the PostgreSQL at url, with
// the devices connected to it alone.
func memberCluster(t *testing.T, url, id string, devices ...string) *cluster {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := st.(*store.SQL).Join(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() }) // after the server's shutdown, before the store closes
	// A device that leaves a server has a minute to come back (here or at
	// the other server) before its tasks fail.
	return newClusterOf(t, st, m, time.Minute, 0, devices...)
}

// Two servers of one cluster on a real PostgreSQL, each holding its own
// devices: a constellation run by beta has nodes on alpha's device. Each
// such node runs as a task on alpha, where its device is (journaled
// there, as any task for a device another server holds), its result
// flows to the dependents on beta's devices, and asking to start it
// again finds the same task rather than running it twice.
func TestNodesOnAnotherServerOfTheCluster(t *testing.T) {
	url := storetest.Postgres(t)
	alpha := memberCluster(t, url, "alpha", "far1")
	beta := memberCluster(t, url, "beta", "near1", "near2")
	sc := suiteCase{Name: "cluster", Nodes: []suiteNode{
		{ID: "count", Device: "near1", Run: "echo 4"},
		{ID: "far", Device: "far1", Run: "echo $(( {{dep:count}} * 10 )) | tee far.txt"},
		{ID: "sum", Device: "near2", Run: "echo $(( {{dep:far}} + 2 )) | tee sum.txt", After: []string{"far"}},
	}}
	sc.Nodes[1].After = []string{"count"}
	o := beta.orchestrator(t, plannerFor(t, sc, 0), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := o.Run(ctx, "across the cluster")
	if err != nil {
		t.Fatal(err)
	}
	if g.Status != Completed || len(g.Nodes) != 3 || !g.AllCompleted() {
		t.Fatalf("want the three nodes completed: %s %s\n%s", g.Status, g.Error, g.Summary())
	}
	if got, _ := alpha.read("far1", "far.txt"); got != "40" {
		t.Errorf("far1's far.txt = %q, want 40", got)
	}
	if got, _ := beta.read("near2", "sum.txt"); got != "42" {
		t.Errorf("near2's sum.txt = %q, want 42 (far's result flowed from alpha)", got)
	}

	// The far node's task is alpha's: it ran where its device is.
	far := g.Node("far")
	k := key(g, far)
	i := slices.IndexFunc(alpha.srv.Tasks(), func(ti server.TaskInfo) bool { return ti.ID == far.TaskID })
	if i < 0 {
		t.Fatalf("the far node's task %s is not on alpha", far.TaskID)
	}
	if ti := alpha.srv.Tasks()[i]; ti.TaskName != k || ti.Status != server.StatusCompleted || ti.ClientID != "far1" {
		t.Errorf("alpha's task: %+v", ti)
	} else if ti.QueuedBy != "constellation" {
		t.Errorf("alpha's task was queued by %q, want constellation (not the call beta passed it on in)", ti.QueuedBy)
	}
	if slices.ContainsFunc(beta.srv.Tasks(), func(ti server.TaskInfo) bool { return ti.ID == far.TaskID }) {
		t.Errorf("the far node's task also ran on beta")
	}

	// Starting the attempt again (as after a restart of beta) finds the
	// task alpha ran; nothing runs twice.
	devs := ServerDevices{beta.srv}
	id, err := devs.Start(ctx, "far1", k, far.Sent)
	if err != nil || id != far.TaskID {
		t.Fatalf("Start again: %q, %v; want %s", id, err, far.TaskID)
	}
	out, err := devs.Wait(ctx, id)
	if err != nil || !out.OK || out.Result != "40" {
		t.Fatalf("Wait on alpha's task from beta: %+v, %v", out, err)
	}
	var n int
	for _, ti := range alpha.srv.Tasks() {
		if ti.TaskName == k {
			n++
		}
	}
	if n != 1 {
		t.Errorf("alpha ran %d tasks named %s, want 1", n, k)
	}
}
