package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// Handler serves the constellation API beside next (the agent server's
// handler), with the same API key (X-API-Key or ?token=; empty token: no
// check):
//
//	POST   /api/constellations              {request} → the new constellation
//	GET    /api/constellations              → {constellations: [summary...], next, next_url}:
//	                                          newest first, each without its nodes
//	                                          (counts by status instead); ?limit=
//	                                          (default 50, at most 500), ?cursor= the
//	                                          page before's next
//	GET    /api/constellations/{id}         → the graph: nodes, edges, statuses
//	DELETE /api/constellations/{id}         → cancels it
//	GET    /api/constellations/{id}/events  → Server-Sent Events: the planner's steps
//	                                          so far, the graph, then every change
//	                                          (node starts and ends, planner steps
//	                                          with their edits), to its end
func Handler(o *Orchestrator, token string, next http.Handler) http.Handler {
	return handler(&api{o: o, token: token, hist: follow(o)}, next)
}

// ServerHandler is Handler checked as the agent server's own API is (its
// key, or a console session with its CSRF token for changes), so that
// the console draws constellations; next is the server's handler.
func ServerHandler(o *Orchestrator, srv *server.Server, next http.Handler) http.Handler {
	return handler(&api{o: o, check: srv.Authenticate, hist: follow(o)}, next)
}

func handler(a *api, next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/constellations", a.authed(a.create))
	mux.HandleFunc("GET /api/constellations", a.authed(a.list))
	mux.HandleFunc("GET /api/constellations/{id}", a.authed(a.get))
	mux.HandleFunc("DELETE /api/constellations/{id}", a.authed(a.cancel))
	mux.HandleFunc("GET /api/constellations/{id}/events", a.authed(a.events))
	if next != nil {
		mux.Handle("/", next)
	}
	return mux
}

type api struct {
	o     *Orchestrator
	hist  *history
	token string
	// check, when set, authenticates instead of token (ServerHandler).
	check func(http.ResponseWriter, *http.Request) bool
}

func (a *api) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.check != nil {
			if a.check(w, r) {
				h(w, r)
			}
			return
		}
		if server.CheckKey(w, r, a.token) {
			h(w, r)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// CreateRequest is the body of POST /api/constellations.
type CreateRequest struct {
	Request string `json:"request"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if !server.DecodeBody(w, r, 1<<20, &req, `{"request": "what the devices must do"}`) {
		return
	}
	if strings.TrimSpace(req.Request) == "" {
		writeErr(w, http.StatusBadRequest, `the request is empty: send {"request": "what the devices must do"}`)
		return
	}
	id, err := a.o.Start(r.Context(), req.Request)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	g, err := a.o.Get(r.Context(), id)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, g)
}

// listAnswer is GET /api/constellations' answer: a page of summaries,
// and where the next page is.
type listAnswer struct {
	Page
	// NextURL is the path of the next page (empty on the last).
	NextURL string `json:"next_url,omitempty"`
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("offset") {
		writeErr(w, http.StatusBadRequest, "?offset= is not supported: the list pages by cursor, which stays right while constellations start; "+
			"follow each page's next (or next_url), and leave cursor out for the newest")
		return
	}
	limit := DefaultPageLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageLimit {
			writeErr(w, http.StatusBadRequest, fmt.Sprintf("?limit=%s is not a page size: give a whole number from 1 to %d (default %d)", v, MaxPageLimit, DefaultPageLimit))
			return
		}
		limit = n
	}
	p, err := a.o.ListPage(r.Context(), limit, q.Get("cursor"))
	switch {
	case errors.Is(err, ErrBadCursor):
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	ans := listAnswer{Page: p}
	if p.Next != "" {
		ans.NextURL = "/api/constellations?" + url.Values{"limit": {strconv.Itoa(limit)}, "cursor": {p.Next}}.Encode()
	}
	writeJSON(w, http.StatusOK, ans)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	g, err := a.o.Get(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, err.Error()+" (GET /api/constellations lists them)")
	case err != nil:
		writeErr(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, g)
	}
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.o.Cancel(id); err != nil {
		writeErr(w, http.StatusConflict, err.Error())
		return
	}
	a.get(w, r)
}

// events streams a constellation's events as Server-Sent Events: first
// the planner's steps so far (kind "planner", as this server saw them),
// then its graph as it stands (kind "graph", or "end" once it has
// ended), then each change, until it ends (kind "end") or the caller
// goes.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	steps, ch, lost, unsub := a.hist.listen(id)
	defer unsub()
	g, err := a.o.Get(r.Context(), id)
	if err != nil {
		writeErr(w, http.StatusNotFound, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(e Event) {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, b)
		fl.Flush()
	}
	// The planner's steps before this stream opened (its first plan is
	// made before a caller that started the constellation can listen).
	for _, e := range steps {
		send(e)
	}
	first := Event{Constellation: id, Kind: "graph", Version: g.Version, Graph: g, Time: time.Now().UTC()}
	if g.Status != Running {
		first.Kind, first.Status = "end", string(g.Status)
		send(first)
		return
	}
	send(first)
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case e := <-ch:
			if e.Version < g.Version && e.Kind == "graph" {
				continue // older than what was sent first
			}
			send(e)
			if e.Kind == "end" {
				return
			}
		case <-lost:
			g, _ = a.o.Get(context.WithoutCancel(r.Context()), id)
			send(Event{Constellation: id, Kind: "graph", Version: g.Version, Graph: g, Time: time.Now().UTC()})
		case <-ping.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// history keeps, for the event streams, the planner's steps of the
// latest constellations this server ran (those before a restart are in
// the recording only), and hands each stream its constellation's events.
type history struct {
	mu    sync.Mutex
	steps map[string]*stepLog
	order []string // constellations with a log, oldest first
	subs  map[string]map[*listener]struct{}
}

type stepLog struct {
	steps []Event
	ended bool
}

type listener struct {
	ch   chan Event
	lost chan struct{}
}

// The history's bounds: the planner steps kept per constellation (the
// first plan and the latest ones), and the constellations kept (ended
// ones leave first).
const (
	historySteps          = 200
	historyConstellations = 256
)

func follow(o *Orchestrator) *history {
	h := &history{steps: map[string]*stepLog{}, subs: map[string]map[*listener]struct{}{}}
	o.Subscribe(h.see)
	return h
}

func (h *history) see(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case "planner":
		l := h.steps[e.Constellation]
		if l == nil {
			l = &stepLog{}
			h.steps[e.Constellation] = l
			h.order = append(h.order, e.Constellation)
			h.trim()
		}
		if len(l.steps) == historySteps {
			l.steps = slices.Delete(l.steps, 1, 2) // the first plan stays
		}
		l.steps = append(l.steps, e)
	case "end":
		if l := h.steps[e.Constellation]; l != nil {
			l.ended = true
		}
	}
	for s := range h.subs[e.Constellation] {
		select {
		case s.ch <- e:
		default: // a reader too slow: it is told, and reads the graph again
			select {
			case s.lost <- struct{}{}:
			default:
			}
		}
	}
}

// trim forgets the oldest logs beyond the bound, ended constellations
// first. Called with mu held.
func (h *history) trim() {
	for len(h.order) > historyConstellations {
		i := slices.IndexFunc(h.order, func(id string) bool { return h.steps[id].ended })
		if i < 0 {
			i = 0
		}
		delete(h.steps, h.order[i])
		h.order = slices.Delete(h.order, i, i+1)
	}
}

// listen returns a constellation's planner steps so far and, from then
// on without a gap, its events; lost says events were dropped for a
// reader too slow.
func (h *history) listen(id string) (steps []Event, events <-chan Event, lost <-chan struct{}, cancel func()) {
	s := &listener{ch: make(chan Event, 256), lost: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.steps[id]; l != nil {
		steps = slices.Clone(l.steps)
	}
	if h.subs[id] == nil {
		h.subs[id] = map[*listener]struct{}{}
	}
	h.subs[id][s] = struct{}{}
	return steps, s.ch, s.lost, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[id], s)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
	}
}
