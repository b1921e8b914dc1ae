package server_test

import (
	"testing"

	"github.com/saucerhq/saucer/server"
)

// TestClusterStreams: with two servers on one PostgreSQL, a task that
// runs on alpha streams through beta (its snapshot, its question, the
// answer given through beta, its end), and beta's own stream tells of
// alpha's task and device.
func TestClusterStreams(t *testing.T) {
	alpha, beta, _, _ := clusterPair(t, askScript)
	all := beta.openEvents(t, "/api/events", "")
	if snap := decode[server.Snapshot](t, all.next()); len(snap.Clients) != 1 || snap.Clients[0].ClientID != "box" || snap.Clients[0].Server != "alpha" {
		t.Fatalf("beta's snapshot: %+v", snap.Clients)
	}
	var d server.DispatchResponse
	beta.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d)
	if _, ok := alpha.srv.Task(d.TaskID); !ok {
		t.Fatal("the task does not run on alpha")
	}
	// Once the question waits on alpha, beta's stream of the task starts:
	// its snapshot holds the question (a stream started earlier would
	// get it as an event or in the snapshot, as the race goes).
	alpha.openEvents(t, "/api/tasks/"+d.TaskID+"/events", "").until(func(e server.Event) bool {
		if e.Type == server.EventSnapshot {
			return openQuestion(decode[server.TaskInfo](t, e).Pending).ID != ""
		}
		return e.Type == server.EventPending && openQuestion([]server.PendingInfo{decode[server.PendingInfo](t, e)}).ID != ""
	})
	s := beta.openEvents(t, "/api/tasks/"+d.TaskID+"/events", "")
	first := s.next()
	if first.Type != server.EventSnapshot || decode[server.TaskInfo](t, first).ID != d.TaskID {
		t.Fatalf("first event through beta: %s %s", first.Type, first.Data)
	}
	question := openQuestion(decode[server.TaskInfo](t, first).Pending)
	if question.ID == "" {
		t.Fatalf("beta's snapshot has no open question: %s", first.Data)
	}
	beta.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+question.ID, map[string]string{"answer": "out.txt"}, nil)
	s.until(func(e server.Event) bool {
		return e.Type == server.EventPending && decode[server.PendingInfo](t, e).Answer == "out.txt"
	})
	var approval server.PendingInfo
	s.until(func(e server.Event) bool {
		if e.Type == server.EventPending {
			approval = decode[server.PendingInfo](t, e)
		}
		return approval.Kind == "approval" && approval.Status == "open"
	})
	approve := true
	beta.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+approval.ID, server.Answer{Approve: &approve}, nil)
	end := s.until(func(e server.Event) bool { return e.Type == server.EventEnd })
	if sum := decode[server.TaskSummary](t, end[len(end)-1]); sum.Status != server.StatusCompleted {
		t.Fatalf("end through beta: %+v", sum)
	}
	// beta's own stream saw alpha's task, from the store.
	all.until(func(e server.Event) bool {
		return e.Type == server.EventTask && decode[server.TaskSummary](t, e).ID == d.TaskID
	})
}

// openQuestion is the open question among ps, or none.
func openQuestion(ps []server.PendingInfo) server.PendingInfo {
	for _, p := range ps {
		if p.Kind == "question" && p.Status == "open" {
			return p
		}
	}
	return server.PendingInfo{}
}
