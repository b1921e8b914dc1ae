package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/server"
)

// eventStream reads server-sent events from the API.
type eventStream struct {
	t      *testing.T
	resp   *http.Response
	events chan server.Event
	// comments counts the comment lines (keepalives) read.
	comments chan string
}

// openEvents opens a stream with the API key, resuming after lastID when
// it is set.
func (f *fixture) openEvents(t *testing.T, path, lastID string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+path, nil)
	req.Header.Set("X-API-Key", token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &eventStream{t: t, resp: resp, events: make(chan server.Event, 1024), comments: make(chan string, 1024)}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e server.Event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.Type != "" {
					s.events <- e
				}
				e = server.Event{}
			case strings.HasPrefix(line, ":"):
				s.comments <- strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				e.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.Data = json.RawMessage(line[6:])
			}
		}
	}()
	return s
}

// next returns the next event, within a deadline.
func (s *eventStream) next() server.Event {
	s.t.Helper()
	select {
	case e, ok := <-s.events:
		if !ok {
			s.t.Fatal("the stream ended")
		}
		return e
	case <-time.After(20 * time.Second):
		s.t.Fatal("no event within 20s")
	}
	return server.Event{}
}

// until reads events until one satisfies ok, and returns all it read.
func (s *eventStream) until(ok func(server.Event) bool) []server.Event {
	s.t.Helper()
	var read []server.Event
	for {
		e := s.next()
		read = append(read, e)
		if ok(e) {
			return read
		}
	}
}

func decode[T any](t *testing.T, e server.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatalf("%s event: %v\n%s", e.Type, err, e.Data)
	}
	return v
}

// TestTaskEventStream: a task's stream starts with the task as the API
// shows it, then tells its question, the answer, its approval, each
// command's lifecycle, each step with its commands' results, and its
// end, in order, with increasing ids. A client that reconnects with the
// last id it saw gets exactly what it missed; one with an id of another
// server process gets a snapshot.
func TestTaskEventStream(t *testing.T) {
	f, _ := pendingSetup(t, askScript, time.Minute)
	var d server.DispatchResponse
	f.api(t, "POST", "/api/dispatch", map[string]string{"client_id": "box", "request": "write a file"}, &d)
	s := f.openEvents(t, "/api/tasks/"+d.TaskID+"/events", "")
	snap := s.next()
	if snap.Type != server.EventSnapshot || snap.ID == "" {
		t.Fatalf("first event: %+v", snap)
	}
	if info := decode[server.TaskInfo](t, snap); info.ID != d.TaskID || info.Request != "write a file" {
		t.Fatalf("snapshot: %s", snap.Data)
	}
	var question *server.PendingInfo
	for _, it := range decode[server.TaskInfo](t, snap).Pending {
		question = &it
	}
	var read []server.Event // after the snapshot
	for question == nil {
		e := s.next()
		read = append(read, e)
		if e.Type == server.EventPending {
			it := decode[server.PendingInfo](t, e)
			question = &it
		}
	}
	if question.Kind != "question" || question.Question != "Which file?" || question.Status != "open" {
		t.Fatalf("question: %+v", question)
	}
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+question.ID, map[string]string{"answer": "out.txt"}, nil)
	var approval server.PendingInfo
	for approval.ID == "" {
		e := s.next()
		read = append(read, e)
		if it := decode[server.PendingInfo](t, e); e.Type == server.EventPending && it.Kind == "approval" {
			approval = it
		}
	}
	mark := len(read)
	f.api(t, "POST", "/api/tasks/"+d.TaskID+"/pending/"+approval.ID, map[string]bool{"approve": true}, nil)
	read = append(read, s.until(func(e server.Event) bool { return e.Type == server.EventEnd })...)

	var states []string
	var answered, stepWithOutput bool
	last := snap.ID
	for _, e := range read {
		if seqOf(t, e.ID) <= seqOf(t, last) {
			t.Errorf("event %s (%s) after %s", e.ID, e.Type, last)
		}
		last = e.ID
		switch e.Type {
		case server.EventPending:
			if it := decode[server.PendingInfo](t, e); it.Kind == "question" && it.Status == "answered" && it.Answer == "out.txt" {
				answered = true
			}
		case server.EventCommand:
			if cs := decode[dispatcher.CommandState](t, e); cs.ToolName == "write_file" {
				states = append(states, string(cs.State))
			}
		case server.EventStep:
			for _, a := range decode[server.StepInfo](t, e).Actions {
				if a.Tool == "write_file" && a.Status == "success" && strings.Contains(a.Output, "out.txt") && strings.Contains(a.Call, `"path":"out.txt"`) {
					stepWithOutput = true
				}
			}
		}
	}
	if !answered {
		t.Error("no event said the question was answered")
	}
	if len(states) < 2 || states[0] != "pending" || states[len(states)-1] != "completed" {
		t.Errorf("write_file's lifecycle in the stream: %v", states)
	}
	if !stepWithOutput {
		t.Error("no step event carried write_file's call and its output")
	}
	if end := decode[server.TaskSummary](t, read[len(read)-1]); end.Status != server.StatusCompleted || end.Steps == 0 || end.Usage.PromptTokens == 0 || end.Cost == "" {
		t.Errorf("end: %s", read[len(read)-1].Data)
	}

	// Back after the approval was asked: exactly what came since.
	again := f.openEvents(t, "/api/tasks/"+d.TaskID+"/events", read[mark-1].ID)
	for i, want := range read[mark:] {
		got := again.next()
		if got.ID != want.ID || got.Type != want.Type || string(got.Data) != string(want.Data) {
			t.Fatalf("resumed event %d: %s %s %s, want %s %s %s", i, got.ID, got.Type, got.Data, want.ID, want.Type, want.Data)
		}
	}
	// An id from another process of the server: the task as it is now.
	other := f.openEvents(t, "/api/tasks/"+d.TaskID+"/events", "0badcafe-3")
	if e := other.next(); e.Type != server.EventSnapshot || decode[server.TaskInfo](t, e).Status != server.StatusCompleted {
		t.Errorf("after a restart: %s %s", e.Type, e.Data)
	}
}

// seqOf is an event id's sequence number.
func seqOf(t *testing.T, id string) int {
	t.Helper()
	_, seq, ok := strings.Cut(id, "-")
	n := 0
	for _, c := range seq {
		n = n*10 + int(c-'0')
	}
	if !ok || seq == "" {
		t.Fatalf("event id %q is not EPOCH-SEQ", id)
	}
	return n
}
