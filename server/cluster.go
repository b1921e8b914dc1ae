package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server/store"
)

// Several servers on one PostgreSQL store are all active. Each task runs
// on the server that holds its device's connection; an API call that
// reaches another server is carried to that one through the database
// (store.Member's bus) and its answer carried back. When a device
// registers at a server, that server takes over the device's running
// tasks: from a dead server by claiming them in the store, from a live
// one by asking it to let go first. Either way the task resumes from its
// journal, as after a restart: no command runs twice.

// Cluster is a server's membership of a cluster (*store.Member).
type Cluster interface {
	ID() string
	Alive(ctx context.Context) (map[string]bool, error)
	Send(ctx context.Context, to string, body []byte) error
	// Inbox delivers the messages sent to this server; it is closed when
	// the membership ends.
	Inbox() <-chan []byte
}

// claimer is a store whose tasks can change servers (*store.SQL).
type claimer interface {
	ClaimTask(ctx context.Context, id, from, to string) (bool, error)
}

// peerTimeout bounds a call to another server.
const peerTimeout = 30 * time.Second

// sweepEvery is how often a server looks for tasks of its devices left
// by a server that died.
const sweepEvery = 5 * time.Second

// peerMsg is what servers send each other.
type peerMsg struct {
	// Kind is call (an API request), release (let go of a device), or
	// reply (to either).
	Kind string `json:"kind"`
	From string `json:"from"`
	// ID pairs a reply with what it answers.
	ID     string `json:"id"`
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Body   []byte `json:"body,omitempty"`
	Status int    `json:"status,omitempty"`
	Device string `json:"device,omitempty"`
	Error  string `json:"error,omitempty"`
}

// peers is the server's side of the cluster: calls waiting for replies.
type peers struct {
	c       Cluster
	seq     atomic.Int64
	mu      sync.Mutex
	waiting map[string]chan peerMsg
}

// serverID is this server's id in its cluster, empty when alone.
func (s *Server) serverID() string {
	if s.peers == nil {
		return ""
	}
	return s.peers.c.ID()
}

// forwardedKey marks a request another server passed on: it is answered
// here, never passed on again, and was authorised there.
type forwardedKey struct{}

func forwarded(r *http.Request) bool { return r.Context().Value(forwardedKey{}) != nil }

// joinCluster starts reading the cluster's messages and sweeping for
// orphaned tasks. Messages are answered until the membership ends, after
// Shutdown or Suspend too: a server that is stopping still lets go of
// its devices at once, rather than leaving the others to wait for it.
func (s *Server) joinCluster() {
	c := s.peers.c
	go func() {
		for b := range c.Inbox() {
			var m peerMsg
			if err := json.Unmarshal(b, &m); err != nil {
				s.logf("cluster: an unreadable message was dropped: %v", err)
				continue
			}
			s.onPeer(m)
		}
	}()
	go func() {
		tick := time.NewTicker(sweepEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				s.sweep()
			case <-s.ctx.Done():
				return
			}
		}
	}()
}

func (s *Server) onPeer(m peerMsg) {
	switch m.Kind {
	case "reply":
		s.peers.mu.Lock()
		ch := s.peers.waiting[m.ID]
		delete(s.peers.waiting, m.ID)
		s.peers.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case "call":
		go func() {
			status, body := s.serveForwarded(m)
			s.reply(m, peerMsg{Status: status, Body: body})
		}()
	case "release":
		go func() {
			var r peerMsg
			if err := s.release(m.Device, m.From); err != nil {
				r.Error = err.Error()
			}
			s.reply(m, r)
		}()
	default:
		s.logf("cluster: server %s sent a %q message, which this server does not know; dropped", m.From, m.Kind)
	}
}

func (s *Server) reply(to, r peerMsg) {
	r.Kind, r.From, r.ID = "reply", s.serverID(), to.ID
	b, _ := json.Marshal(r)
	ctx, cancel := storeCtx()
	defer cancel()
	if err := s.peers.c.Send(ctx, to.From, b); err != nil {
		s.logf("cluster: the reply to server %s was not sent: %v", to.From, err)
	}
}

// ask sends a message to another server and waits for its reply.
func (s *Server) ask(ctx context.Context, to string, m peerMsg) (peerMsg, error) {
	p := s.peers
	m.From, m.ID = p.c.ID(), strconv.FormatInt(p.seq.Add(1), 10)
	ch := make(chan peerMsg, 1)
	p.mu.Lock()
	p.waiting[m.ID] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, m.ID)
		p.mu.Unlock()
	}()
	b, _ := json.Marshal(m)
	if err := p.c.Send(ctx, to, b); err != nil {
		return peerMsg{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return peerMsg{}, fmt.Errorf("server %s did not answer within %s", to, peerTimeout)
	}
}

// alive lists the live servers; on a store error it says so and counts
// none but this one alive (nothing is taken from a server that may live).
func (s *Server) alive() (map[string]bool, error) {
	ctx, cancel := storeCtx()
	defer cancel()
	return s.peers.c.Alive(ctx)
}

// elsewhere is the live server other than this one that id names, or "".
func (s *Server) elsewhere(id string) string {
	if s.peers == nil || id == "" || id == s.serverID() {
		return ""
	}
	alive, err := s.alive()
	if err != nil || !alive[id] {
		return ""
	}
	return id
}

// deviceServer is the live server other than this one that device
// clientID is connected to, or "".
func (s *Server) deviceServer(clientID string) string {
	if rec, ok := s.storedDevice(clientID); ok && rec.Connected {
		return s.elsewhere(rec.Server)
	}
	return ""
}

// forward passes a request to the server that can answer it and copies
// its answer back.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, to string, body []byte) {
	rep, err := s.ask(r.Context(), to, peerMsg{Kind: "call", Method: r.Method, Path: r.URL.RequestURI(), Body: body})
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": fmt.Sprintf("server %s, which holds this, could not be reached through the store: %v; try again", to, err)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Saucer-Server", to)
	w.WriteHeader(rep.Status)
	w.Write(rep.Body)
}

// serveForwarded answers a request another server passed on.
func (s *Server) serveForwarded(m peerMsg) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.WithValue(s.ctx, forwardedKey{}, true), peerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, m.Method, m.Path, bytes.NewReader(m.Body))
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": "the forwarded request is malformed: " + err.Error()})
		return http.StatusBadRequest, b
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.Handler().ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// recorder keeps a response to carry it back to the server that asked.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

// routeDevice passes a dispatch for a device connected to another live
// server to that server.
func (s *Server) routeDevice(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.peers == nil || forwarded(r) {
			h(w, r)
			return
		}
		body, ok := ReadBody(w, r, maxBody)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req DispatchRequest
		json.Unmarshal(body, &req)
		s.mu.Lock()
		here := s.connectedLocked(req.ClientID)
		s.mu.Unlock()
		if !here {
			if to := s.deviceServer(req.ClientID); to != "" {
				// The other server reads queued_by on a passed-on call:
				// it names this server's caller, never what the body
				// claimed.
				req.QueuedBy = s.queuedBy()
				body, _ = json.Marshal(req)
				s.forward(w, r, to, body)
				return
			}
		}
		h(w, r)
	}
}

// routeTask passes a request about a task another live server runs to
// that server; about a task of a server that is gone, it answers from
// the store.
func (s *Server) routeTask(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s.mu.Lock()
		local := s.tasks[id] != nil
		s.mu.Unlock()
		if s.peers == nil || forwarded(r) || local {
			h(w, r)
			return
		}
		ctx, cancel := storeCtx()
		rec, err := s.store.Task(ctx, id)
		cancel()
		if err != nil {
			h(w, r) // not found here either: the handler says so
			return
		}
		if to := s.elsewhere(rec.Server); to != "" {
			body, ok := ReadBody(w, r, maxBody)
			if !ok {
				return
			}
			s.forward(w, r, to, body)
			return
		}
		var info TaskInfo
		if err := json.Unmarshal(rec.Data, &info); err != nil {
			writeError(w, fmt.Errorf("task %s has an unreadable record: %w", id, err))
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/tasks/"+id:
			writeJSON(w, http.StatusOK, info)
		case r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, info.Pending)
		case info.Status != StatusRunning:
			if r.Method == http.MethodDelete {
				writeJSON(w, http.StatusConflict, map[string]any{"error": ErrNotRunning.Error(), "task": info})
			} else {
				writeError(w, fmt.Errorf("%w (%s)", ErrTaskEnded, info.Status))
			}
		default:
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf(
				"task %s ran on server %s, which is gone; it resumes when device %s connects to a server: try again then", id, rec.Server, info.ClientID)})
		}
	}
}

// storedDevice reads a device's record.
func (s *Server) storedDevice(id string) (deviceRecord, bool) {
	ctx, cancel := storeCtx()
	defer cancel()
	d, err := s.store.Device(ctx, id)
	var rec deviceRecord
	if err != nil || json.Unmarshal(d.Data, &rec) != nil {
		return deviceRecord{}, false
	}
	rec.Server, rec.Connected = d.Server, d.Connected
	return rec, true
}

// clusterClients adds the devices other live servers hold to this
// server's own.
func (s *Server) clusterClients(local []ClientInfo) []ClientInfo {
	alive, err := s.alive()
	if err != nil {
		return local
	}
	ctx, cancel := storeCtx()
	devs, err := s.store.Devices(ctx)
	cancel()
	if err != nil {
		return local
	}
	seen := map[string]bool{}
	for i := range local {
		local[i].Server = s.serverID()
		seen[local[i].ClientID] = true
	}
	for _, d := range devs {
		var rec deviceRecord
		if seen[d.ID] || d.Server == s.serverID() || !alive[d.Server] || json.Unmarshal(d.Data, &rec) != nil {
			continue
		}
		ci := ClientInfo{ClientID: rec.ID, ClientType: rec.Type, TargetID: rec.TargetID, Platform: rec.Platform, Status: "away",
			LastSeen: d.UpdatedAt, Device: rec.Info, Namespaces: rec.Namespaces, Tools: rec.Tools.summary(), Server: d.Server}
		if d.Connected {
			ci.Status, ci.ConnectedAt = "connected", d.UpdatedAt
		}
		local = append(local, ci)
	}
	sortClients(local)
	return local
}

// clusterTasks lists the store's tasks with this server's own as they
// are now.
func (s *Server) clusterTasks(local []TaskInfo) []TaskInfo {
	ctx, cancel := storeCtx()
	recs, err := s.store.Tasks(ctx, "", s.opts.KeepTasks)
	cancel()
	if err != nil {
		return local
	}
	seen := map[string]bool{}
	for _, t := range local {
		seen[t.ID] = true
	}
	for _, rec := range recs {
		var info TaskInfo
		if seen[rec.ID] || json.Unmarshal(rec.Data, &info) != nil {
			continue
		}
		local = append(local, info)
	}
	sortTasks(local)
	return local
}

// ErrHandedOver stops a task that another server takes over.
var ErrHandedOver = errors.New("the task moved to the server its device now uses")

// release lets go of a device that registers at server to: refused while
// the device is connected here; otherwise its running tasks stop without
// ending (their records and journals stay as they are) and leave this
// server, and the device leaves the registry, so that the other server
// resumes them.
func (s *Server) release(id, to string) error {
	s.mu.Lock()
	d := s.devices[id]
	if d == nil {
		s.mu.Unlock()
		return nil
	}
	if d.conn != nil {
		s.mu.Unlock()
		return fmt.Errorf("client_id '%s' is already registered (connected to server %s); duplicate registrations are not allowed", id, s.serverID())
	}
	var moving []*task
	for _, t := range s.tasks {
		if t.target == d && !t.ended() {
			moving = append(moving, t)
		}
	}
	waiting := d.resumes
	d.resumes = nil
	delete(s.devices, id) // its away clock, when it runs out, finds it gone
	s.mu.Unlock()
	for _, t := range moving {
		t.handedOff.Store(true)
		t.cancel(ErrHandedOver)
	}
	for _, t := range waiting { // restored, never started: nothing to stop
		t.handedOff.Store(true)
		s.endUnstarted(t)
	}
	for _, t := range moving {
		select {
		case <-t.done:
		case <-time.After(peerTimeout / 2):
			return fmt.Errorf("task %s of %s did not stop within %s; try again", t.info.ID, id, peerTimeout/2)
		}
		// What the task wrote without waiting (model replies, answers)
		// must be in the store before the other server reads its
		// journal: it would ask the model again, and its entries would
		// take the numbers of those still on their way.
		ctx, cancel := context.WithTimeout(context.Background(), peerTimeout/2)
		err := s.store.Sync(ctx, t.info.ID)
		cancel()
		if err != nil {
			return fmt.Errorf("task %s of %s: %w; try again", t.info.ID, id, err)
		}
	}
	if n := len(moving) + len(waiting); n > 0 {
		s.logf("%d task(s) of %s move to server %s, where it registers", n, id, to)
	}
	return nil
}

// letGo asks the live servers that last held a device, or run tasks of
// it, to let go of it before it registers here, and returns them; a
// refusal (the device is connected there) is returned as an error.
func (s *Server) letGo(id string) ([]string, error) {
	holders := map[string]bool{}
	if rec, ok := s.storedDevice(id); ok {
		holders[rec.Server] = true
	}
	ctx, cancel := storeCtx()
	recs, err := s.store.Tasks(ctx, string(StatusRunning), 0)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("the tasks of client_id '%s' could not be read (%v); try again", id, err)
	}
	for _, rec := range recs {
		if rec.ClientID == id {
			holders[rec.Server] = true
		}
	}
	var released []string
	for h := range holders {
		to := s.elsewhere(h)
		if to == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, peerTimeout)
		rep, err := s.ask(ctx, to, peerMsg{Kind: "release", Device: id})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("server %s holds client_id '%s' and could not be asked to let go (%v); try again", to, id, err)
		}
		if rep.Error != "" {
			return nil, errors.New(rep.Error)
		}
		released = append(released, to)
	}
	return released, nil
}

// adoptOrphans takes over the running tasks of devices connected here
// whose server is gone or let go of them (released), and resumes them.
func (s *Server) adoptOrphans(released []string, devs ...*device) {
	if _, ok := s.store.(claimer); !ok || len(devs) == 0 {
		return
	}
	alive, err := s.alive()
	if err != nil {
		s.logf("cluster: orphaned tasks not looked for: %v", err)
		return
	}
	ctx, cancel := storeCtx()
	recs, err := s.store.Tasks(ctx, string(StatusRunning), 0)
	cancel()
	if err != nil {
		s.logf("cluster: orphaned tasks not looked for: %v", err)
		return
	}
	byID := make(map[string]*device, len(devs))
	for _, d := range devs {
		byID[d.id] = d
	}
	for _, rec := range recs {
		d := byID[rec.ClientID]
		if d == nil || rec.Server == s.serverID() || (alive[rec.Server] && !slices.Contains(released, rec.Server)) {
			continue
		}
		s.mu.Lock()
		known := s.tasks[rec.ID] != nil
		s.mu.Unlock()
		if known {
			continue
		}
		if !s.claim(rec) {
			continue // another server took it, or the store failed: the next sweep sees
		}
		s.logf("task %s of %s: taken over from %s", rec.ID, d.id, formerServer(rec.Server))
		t := s.restoredTask(rec)
		if t == nil {
			continue
		}
		s.mu.Lock()
		now := s.adoptLocked(t, d)
		s.mu.Unlock()
		if now {
			s.start(t)
		}
	}
}

// formerServer names the server a task is taken from, for the log.
func formerServer(id string) string {
	if id == "" {
		return "a server that ran alone"
	}
	return "server " + id
}

// heldDevices are the devices whose connection a live server other than
// except holds.
func heldDevices(devs []store.Device, alive map[string]bool, except string) map[string]bool {
	held := map[string]bool{}
	for _, d := range devs {
		if d.Connected && alive[d.Server] && d.Server != except {
			held[d.ID] = true
		}
	}
	return held
}

// adoptStranded takes the running tasks of dead servers whose devices no
// live server holds, and waits for their devices as after a restart: a
// device that comes back (here, or at a server that asks this one to let
// go) resumes them; one that does not within AwayTimeout fails them
// with the reason. Without it, such a task would stay running until some
// server restarts.
func (s *Server) adoptStranded() {
	alive, err := s.alive()
	if err != nil {
		return
	}
	ctx, cancel := storeCtx()
	recs, err := s.store.Tasks(ctx, string(StatusRunning), 0)
	var devs []store.Device
	if err == nil {
		devs, err = s.store.Devices(ctx)
	}
	cancel()
	if err != nil {
		s.logf("cluster: stranded tasks not looked for: %v", err)
		return
	}
	held := heldDevices(devs, alive, s.serverID())
	for _, rec := range recs {
		if alive[rec.Server] || rec.Server == s.serverID() || held[rec.ClientID] {
			continue
		}
		s.mu.Lock()
		known := s.tasks[rec.ID] != nil
		here := s.devices[rec.ClientID]
		s.mu.Unlock()
		if known || (here != nil && here.conn != nil) || !s.claim(rec) {
			continue
		}
		t := s.restoredTask(rec)
		if t == nil {
			continue
		}
		var reconnect time.Duration
		for _, dev := range devs {
			var dr deviceRecord
			if dev.ID == rec.ClientID && json.Unmarshal(dev.Data, &dr) == nil {
				reconnect = time.Duration(dr.ReconnectMS) * time.Millisecond
			}
		}
		s.mu.Lock()
		d := s.deviceLocked(rec.ClientID, time.Now(), reconnect) // away: its away clock runs
		now := s.adoptLocked(t, d)
		s.mu.Unlock()
		s.logf("task %s of %s: taken over from %s, which is gone; waiting %s for the device", rec.ID, rec.ClientID, formerServer(rec.Server), d.disp.AwayFor())
		switch {
		case now:
			s.start(t) // it registered meanwhile
		case d.disp.Gone():
			s.abandon(d) // its away clock ran out before
		}
	}
}

// sweep adopts what dead servers left of the devices connected here.
func (s *Server) sweep() {
	s.mu.Lock()
	var here []*device
	for _, d := range s.devices {
		if d.conn != nil && d.clientType == aip.ClientDevice {
			here = append(here, d)
		}
	}
	closing := s.closing
	s.mu.Unlock()
	if !closing {
		s.adoptOrphans(nil, here...)
		s.adoptStranded()
	}
}

var _ Cluster = (*store.Member)(nil)

// ClusterClients lists this server's devices and, in a cluster, those
// the other live servers hold (as GET /api/clients does).
func (s *Server) ClusterClients() []ClientInfo {
	list := s.Clients()
	if s.peers != nil {
		list = s.clusterClients(list)
	}
	return list
}

// FindTask finds the task named name of device clientID: among this
// server's tasks and, in a cluster, the store's (the tasks of the other
// servers, and those this server ran before a restart).
func (s *Server) FindTask(clientID, name string) (TaskInfo, bool) {
	for _, t := range s.Tasks() {
		if t.ClientID == clientID && t.TaskName == name {
			return t, true
		}
	}
	if s.peers == nil {
		return TaskInfo{}, false
	}
	ctx, cancel := storeCtx()
	recs, err := s.store.Tasks(ctx, "", s.opts.KeepTasks)
	cancel()
	if err != nil {
		return TaskInfo{}, false
	}
	for _, rec := range recs {
		var info TaskInfo
		if rec.ClientID == clientID && json.Unmarshal(rec.Data, &info) == nil && info.TaskName == name {
			return info, true
		}
	}
	return TaskInfo{}, false
}

// DispatchAnywhere is Dispatch for a device connected to any live server
// of the cluster: a device connected here gets the task here; one that
// another server holds gets it there, the dispatch passed on through the
// store as POST /api/dispatch is, so that the task runs, and is
// journaled and taken over, where its device is.
func (s *Server) DispatchAnywhere(ctx context.Context, clientID, request, taskName, queuedBy string) (TaskInfo, error) {
	info, err := s.Dispatch(clientID, request, taskName, queuedBy)
	if s.peers == nil || !errors.Is(err, ErrNoDevice) {
		return info, err
	}
	to := s.deviceServer(clientID)
	if to == "" {
		return info, err
	}
	// The other server names the task's caller as this one was asked to
	// (a constellation), not as the API call that carries it.
	body, _ := json.Marshal(DispatchRequest{ClientID: clientID, Request: request, TaskName: taskName, QueuedBy: queuedBy})
	rep, err := s.ask(ctx, to, peerMsg{Kind: "call", Method: http.MethodPost, Path: "/api/dispatch", Body: body})
	if err != nil {
		return TaskInfo{}, fmt.Errorf("device %q is connected to server %s, which could not be reached through the store: %w", clientID, to, err)
	}
	if rep.Status != http.StatusOK {
		return TaskInfo{}, peerError(to, rep)
	}
	var d DispatchResponse
	if err := json.Unmarshal(rep.Body, &d); err != nil || d.TaskID == "" {
		return TaskInfo{}, fmt.Errorf("server %s answered the dispatch to %q with no task id (%s)", to, clientID, rep.Body)
	}
	return TaskInfo{ID: d.TaskID, ClientID: d.ClientID, TaskName: d.TaskName, Request: request, Status: StatusRunning}, nil
}

// peerError is the error another server answered a passed-on call with,
// with this package's error for its status, so callers can tell a
// device that has gone (ErrNoDevice) from a busy one (ErrBusy).
func peerError(from string, rep peerMsg) error {
	var body struct {
		Error string `json:"error"`
	}
	json.Unmarshal(rep.Body, &body)
	msg := fmt.Sprintf("server %s: %s", from, body.Error)
	switch rep.Status {
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrNoDevice, msg)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s", ErrBusy, msg)
	case http.StatusBadRequest:
		return fmt.Errorf("%w: %s", ErrBadRequest, msg)
	}
	return fmt.Errorf("%s (HTTP %d)", msg, rep.Status)
}

// WaitAnywhere is Wait for a task of any server of the cluster: it
// follows the task where it runs (here, or at another live server with a
// long poll passed on through the store), also when it moves between
// servers with its device, and returns its state once it has ended, or
// as it stands when ctx ends or this server stops. A task whose server
// is gone is looked at again every clusterPoll, until a server that its
// device connects to takes it over.
func (s *Server) WaitAnywhere(ctx context.Context, id string) (TaskInfo, error) {
	for {
		s.mu.Lock()
		local := s.tasks[id] != nil
		s.mu.Unlock()
		if local || s.peers == nil {
			info, err := s.Wait(ctx, id)
			if err != nil || info.Status != StatusRunning || ctx.Err() != nil || s.ctx.Err() != nil {
				return info, err
			}
			s.mu.Lock()
			left := s.tasks[id] == nil
			s.mu.Unlock()
			if !left {
				return info, nil // stopped here for a restart: the next server resumes it
			}
			continue // handed over to the server its device moved to
		}
		sctx, cancel := storeCtx()
		rec, err := s.store.Task(sctx, id)
		cancel()
		if err != nil {
			return TaskInfo{}, fmt.Errorf("%w: %q (%v)", ErrNoTask, id, err)
		}
		var info TaskInfo
		if err := json.Unmarshal(rec.Data, &info); err != nil {
			return TaskInfo{}, fmt.Errorf("task %s has an unreadable record: %w", id, err)
		}
		if info.Status != StatusRunning {
			return info, nil
		}
		if to := s.elsewhere(rec.Server); to != "" {
			rep, err := s.ask(ctx, to, peerMsg{Kind: "call", Method: http.MethodGet, Path: "/api/tasks/" + id + "?wait=" + maxWait.String()})
			if err == nil && rep.Status == http.StatusOK && json.Unmarshal(rep.Body, &info) == nil && info.Status != StatusRunning {
				return info, nil
			}
			if ctx.Err() != nil || s.ctx.Err() != nil {
				return info, nil
			}
			if err == nil && rep.Status == http.StatusOK {
				continue // still running there, or moved: look again
			}
		}
		// Its server is gone (or did not answer): the task resumes where
		// its device connects next; look again then.
		select {
		case <-ctx.Done():
			return info, nil
		case <-s.ctx.Done():
			return info, nil
		case <-time.After(clusterPoll):
		}
	}
}
