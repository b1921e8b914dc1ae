package server_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/server"
)

// TestTaskEndReachesADeviceThatWasAway: a task that ends while its device
// is disconnected (cancelled through the API) sends its task_end when the
// device registers again, instead of losing it.
func TestTaskEndReachesADeviceThatWasAway(t *testing.T) {
	f := newFixture(t, server.Options{NewSession: scriptedSessions(t, writeScript), CancelGrace: 50 * time.Millisecond})
	c := f.rawConn(t)
	if ack := register(t, c, "dev"); ack.Status != aip.StatusOK {
		t.Fatalf("register: %+v", ack)
	}
	var d server.DispatchResponse
	if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev", Request: "write notes/hello.txt"}, &d); code != 200 {
		t.Fatalf("dispatch: %d", code)
	}
	for m := readServer(t, c); m.Type != aip.TypeCommand; m = readServer(t, c) {
	}
	c.CloseNow() // away, with a round in flight
	f.logs.waitFor(t, 1, "device dev disconnected with work in flight")
	var clients struct{ Clients []server.ClientInfo }
	if f.api(t, "GET", "/api/clients", nil, &clients); len(clients.Clients) != 1 || clients.Clients[0].Status != "away" {
		t.Fatalf("the device does not show as away: %+v", clients)
	}
	var info server.TaskInfo
	if code := f.api(t, "DELETE", "/api/tasks/"+d.TaskID, nil, &info); code != 200 || info.Status != server.StatusCancelled {
		t.Fatalf("cancel: %d %+v", code, info)
	}

	c = f.rawConn(t)
	if ack := register(t, c, "dev"); ack.Status != aip.StatusOK {
		t.Fatalf("register again: %+v", ack)
	}
	for i := 0; ; i++ {
		m := readServer(t, c)
		if m.Type == aip.TypeTaskEnd {
			if m.SessionID != d.TaskID || m.Status != aip.StatusFailed || !strings.Contains(m.Error, "cancelled") {
				t.Errorf("task_end: %+v", m)
			}
			break
		}
		if i > 5 {
			t.Fatalf("no task_end after the device came back; last frame %+v", m)
		}
	}
}

// stores are the durable stores a restart test runs against.
func stores(t *testing.T) map[string]string {
	return map[string]string{
		"sqlite":   "sqlite:" + filepath.Join(t.TempDir(), "state.db"),
		"postgres": storetest.Postgres(t),
	}
}

// TestStateSurvivesARestart: a server started on the store another one
// used shows its ended tasks (steps, commands, result) and its devices,
// which count as away until they register again.
func TestStateSurvivesARestart(t *testing.T) {
	for name, spec := range stores(t) {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, spec)
			a := newFixture(t, server.Options{NewSession: scriptedSessions(t, writeScript), Store: st})
			dir := t.TempDir()
			connect(t, a.wsURL, "dev1", realDevice(t, dir), nil)
			var d server.DispatchResponse
			if code := a.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev1", Request: "write notes/hello.txt and show it"}, &d); code != 200 {
				t.Fatalf("dispatch: %d", code)
			}
			before := a.waitTask(t, d.TaskID)
			if before.Status != server.StatusCompleted {
				t.Fatalf("task: %+v", before)
			}

			st2 := openStore(t, spec) // what a new process opens
			b := newFixture(t, server.Options{NewSession: scriptedSessions(t, writeScript), Store: st2})
			var after server.TaskInfo
			if code := b.api(t, "GET", "/api/tasks/"+d.TaskID, nil, &after); code != 200 {
				t.Fatalf("the restarted server does not know task %s: %d", d.TaskID, code)
			}
			if after.Status != server.StatusCompleted || after.Result != before.Result || len(after.Steps) != len(before.Steps) ||
				len(after.Commands) != len(before.Commands) || len(after.Commands) == 0 {
				t.Errorf("after the restart:\n%+v\nbefore:\n%+v", after, before)
			}
			for i, c := range after.Commands {
				if c.State != before.Commands[i].State || c.CallID != before.Commands[i].CallID {
					t.Errorf("command %d: %+v, was %+v", i, c, before.Commands[i])
				}
			}
			var clients struct{ Clients []server.ClientInfo }
			b.api(t, "GET", "/api/clients", nil, &clients)
			if len(clients.Clients) != 1 || clients.Clients[0].ClientID != "dev1" || clients.Clients[0].Status != "away" ||
				clients.Clients[0].Namespaces["files"] == "" {
				t.Errorf("restored registry: %+v", clients.Clients)
			}
		})
	}
}

// TestTaskRecordKeepsUpWithItsRounds: by the time a command round is
// sent, the journal holds the results of the rounds before it and their
// commands' final states (what a restart replays); the task's record
// follows within a moment, with or without a round; the ended task's
// record is there before its device hears of it.
func TestTaskRecordKeepsUpWithItsRounds(t *testing.T) {
	for name, spec := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := watchRecords(openStore(t, spec))
			f := newFixture(t, server.Options{NewSession: stepsRunner, Store: st})
			dev := f.rawConn(t)
			if ack := register(t, dev, "dev"); ack.Status != aip.StatusOK {
				t.Fatalf("register: %+v", ack)
			}
			var d server.DispatchResponse
			if code := f.api(t, "POST", "/api/dispatch", server.DispatchRequest{ClientID: "dev", Request: "three clicks"}, &d); code != 200 {
				t.Fatalf("dispatch: %d", code)
			}
			stored := func() server.TaskInfo {
				t.Helper()
				rec, err := st.Task(ctx, d.TaskID)
				if err != nil {
					t.Fatalf("the task is not in the store: %v", err)
				}
				var info server.TaskInfo
				if err := json.Unmarshal(rec.Data, &info); err != nil {
					t.Fatal(err)
				}
				return info
			}
			round := func() *aip.ServerMessage {
				t.Helper()
				for {
					if m := readServer(t, dev); m.Type == aip.TypeCommand {
						return m
					}
				}
			}
			answer := func(m *aip.ServerMessage) {
				send(t, dev, &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientID: "dev",
					SessionID: m.SessionID, PrevResponseID: m.ResponseID,
					ActionResults: []command.Result{{Status: command.Success, Result: []byte(`true`), CallID: m.Actions[0].CallID}}})
			}

			first := round()
			if info := stored(); info.Status != server.StatusRunning {
				t.Fatalf("at the first round the stored task is %q", info.Status)
			}
			st.watch() // for the record that follows without a round
			answer(first)
			second := round()
			// Read at once: the first round's results and its command's
			// final state went before the second round.
			entries, err := st.Journal(ctx, d.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			var states []dispatcher.CommandState
			for _, e := range entries {
				if e.Kind == "results" && e.Key == first.ResponseID {
					var r struct{ States []dispatcher.CommandState }
					json.Unmarshal(e.Data, &r)
					states = r.States
				}
			}
			if len(states) != 1 || states[0].CallID != first.Actions[0].CallID || states[0].State != command.StateCompleted ||
				states[0].ResponseID != first.ResponseID || states[0].UpdatedAt.IsZero() {
				t.Fatalf("at the second round the journal has the first round's states %+v; want its command completed", states)
			}
			// No round follows while the device works: the first step and
			// both commands still reach the record.
			st.until(t, d.TaskID, func(info server.TaskInfo) bool {
				return len(info.Steps) == 1 && len(info.Commands) == 2 && info.Commands[0].State == command.StateCompleted
			})
			answer(second)
			answer(round())
			if info := f.waitTask(t, d.TaskID); info.Status != server.StatusCompleted {
				t.Fatalf("task: %+v", info)
			}
			// A long poll answers once the end is in the store.
			if info := stored(); info.Status != server.StatusCompleted {
				t.Errorf("the long poll said completed; the store says %s", info.Status)
			}
			// The end is saved before the device is told of it.
			for m := readServer(t, dev); m.Type != aip.TypeTaskEnd; m = readServer(t, dev) {
			}
			if info := stored(); info.Status != server.StatusCompleted || len(info.Steps) != 3 || len(info.Commands) != 3 {
				t.Errorf("the ended task's record: %s, %d steps, %d commands", info.Status, len(info.Steps), len(info.Commands))
			}
		})
	}
}

// TestWaitEndsWhenTheServerStops: a task restored from the store waits
// for its device, which does not come back. Suspended, the server stops
// at once (not after AwayTimeout) and leaves the task running in the
// store, and Wait returns it as it is; the next server on the store, shut
// down, ends the task failed with the reason.
func TestWaitEndsWhenTheServerStops(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	seedRunning(t, st, 1, 1)
	const id = "task-0000"
	for _, stop := range []string{"suspend", "shutdown"} {
		s, err := server.New(server.Options{Token: token, NewSession: stepsRunner, Store: st, Logf: t.Logf, AwayTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		waited := make(chan server.TaskInfo, 1)
		go func() {
			info, err := s.Wait(ctx, id)
			if err != nil {
				t.Error(err)
			}
			waited <- info
		}()
		want := server.StatusRunning
		if stop == "suspend" {
			err = s.Suspend(ctx)
		} else {
			err, want = s.Shutdown(ctx, "test over"), server.StatusFailed
		}
		if err != nil {
			t.Fatalf("%s: %v", stop, err)
		}
		if info := <-waited; info.Status != want || info.ID != id {
			t.Errorf("after %s, Wait: %s %s", stop, info.ID, info.Status)
		}
		rec, err := st.Task(ctx, id)
		if err != nil || rec.Status != string(want) {
			t.Errorf("after %s, the store: %s %v", stop, rec.Status, err)
		}
		if want == server.StatusFailed && !strings.Contains(string(rec.Data), "test over") {
			t.Errorf("the failed task's record does not say why: %s", rec.Data)
		}
	}
}

// callLog is a device that notes the call id of every command it runs.
type callLog struct {
	noopDevice
	mu  sync.Mutex
	ids []string
}

func (d *callLog) Execute(ctx context.Context, cmd command.Command) command.Result {
	d.mu.Lock()
	d.ids = append(d.ids, cmd.CallID)
	d.mu.Unlock()
	return d.noopDevice.Execute(ctx, cmd)
}

// TestLongTaskRecordAndResume: a task of 120 steps keeps a record of
// bounded size in the store while it runs (its latest steps and commands,
// and how many it leaves out), not one that grows with every round. Its
// server stops after step 80; the next one resumes it from its journal:
// the task shows all 120 commands in the order they ran, under the call
// ids the device saw, each run once, and its ended record has them all.
func TestLongTaskRecordAndResume(t *testing.T) {
	const steps, pause = 120, 80
	ctx := context.Background()
	st := watchRecords(sqliteStore(t))
	st.watch()
	paused := make(chan struct{}, 1)
	runner := gatedRunner(steps, pause, paused, nil)
	dev := &callLog{}

	a := newFixture(t, server.Options{NewSession: runner, Store: st})
	connect(t, a.wsURL, "dev", dev, nil) // it keeps knocking at a after the stop, refused
	info, err := a.srv.Dispatch("dev", "120 clicks", "long", "test")
	if err != nil {
		t.Fatal(err)
	}
	<-paused
	dev.mu.Lock()
	ran := append([]string{}, dev.ids...)
	dev.mu.Unlock()
	// The record catches up within a moment: it has the latest commands
	// and steps and counts those it leaves out. A round's commands and its
	// step are written apart, so wait for both.
	stored := st.until(t, info.ID, func(stored server.TaskInfo) bool {
		return stored.CommandsOmitted+len(stored.Commands) == pause && stored.StepsOmitted+len(stored.Steps) == pause
	})
	n := len(stored.Commands)
	if n == 0 || n >= pause || stored.Commands[n-1].CallID != ran[pause-1] ||
		stored.StepsOmitted+len(stored.Steps) != pause || len(stored.Steps) >= pause {
		t.Fatalf("the running task's record after %d steps: %d commands (%d left out), %d steps (%d left out); want the latest only",
			pause, n, stored.CommandsOmitted, len(stored.Steps), stored.StepsOmitted)
	}
	if err := a.srv.Suspend(ctx); err != nil {
		t.Fatal(err)
	}

	b := newFixture(t, server.Options{NewSession: runner, Store: st})
	if got, ok := b.srv.Task(info.ID); !ok || got.Status != server.StatusRunning || got.CommandsOmitted == 0 {
		t.Fatalf("the next server, before the device is back: %+v", got)
	}
	connect(t, b.wsURL, "dev", dev, nil)
	end, err := b.srv.Wait(ctx, info.ID)
	if err != nil || end.Status != server.StatusCompleted {
		t.Fatalf("the resumed task: %s %s %v", end.Status, end.Error, err)
	}
	dev.mu.Lock()
	ran = append([]string{}, dev.ids...)
	dev.mu.Unlock()
	if len(ran) != steps || len(end.Commands) != steps || len(end.Steps) != steps || end.CommandsOmitted != 0 {
		t.Fatalf("the device ran %d commands; the task shows %d commands and %d steps (%d left out); want %d of each, once",
			len(ran), len(end.Commands), len(end.Steps), end.CommandsOmitted, steps)
	}
	for i, c := range end.Commands {
		if c.CallID != ran[i] || c.State != command.StateCompleted {
			t.Fatalf("command %d: %s %s; the device ran %s there", i, c.CallID, c.State, ran[i])
		}
	}
	rec, _ := st.Task(ctx, info.ID)
	stored = server.TaskInfo{}
	json.Unmarshal(rec.Data, &stored)
	if stored.Status != server.StatusCompleted || len(stored.Commands) != steps || stored.CommandsOmitted != 0 {
		t.Errorf("the ended task's record: %s, %d commands (%d left out)", stored.Status, len(stored.Commands), stored.CommandsOmitted)
	}
}

// TestResumedTaskShowsItsCommands: a task whose record, as a server left
// it, lists none of its commands resumes with its journaled round's
// command in its place, first, then the ones it runs live.
func TestResumedTaskShowsItsCommands(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	seedRunning(t, st, 1, 1) // task-0000 on dev0: step 1 done, its record without commands
	f := newFixture(t, server.Options{NewSession: stepsRunner, Store: st})
	connect(t, f.wsURL, "dev0", &callLog{}, nil)
	end, err := f.srv.Wait(ctx, "task-0000")
	if err != nil || end.Status != server.StatusCompleted || len(end.Commands) != benchSteps ||
		end.Commands[0].CallID != "task-0000-c1" || end.Commands[0].State != command.StateCompleted {
		t.Fatalf("the resumed task: %s %s %v, commands %+v", end.Status, end.Error, err, end.Commands)
	}
}

// TestOlderJournalResumes: a journal written before results entries held
// their commands' states (results as a bare JSON array) still resumes:
// its recorded round is answered from it, not run again.
func TestOlderJournalResumes(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	seedOlder(t, st, 1, 1) // task-0000 on dev0: step 1 done, results as an array
	if j, _ := st.Journal(ctx, "task-0000"); len(j) != 3 || j[2].Kind != "results" || j[2].Data[0] != '[' {
		t.Fatalf("the seeded journal is not in the older form: %+v", j)
	}
	f := newFixture(t, server.Options{NewSession: stepsRunner, Store: st})
	dev := &callLog{}
	connect(t, f.wsURL, "dev0", dev, nil)
	end, err := f.srv.Wait(ctx, "task-0000")
	if err != nil || end.Status != server.StatusCompleted || len(end.Steps) != benchSteps {
		t.Fatalf("the resumed task: %s %s, %d steps, %v", end.Status, end.Error, len(end.Steps), err)
	}
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if len(dev.ids) != benchSteps-1 {
		t.Errorf("the device ran %d commands; want %d (the recorded one is not run again)", len(dev.ids), benchSteps-1)
	}
}

// TestConstellationHearsOfTheEndAfterARestart: a constellation asks for a
// task; the server stops in the middle of it; the next server on the
// store resumes it when the device is back, and the constellation, which
// registers again only after the task ended, gets its task_end.
func TestConstellationHearsOfTheEndAfterARestart(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	paused := make(chan struct{}, 1)
	runner := gatedRunner(benchSteps, 1, paused, nil)
	dev := &callLog{}
	a := newFixture(t, server.Options{NewSession: runner, Store: st})
	connect(t, a.wsURL, "dev", dev, nil) // it keeps knocking at a after the stop, refused
	constellation := func(f *fixture) *aip.Conn {
		c := f.rawConn(t)
		send(t, c, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
			ClientID: "c@dev", TargetID: "dev"})
		if m := readServer(t, c); m.Status != aip.StatusOK {
			t.Fatalf("the constellation's registration: %+v", m)
		}
		return c
	}
	c := constellation(a)
	send(t, c, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientType: aip.ClientConstellation,
		ClientID: "c@dev", TargetID: "dev", Request: "three clicks", TaskName: "clicks"})
	ack := readServer(t, c)
	if ack.Status != aip.StatusOK || ack.SessionID == "" {
		t.Fatalf("the task's ack: %+v", ack)
	}
	<-paused
	c.CloseNow() // the constellation goes away too
	if err := a.srv.Suspend(ctx); err != nil {
		t.Fatal(err)
	}

	b := newFixture(t, server.Options{NewSession: runner, Store: st})
	connect(t, b.wsURL, "dev", dev, nil)
	if end, err := b.srv.Wait(ctx, ack.SessionID); err != nil || end.Status != server.StatusCompleted || end.RequesterID != "c@dev" {
		t.Fatalf("the resumed task: %s %s (requester %q) %v", end.Status, end.Error, end.RequesterID, err)
	}
	c = constellation(b)
	for {
		m := readServer(t, c)
		if m.Type == aip.TypeTaskEnd {
			if m.SessionID != ack.SessionID || m.Status != aip.StatusCompleted {
				t.Errorf("task_end: %+v", m)
			}
			break
		}
	}
}
