package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/server/store"
)

// storeTimeout bounds one write to the store.
const storeTimeout = 30 * time.Second

func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// writeCtx is storeCtx for a write that is waited for. One that is not
// only queues (the store's writer bounds the rest), and a timer for
// each cost a short task on a durable store 3% of its time.
func writeCtx(wait bool) (context.Context, context.CancelFunc) {
	if wait {
		return storeCtx()
	}
	return context.Background(), func() {}
}

// recordTail is how many of a running task's latest steps and commands
// its record in the store keeps. The record is written again and again
// while the task runs; with all of them it grew with the task, so that a
// long task's writes grew with the square of its length (a 1,000-step
// task wrote a 395 KB record with each round, 2.4 ms a round on SQLite).
// The journal holds every command's final state, which a resumed task
// replays; an ended task's record has them all.
const recordTail = 10

// record is a task as the store keeps it: the API's view, with only the
// latest steps and commands while it runs.
func (t *task) record() store.Task {
	t.mu.Lock()
	info := t.info
	if info.Status == StatusRunning {
		info.Steps, info.StepsOmitted = latest(info.Steps, info.StepsOmitted)
		info.Commands, info.CommandsOmitted = latest(info.Commands, info.CommandsOmitted)
	}
	info.Steps = append([]StepInfo{}, info.Steps...)
	info.Commands = append([]dispatcher.CommandState{}, info.Commands...)
	info.Pending = make([]PendingInfo, 0, len(t.pending))
	for _, it := range t.pending {
		info.Pending = append(info.Pending, *it)
	}
	t.mu.Unlock()
	data, err := json.Marshal(info)
	if err != nil {
		t.srv.logf("task %s: record not encoded: %v", info.ID, err)
	}
	return store.Task{ID: info.ID, ClientID: info.ClientID, Status: string(info.Status), CreatedAt: info.CreatedAt, Data: data,
		Server: t.srv.serverID()}
}

// latest is the last recordTail items of list, and how many are left out
// (added to those already left out of it).
func latest[T any](list []T, omitted int) ([]T, int) {
	if n := len(list); n > recordTail {
		return list[n-recordTail:], omitted + n - recordTail
	}
	return list, omitted
}

// volatile reports a store that does not outlive the process: nothing
// can resume from it, so tasks are neither saved nor journaled. Saving
// would only copy the task to itself on every round and cost a third of
// a round trip.
func (s *Server) volatile() bool {
	_, mem := s.store.(*store.Memory)
	return mem
}

// recordDelay bounds how long a running task's record in the store lags
// behind the task: changes to its commands and steps are written together,
// recordDelay after the first of them. A restart needs none of them: the
// journal has each command's final state and the replay brings its steps
// back. The record is what a server that does not run the task shows of
// it. Writing it on every change cost SQLite more than the journal did,
// and with every command round a fifth of a short task's writes.
const recordDelay = 100 * time.Millisecond

// persist writes the task's record soon: within recordDelay.
func (s *Server) persist(t *task) {
	if s.volatile() {
		return
	}
	t.mu.Lock()
	t.dirty = true
	if t.flushing {
		t.mu.Unlock()
		return
	}
	t.flushing = true
	t.mu.Unlock()
	s.saveWG.Add(1)
	time.AfterFunc(recordDelay, func() {
		defer s.saveWG.Done()
		t.mu.Lock()
		t.flushing = false
		t.mu.Unlock()
		s.flush(t)
	})
}

// persistNew writes a new task's record and waits until it is durable,
// before the task's id is given out and its device told: a task that
// was answered for is one a restart finds (and, with other servers, one
// a call through any of them finds). An error refuses the task (see
// refuse): with a full disk it wraps store.ErrFull.
func (s *Server) persistNew(t *task) error {
	return s.save(t, true, false)
}

// ErrNotStored is the error of a task the store could not keep, which
// was not started.
var ErrNotStored = errors.New("the task was not started: the store could not keep it")

// refuse undoes a new task that persistNew could not store: nothing
// started it and nobody heard of it. It returns the caller's error.
func (s *Server) refuse(t *task, err error) error {
	t.cancel(err)
	s.mu.Lock()
	delete(s.tasks, t.info.ID)
	s.running--
	t.target.tasks--
	t.target.pushed = slices.DeleteFunc(t.target.pushed, func(p *task) bool { return p == t })
	s.mu.Unlock()
	s.taskWG.Done()
	s.logf("task on %s refused: %v", t.target.id, err)
	return fmt.Errorf("%w: %w", ErrNotStored, err)
}

// persistNow queues the task's record at once, as for a task whose
// questions changed, which a person waits to see.
func (s *Server) persistNow(t *task) {
	t.mu.Lock()
	t.dirty = true
	t.mu.Unlock()
	s.flush(t)
}

// flush queues the task's record, if it changed since it was last
// queued, without waiting for it to be durable: it is once a later write
// of the task that waits (its next round's) has returned.
func (s *Server) flush(t *task) {
	s.save(t, false, true)
}

// saveNow writes the end of a task and waits for it to be durable: with
// a full disk, until there is room or the server stops (see keep).
func (s *Server) saveNow(t *task) {
	err := s.keep(context.Background(), t.info.ID, "its end", func() error { return s.save(t, true, false) })
	if err != nil {
		s.logf("task %s: its end was not saved (after a restart it resumes from its journal): %v", t.info.ID, err)
	}
}

// save writes the task's record. Writes of one task are queued in order,
// each with the state at its time, so an older one never lands last.
func (s *Server) save(t *task, wait, onlyChanged bool) error {
	if s.volatile() || t.frozen() {
		return nil // the record stays as the task was when Suspend stopped it
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	if onlyChanged && !t.dirty {
		t.mu.Unlock()
		return nil
	}
	t.dirty = false
	t.mu.Unlock()
	ctx, cancel := writeCtx(wait)
	defer cancel()
	err := s.store.PutTask(ctx, t.record(), wait)
	if err != nil && !wait {
		s.logf("task %s: not saved: %v", t.info.ID, err)
	}
	return err
}

// storeRetry is how often a task that waits for the store (its disk is
// full) makes its write again.
const storeRetry = time.Second

// keep makes a write that a running task waits for: the frame of its
// next command round, or its end. A write the store refuses because its
// disk is full is made again every storeRetry until it is stored, ctx
// ends (the task is cancelled or stopped) or the server stops: the task
// waits where it is and loses nothing it has done, and GET /api/health
// counts it. (A stopping server is seen at the next try.) It returns the
// last error.
func (s *Server) keep(ctx context.Context, id, what string, write func() error) error {
	waiting := false
	defer func() {
		if waiting {
			s.storeWaits.Add(-1)
		}
	}()
	for {
		err := write()
		if !errors.Is(err, store.ErrFull) {
			if waiting && err == nil {
				s.logf("task %s: the store took %s; the task goes on", id, what)
			}
			return err
		}
		if !waiting {
			waiting = true
			s.storeWaits.Add(1)
			s.logf("task %s waits until the store can take %s: %v", id, what, err)
		}
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			return err
		}
		select {
		case <-time.After(storeRetry):
		case <-ctx.Done():
			return err
		}
	}
}

// deviceRecord is a registered client as the store keeps it.
type deviceRecord struct {
	ID         string             `json:"id"`
	Type       aip.ClientType     `json:"client_type"`
	TargetID   string             `json:"target_id,omitempty"`
	Platform   string             `json:"platform"`
	Info       command.DeviceInfo `json:"device_info"`
	Namespaces map[string]string  `json:"namespaces,omitempty"`
	// Instance is the run of the client last registered (see
	// aip.Resends): the next server re-sends it the frames it may have
	// got if it comes back as the same run.
	Instance string `json:"instance,omitempty"`
	// Tools is what the server knew of its tools; AsksTools says the
	// device answers a listing outside a task.
	Tools     *toolList `json:"tools,omitempty"`
	AsksTools bool      `json:"asks_tools,omitempty"`
	// ReconnectMS is the longest its client takes to register again
	// (aip.MetaReconnectWithin), in milliseconds: after a restart, its
	// away clock runs AwayTimeout plus this, from the restart.
	ReconnectMS int64 `json:"reconnect_within_ms,omitempty"`
	// Server and Connected are the store's columns: who holds its
	// connection, if anyone.
	Server    string `json:"-"`
	Connected bool   `json:"-"`
}

// putDevice records a registered client. Called without s.mu.
func (s *Server) putDevice(d *device) {
	s.mu.Lock()
	rec := deviceRecord{ID: d.id, Type: d.clientType, TargetID: d.targetID, Platform: d.platform, Info: d.info, Namespaces: d.namespaces,
		Instance: d.instance, Tools: d.tools, AsksTools: d.asksTools, ReconnectMS: d.reconnect.Milliseconds()}
	connected := d.conn != nil
	s.mu.Unlock()
	data, _ := json.Marshal(rec)
	ctx, cancel := storeCtx()
	defer cancel()
	if err := s.store.PutDevice(ctx, store.Device{ID: d.id, Server: s.serverID(), Connected: connected, UpdatedAt: time.Now().UTC(), Data: data}); err != nil {
		s.logf("device %s: not saved: %v", d.id, err)
	}
}

func (s *Server) deleteDevice(id string) {
	ctx, cancel := storeCtx()
	defer cancel()
	if err := s.store.DeleteDevice(ctx, id, s.serverID()); err != nil {
		s.logf("device %s: not removed from the store: %v", id, err)
	}
}

// sendOrQueue sends a frame to a device, or queues it in the store when
// the device is away: it gets it when it registers again, from this
// server or the next one.
func (s *Server) sendOrQueue(d *device, m *aip.ServerMessage) {
	if err := d.Send(s.ctx, m); err == nil {
		return
	}
	s.queue(d.id, m)
}

// queue keeps a frame in the store for a client that is away, by its id.
func (s *Server) queue(id string, m *aip.ServerMessage) {
	data, err := json.Marshal(m)
	if err == nil {
		ctx, cancel := storeCtx()
		defer cancel()
		err = s.store.Post(ctx, id, data)
	}
	if err != nil {
		s.logf("%s is away and its %s frame could not be queued: %v", id, m.Type, err)
		return
	}
	s.logf("%s is away: its %s frame waits for it", id, m.Type)
	// It may have registered here while the frame was being queued, and
	// taken what was queued before it: give it what is queued now.
	s.mu.Lock()
	d := s.devices[id]
	var conn *aip.Conn
	if d != nil {
		conn = d.conn // set once it has had its ack
	}
	s.mu.Unlock()
	if conn != nil {
		s.sendQueued(d, conn)
	}
}

// tellRequester sends a frame about a task to the constellation that
// asked for it, if one did: connected, or queued for it. A task resumed
// after a restart knows it by its id only.
func (s *Server) tellRequester(t *task, m *aip.ServerMessage) {
	d, id := t.requester, t.info.RequesterID
	if t.info.RequesterSession != "" {
		// The constellation knows the task by the id it gave it.
		c := *m
		c.SessionID = t.info.RequesterSession
		m = &c
	}
	if d == nil && id != "" {
		s.mu.Lock()
		d = s.devices[id]
		s.mu.Unlock()
	}
	switch {
	case d != nil:
		s.sendOrQueue(d, m)
	case id != "":
		s.queue(id, m)
	}
}

// sendQueued sends a device the frames queued while it was away.
func (s *Server) sendQueued(d *device, conn *aip.Conn) {
	ctx, cancel := storeCtx()
	frames, err := s.store.Take(ctx, d.id)
	cancel()
	if err != nil {
		s.logf("%s: queued frames not read: %v", d.id, err)
		return
	}
	for _, b := range frames {
		var m aip.ServerMessage
		if err := json.Unmarshal(b, &m); err != nil {
			s.logf("%s: a queued frame is unreadable and dropped: %v", d.id, err)
			continue
		}
		conn.Send(s.ctx, &m)
	}
}

// newDevice makes a registry entry with its dispatcher. Called with s.mu
// held or before the server serves.
func (s *Server) newDevice(id string, typ aip.ClientType) *device {
	d := &device{id: id, clientType: typ, srv: s}
	d.disp = dispatcher.NewWebSocket(d, dispatcher.WebSocketOptions{CommandTimeout: s.opts.CommandTimeout,
		AwayTimeout: s.opts.AwayTimeout, CancelGrace: s.opts.CancelGrace, NewID: s.opts.NewID,
		OnGone: func() { s.abandon(d) }})
	return d
}

// restore loads what an earlier server process left in the store: the
// device registry (every device away until it registers again), the
// running tasks, which resume when their device is back (or fail after
// AwayTimeout), and the most recent ended tasks for the API.
func (s *Server) restore() error {
	ctx, cancel := storeCtx()
	defer cancel()
	devs, err := s.store.Devices(ctx)
	if err != nil {
		return err
	}
	var alive, heldElsewhere map[string]bool
	// The reconnection wait each device declared, for the devices of the
	// tasks taken below (one of several servers takes tasks, not the
	// whole registry).
	reconnects := map[string]time.Duration{}
	for _, rec := range devs {
		var dr deviceRecord
		if json.Unmarshal(rec.Data, &dr) == nil && dr.ReconnectMS > 0 {
			reconnects[rec.ID] = time.Duration(dr.ReconnectMS) * time.Millisecond
		}
	}
	if s.peers != nil {
		// One of several servers: the others' devices and tasks stay
		// theirs (the API reads them from the store); only what dead
		// servers left, and no live server's device holds, is taken.
		if alive, err = s.peers.c.Alive(ctx); err != nil {
			return err
		}
		heldElsewhere = heldDevices(devs, alive, s.serverID())
		devs = nil
	}
	now := time.Now()
	for _, rec := range devs {
		var dr deviceRecord
		if err := json.Unmarshal(rec.Data, &dr); err != nil || dr.ID == "" {
			s.logf("store: device %s has an unreadable record; skipped: %v", rec.ID, err)
			continue
		}
		d := s.newDevice(dr.ID, dr.Type)
		d.targetID, d.platform, d.info, d.namespaces, d.awaySince = dr.TargetID, dr.Platform, dr.Info, dr.Namespaces, rec.UpdatedAt
		d.instance, d.tools, d.asksTools = dr.Instance, dr.Tools, dr.AsksTools
		d.reconnect = time.Duration(dr.ReconnectMS) * time.Millisecond
		d.disp.SetReconnectWait(d.reconnect)
		// Its away clock, from now: AwayTimeout plus the longest its
		// client waits between attempts (and for one to answer). A
		// client that has been in its backoff since the server went
		// down may have just begun its longest wait: the clock must
		// outlast it, however long the server was down.
		d.disp.Disconnected(s.ctx)
		s.devices[d.id] = d
	}
	tasks, err := s.store.Tasks(ctx, "", 0)
	if err != nil {
		return err
	}
	var ended []*task
	for _, rec := range tasks {
		// A task recorded under this server's own id is its own, from
		// before a restart under the same --server-id.
		mine := rec.Server == s.serverID()
		if alive != nil && (rec.Status != string(StatusRunning) || (!mine && (alive[rec.Server] || heldElsewhere[rec.ClientID] || !s.claim(rec)))) {
			continue
		}
		t := s.restoredTask(rec)
		if t == nil {
			continue
		}
		info := t.info
		if info.Status != StatusRunning {
			if len(ended) < s.opts.KeepTasks {
				close(t.done)
				ended = append(ended, t)
			}
			continue
		}
		s.adoptLocked(t, s.deviceLocked(info.ClientID, now, reconnects[info.ClientID]))
	}
	for i := len(ended) - 1; i >= 0; i-- { // oldest first
		s.tasks[ended[i].info.ID] = ended[i]
		s.ended = append(s.ended, ended[i].info.ID)
	}
	for _, d := range s.devices {
		if len(d.resumes) > 0 {
			s.logf("%d task(s) of %s wait for it to come back (for %s)", len(d.resumes), d.id, d.disp.AwayFor())
		}
	}
	return nil
}

// deviceLocked is the registry entry of a device, made (away since
// since, taking up to reconnect to register again once it can) when there
// is none. Called with s.mu held, or before the server serves.
func (s *Server) deviceLocked(id string, since time.Time, reconnect time.Duration) *device {
	d := s.devices[id]
	if d == nil {
		d = s.newDevice(id, aip.ClientDevice)
		d.awaySince, d.reconnect = since, reconnect
		d.disp.SetReconnectWait(reconnect)
		d.disp.Disconnected(s.ctx)
		s.devices[d.id] = d
	}
	return d
}

// adoptLocked makes a restored task this server's, on device d: it
// waits in d.resumes for the device to register, or, when d is
// connected, is to be started now (adoptLocked reports it; the caller
// starts it without s.mu). Called with s.mu held, or before the server
// serves.
func (s *Server) adoptLocked(t *task, d *device) (startNow bool) {
	t.target, t.resume = d, true
	t.ctx, t.cancel = context.WithCancelCause(s.ctx)
	s.running++
	d.tasks++
	s.tasks[t.info.ID] = t
	s.taskWG.Add(1)
	if d.conn != nil {
		return true
	}
	d.resumes = append(d.resumes, t)
	return false
}

// claim takes a dead server's task for this one.
func (s *Server) claim(rec store.Task) bool {
	cl, ok := s.store.(claimer)
	if !ok {
		return false
	}
	ctx, cancel := storeCtx()
	defer cancel()
	won, err := cl.ClaimTask(ctx, rec.ID, rec.Server, s.serverID())
	if err != nil {
		s.logf("task %s: not taken over: %v", rec.ID, err)
	}
	return won
}

// restoredTask rebuilds a task from its record, or says why it cannot.
func (s *Server) restoredTask(rec store.Task) *task {
	var info TaskInfo
	if err := json.Unmarshal(rec.Data, &info); err != nil {
		s.logf("store: task %s has an unreadable record; skipped: %v", rec.ID, err)
		return nil
	}
	t := &task{srv: s, info: info, cmdIndex: map[string]int{}, done: make(chan struct{})}
	for i, c := range info.Commands {
		t.cmdIndex[c.CallID] = i
	}
	for i := range info.Pending {
		it := info.Pending[i]
		it.settled, it.expireStop = make(chan struct{}), func() bool { return false }
		if it.Status != "open" {
			close(it.settled)
		}
		t.pending = append(t.pending, &it)
	}
	return t
}
