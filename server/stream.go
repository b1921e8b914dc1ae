package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultKeepAlive is how often an idle stream sends a comment, so that
// proxies and browsers keep it open (and a closed one is noticed).
const DefaultKeepAlive = 15 * time.Second

// publishClient tells the server's stream that a client registered,
// changed or left the registry.
func (s *Server) publishClient(d *device) {
	if !s.events.wanted() {
		return
	}
	s.mu.Lock()
	here := s.devices[d.id] == d
	var ci ClientInfo
	if here {
		ci = s.clientInfoLocked(d)
	}
	s.mu.Unlock()
	if here {
		s.events.publish(EventClient, "", ci)
	} else {
		s.events.publish(EventClientGone, "", map[string]string{"client_id": d.id})
	}
}

// snapshot is the server's state as its stream starts: as GET
// /api/tasks and GET /api/clients show it (with the other servers' in a
// cluster).
func (s *Server) snapshot(r *http.Request) Snapshot {
	tasks := s.Tasks()
	clients := s.Clients()
	if s.peers != nil && !forwarded(r) {
		tasks, clients = s.clusterTasks(tasks), s.clusterClients(clients)
	}
	snap := Snapshot{Tasks: make([]TaskSummary, 0, len(tasks)), Clients: clients}
	for _, t := range tasks {
		snap.Tasks = append(snap.Tasks, summaryOf(t))
	}
	return snap
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "this connection cannot stream events"})
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	// A browser reconnects 2 s after losing the stream.
	fmt.Fprint(w, "retry: 2000\n\n")
	f.Flush()
	return &sse{w: w, f: f}, true
}

func (e *sse) send(ev Event) error {
	var b bytes.Buffer
	if ev.ID != "" {
		b.WriteString("id: " + ev.ID + "\n")
	}
	b.WriteString("event: " + ev.Type + "\ndata: ")
	b.Write(ev.Data) // compact JSON: one line
	b.WriteString("\n\n")
	_, err := e.w.Write(b.Bytes())
	return err
}

func (e *sse) flush() { e.f.Flush() }

func (e *sse) comment(text string) error {
	_, err := fmt.Fprintf(e.w, ": %s\n\n", text)
	e.f.Flush()
	return err
}

// lastEventID is where a client resumes: the Last-Event-ID header a
// browser sends when it reconnects, or ?after= for a program.
func lastEventID(r *http.Request) string {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return r.URL.Query().Get("after")
}

func (s *Server) keepAlive() time.Duration {
	if s.opts.KeepAlive > 0 {
		return s.opts.KeepAlive
	}
	return DefaultKeepAlive
}

// serverEvents answers GET /api/events: every task's creation, changes
// and end, questions and approvals, and clients coming and going.
func (s *Server) serverEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "", func() (any, string, error) {
		mark := s.events.mark()
		if s.peers != nil && !forwarded(r) {
			s.readCluster() // what others change after the snapshot is published
		}
		return s.snapshot(r), mark, nil
	})
}

// taskEvents answers GET /api/tasks/{id}/events: the task's steps,
// decisions, commands, progress, questions and approvals, and its end. A
// task that another server runs is streamed from there; one that no
// server runs is its record, then nothing.
func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	t := s.tasks[id]
	s.mu.Unlock()
	if t == nil {
		if s.peers != nil && !forwarded(r) {
			s.remoteTaskEvents(w, r, id)
			return
		}
		writeError(w, fmt.Errorf("%w: %q", ErrNoTask, id))
		return
	}
	s.stream(w, r, id, func() (any, string, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		// Under the task's lock, which its events are published under:
		// the mark is exactly the last event the snapshot holds.
		mark := s.events.mark()
		info := t.info
		info.Steps = append([]StepInfo{}, t.info.Steps...)
		info.Commands = append(info.Commands[:0:0], t.info.Commands...)
		info.Pending = make([]PendingInfo, 0, len(t.pending))
		for _, it := range t.pending {
			info.Pending = append(info.Pending, *it)
		}
		info.Progress = t.progressListLocked()
		return info, mark, nil
	})
}

// stream serves one subscriber: a snapshot or the missed events, then
// live events, keepalive comments, and a resync (with a new snapshot)
// when it falls behind. With ?wait= it answers once, in JSON: the events
// since ?after= (a snapshot first when they are not held), waiting up to
// wait for the first (how another server passes a task's stream on).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, task string, take func() (any, string, error)) {
	wait, err := waitParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	sub, missed, resumed := s.events.subscribe(task, lastEventID(r))
	defer s.events.unsubscribe(sub)
	var skipTo uint64 // live events up to this one are in the snapshot
	snapshot := func() (Event, error) {
		v, mark, err := take()
		if err != nil {
			return Event{}, err
		}
		skipTo, _ = s.events.parse(mark)
		data, err := json.Marshal(v)
		return Event{ID: mark, Type: EventSnapshot, TaskID: task, Data: data}, err
	}
	if !resumed {
		snap, err := snapshot()
		if err != nil {
			writeError(w, err)
			return
		}
		missed = []Event{snap}
	}
	fresh := func(e Event) bool {
		seq, _ := s.events.parse(e.ID)
		return seq > skipTo
	}
	if r.URL.Query().Has("wait") {
		s.pollOnce(w, r, sub, missed, fresh, wait)
		return
	}
	out, ok := startSSE(w)
	if !ok {
		return
	}
	for _, e := range missed {
		if out.send(e) != nil {
			return
		}
	}
	out.flush()
	tick := time.NewTicker(s.keepAlive())
	defer tick.Stop()
	for {
		select {
		case e := <-sub.ch:
			if !fresh(e) {
				continue
			}
			if out.send(e) != nil {
				return
			}
			// Send what else is queued before flushing: a burst costs
			// one write to the network.
			for n := len(sub.ch); n > 0; n-- {
				if e := <-sub.ch; fresh(e) && out.send(e) != nil {
					return
				}
			}
			out.flush()
		case <-sub.lost:
			// Too slow: what it missed is gone. Start again from a
			// snapshot, on a new subscription.
			s.events.unsubscribe(sub)
			sub, _, _ = s.events.subscribe(task, "")
			snap, err := snapshot()
			if err != nil {
				return
			}
			if out.send(Event{Type: EventResync, TaskID: task, Data: json.RawMessage(`{}`)}) != nil || out.send(snap) != nil {
				return
			}
			out.flush()
		case <-tick.C:
			if out.comment("keepalive") != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			// The server stops: the client reconnects to the next one.
			return
		}
	}
}

// Poll is the answer of a stream asked with ?wait=: its events, oldest
// first (a snapshot first when the client must start again).
type Poll struct {
	Events []Event `json:"events"`
}

// pollOnce answers a stream asked with ?wait=, in JSON.
func (s *Server) pollOnce(w http.ResponseWriter, r *http.Request, sub *subscriber, events []Event, fresh func(Event) bool, wait time.Duration) {
	if len(events) == 0 && wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case e := <-sub.ch:
			if fresh(e) {
				events = append(events, e)
			}
		case <-sub.lost:
		case <-timer.C:
		case <-r.Context().Done():
		case <-s.ctx.Done():
		}
	}
	for n := len(sub.ch); n > 0; n-- {
		if e := <-sub.ch; fresh(e) {
			events = append(events, e)
		}
	}
	if events == nil {
		events = []Event{}
	}
	writeJSON(w, http.StatusOK, Poll{Events: events})
}

// remoteTaskEvents streams a task that this server does not run: from the
// server that runs it, through the store (a long poll at a time, each
// carried like any API call passed on), or, when no live server runs it,
// its record.
func (s *Server) remoteTaskEvents(w http.ResponseWriter, r *http.Request, id string) {
	ctx, cancel := storeCtx()
	rec, err := s.store.Task(ctx, id)
	cancel()
	if err != nil {
		writeError(w, fmt.Errorf("%w: %q", ErrNoTask, id))
		return
	}
	out, ok := startSSE(w)
	if !ok {
		return
	}
	after := lastEventID(r)
	for {
		to := s.elsewhere(rec.Server)
		if to == "" {
			// Nobody runs it: its record, and the client comes back later.
			if after == "" {
				var info TaskInfo
				if json.Unmarshal(rec.Data, &info) == nil {
					data, _ := json.Marshal(info)
					out.send(Event{Type: EventSnapshot, TaskID: id, Data: data})
					out.flush()
				}
			}
			s.idle(out, r)
			return
		}
		path := "/api/tasks/" + url.PathEscape(id) + "/events?wait=10s&after=" + url.QueryEscape(after)
		rep, err := s.ask(r.Context(), to, peerMsg{Kind: "call", Method: http.MethodGet, Path: path})
		if err != nil || rep.Status != http.StatusOK {
			return // the client reconnects, and is routed anew
		}
		var p Poll
		if json.Unmarshal(rep.Body, &p) != nil {
			return
		}
		for _, e := range p.Events {
			if out.send(e) != nil {
				return
			}
			after = e.ID
		}
		if len(p.Events) == 0 && out.comment("keepalive") != nil {
			return
		}
		out.flush()
		if r.Context().Err() != nil || s.ctx.Err() != nil {
			return
		}
		ctx, cancel := storeCtx()
		rec2, err := s.store.Task(ctx, id)
		cancel()
		if err != nil {
			return
		}
		// A task that moved to another server: its events there have
		// other ids, and the new server starts from a snapshot.
		rec = rec2
	}
}

// idle keeps a stream open with keepalives until the client or the
// server leaves, or a minute passes (then the client reconnects and
// finds where the task is then).
func (s *Server) idle(out *sse, r *http.Request) {
	tick := time.NewTicker(s.keepAlive())
	defer tick.Stop()
	end := time.NewTimer(time.Minute)
	defer end.Stop()
	for {
		select {
		case <-tick.C:
			if out.comment("keepalive") != nil {
				return
			}
		case <-end.C:
			return
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// watchCluster publishes, while someone listens to the server's stream,
// the changes other servers make to their tasks and clients, read from
// the store as GET /api/tasks and /api/clients read them.
func (s *Server) watchCluster() {
	if s.peers == nil {
		return
	}
	tick := time.NewTicker(clusterPoll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-s.ctx.Done():
			return
		}
		if s.events.active.Load() > 0 {
			s.readCluster()
			continue
		}
		s.clusterSeen.Lock()
		s.clusterSeen.m = nil // read afresh when someone listens again
		s.clusterSeen.Unlock()
	}
}

// readCluster reads the other servers' tasks and clients from the store
// and publishes what changed since the last reading. A stream's snapshot
// reads once first: what changes after its snapshot is published.
func (s *Server) readCluster() {
	s.clusterSeen.Lock()
	defer s.clusterSeen.Unlock()
	first := s.clusterSeen.m == nil
	now := map[string][]byte{}
	for _, t := range s.clusterTasks(nil) {
		if _, mine := s.Task(t.ID); mine {
			continue // its own events say more, and sooner
		}
		b, _ := json.Marshal(summaryOf(t))
		key := "t" + t.ID
		now[key] = b
		if !first && !bytes.Equal(s.clusterSeen.m[key], b) {
			s.events.publish(EventTask, t.ID, json.RawMessage(b))
		}
	}
	me := s.serverID()
	for _, c := range s.clusterClients(nil) {
		if c.Server == me {
			continue
		}
		b, _ := json.Marshal(c)
		key := "c" + c.ClientID
		now[key] = b
		if !first && !bytes.Equal(s.clusterSeen.m[key], b) {
			s.events.publish(EventClient, "", json.RawMessage(b))
		}
	}
	for key := range s.clusterSeen.m {
		if _, ok := now[key]; !ok && key[0] == 'c' {
			s.events.publish(EventClientGone, "", map[string]string{"client_id": key[1:]})
		}
	}
	s.clusterSeen.m = now
}

// clusterPoll is how often a server reads the other servers' tasks and
// clients for its stream.
const clusterPoll = 2 * time.Second
