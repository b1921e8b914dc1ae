package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/saucerhq/saucer/server/store"
)

// authed wraps an API handler with the check of the API key or the
// console's session (see authenticate).
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if forwarded(r) || s.authenticate(w, r) {
			h(w, r)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, ErrNoDevice), errors.Is(err, ErrNoTask), errors.Is(err, ErrNoPending), errors.Is(err, ErrNotFound),
		errors.Is(err, ErrUnknownCommand):
		status = http.StatusNotFound
	case errors.Is(err, ErrSettled):
		status = http.StatusConflict
	case errors.Is(err, ErrTaskEnded):
		status = http.StatusGone
	case errors.Is(err, ErrBusy):
		status = http.StatusTooManyRequests
	case errors.Is(err, ErrNotRunning), errors.Is(err, ErrCommandEnded), errors.Is(err, ErrNotCancelled):
		status = http.StatusConflict
	case errors.Is(err, ErrShuttingDown):
		status = http.StatusServiceUnavailable
	case errors.Is(err, store.ErrFull):
		status = http.StatusInsufficientStorage
	case errors.Is(err, ErrNotStored):
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// maxBody bounds the body of a request to the API.
const maxBody = 1 << 20

// ReadBody reads r's body, at most limit bytes. A longer body is
// answered 413 with a JSON error naming the limit, one that cannot be
// read 400; ReadBody returns false when it has answered.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf(
			"the body is larger than %s, the most %s %s takes: send a shorter one", byteSize(tooLarge.Limit), r.Method, r.URL.Path)})
		return nil, false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body could not be read: " + err.Error()})
		return nil, false
	}
	return body, true
}

// DecodeBody reads r's body as ReadBody does and decodes it as JSON into
// v. A body that is not JSON of v's shape is answered 400 saying so with
// want, what to send ({"request": "..."}); DecodeBody returns false when
// it has answered.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, want string) bool {
	body, ok := ReadBody(w, r, limit)
	if !ok {
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		if len(bytes.TrimSpace(body)) == 0 {
			err = errors.New("the body is empty")
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body must be JSON " + want + ": " + err.Error()})
		return false
	}
	return true
}

// byteSize writes n bytes as a person would (1 MiB, 64 KiB, 300 bytes).
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// DispatchRequest is the body of POST /api/dispatch.
type DispatchRequest struct {
	ClientID string `json:"client_id"`
	Request  string `json:"request"`
	TaskName string `json:"task_name"`
	// QueuedBy names who queued the task when another server of the
	// cluster passes its own caller's dispatch on (a constellation, say).
	// It is read only on a call passed on through the cluster: an API
	// caller is always named by its key.
	QueuedBy string `json:"queued_by,omitempty"`
}

// DispatchResponse answers POST /api/dispatch (UFO's fields plus task_id).
type DispatchResponse struct {
	Status    string `json:"status"`
	ClientID  string `json:"client_id"`
	SessionID string `json:"session_id"`
	TaskID    string `json:"task_id"`
	TaskName  string `json:"task_name"`
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	var req DispatchRequest
	if !DecodeBody(w, r, maxBody, &req, `{"client_id": "...", "request": "...", "task_name": "..."}`) {
		return
	}
	queuedBy := s.queuedBy()
	if forwarded(r) && req.QueuedBy != "" {
		queuedBy = req.QueuedBy
	}
	info, err := s.Dispatch(req.ClientID, req.Request, req.TaskName, queuedBy)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, DispatchResponse{Status: "dispatched", ClientID: info.ClientID, SessionID: info.ID,
		TaskID: info.ID, TaskName: info.TaskName})
}

func (s *Server) clients(w http.ResponseWriter, r *http.Request) {
	list := s.Clients()
	if s.peers != nil && !forwarded(r) {
		list = s.clusterClients(list)
	}
	writeJSON(w, http.StatusOK, map[string]any{"clients": list})
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	list := s.Tasks()
	if s.peers != nil && !forwarded(r) {
		list = s.clusterTasks(list)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": list})
}

// maxWait bounds a long poll (GET /api/tasks/{id}?wait=): below the time
// a call passed on to another server may take, and below the idle
// timeouts of the proxies usually put in front.
const maxWait = 25 * time.Second

// getTask answers GET /api/tasks/{id}; with ?wait=DURATION (at most
// maxWait) it answers when the task has ended or the wait is over,
// whichever is first, so that a client learns the end without polling.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	wait, err := waitParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var info TaskInfo
	if wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		info, err = s.Wait(ctx, id)
		cancel()
	} else if i, ok := s.Task(id); ok {
		info = i
	} else {
		err = ErrNoTask
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// waitParam reads ?wait=: a Go duration ("10s") or seconds ("10"),
// capped at maxWait.
func waitParam(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.ParseFloat(v, 64)
		if serr != nil || !(secs >= 0 && secs < 1e6) { // also NaN and Inf
			return 0, fmt.Errorf("%w: wait=%q is not a duration (use wait=10s, at most %s)", ErrBadRequest, v, maxWait)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("%w: wait=%q is negative", ErrBadRequest, v)
	}
	return min(d, maxWait), nil
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	info, err := s.Cancel(r.PathValue("id"), s.queuedBy())
	if err != nil && !errors.Is(err, ErrNotRunning) {
		writeError(w, err)
		return
	}
	if err != nil {
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "task": info})
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// Health is the body of GET /api/health.
type Health struct {
	// Status is "ok", "shutting_down", or "degraded" (answered with
	// 503) while the store cannot take writes.
	Status       string  `json:"status"`
	Clients      int     `json:"clients"`
	RunningTasks int     `json:"running_tasks"`
	UptimeS      float64 `json:"uptime_s"`
	// Store says what keeps the store from taking writes (its disk is
	// full), if anything: new tasks are refused meanwhile, and
	// WaitingForStore running tasks wait before their next step.
	Store           string `json:"store,omitempty"`
	WaitingForStore int    `json:"waiting_for_store,omitempty"`
}

// problemer is a store that can say what keeps it from taking writes.
type problemer interface{ Problem() error }

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	code := http.StatusOK
	h := Health{Status: "ok", WaitingForStore: int(s.storeWaits.Load())}
	if p, ok := s.store.(problemer); ok {
		if err := p.Problem(); err != nil {
			h.Store = err.Error()
		}
	}
	if h.Store != "" || h.WaitingForStore > 0 {
		h.Status, code = "degraded", http.StatusServiceUnavailable
	}
	s.mu.Lock()
	h.Clients, h.RunningTasks, h.UptimeS = len(s.devices), s.running, time.Since(s.startedAt).Seconds()
	if s.closing {
		h.Status, code = "shutting_down", http.StatusOK
	}
	s.mu.Unlock()
	writeJSON(w, code, h)
}
