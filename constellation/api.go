package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// Handler serves the constellation API beside next (the agent server's
// handler), with the same API key (X-API-Key or ?token=; empty token: no
// check):
//
//	POST   /api/constellations              {request} → the new constellation
//	GET    /api/constellations              → {constellations: [...]}, newest first
//	GET    /api/constellations/{id}         → the graph: nodes, edges, statuses
//	DELETE /api/constellations/{id}         → cancels it
//	GET    /api/constellations/{id}/events  → Server-Sent Events: the graph, then
//	                                          every change (node starts and ends,
//	                                          planner steps with their edits), to its end
func Handler(o *Orchestrator, token string, next http.Handler) http.Handler {
	return handler(&api{o: o, token: token}, next)
}

// ServerHandler is Handler checked as the agent server's own API is (its
// key, or a console session with its CSRF token for changes), so that
// the console draws constellations; next is the server's handler.
func ServerHandler(o *Orchestrator, srv *server.Server, next http.Handler) http.Handler {
	return handler(&api{o: o, check: srv.Authenticate}, next)
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

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	gs, err := a.o.List(r.Context())
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"constellations": gs})
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
// its graph as it stands (kind "graph"), then each change, until it ends
// (kind "end") or the caller goes.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	ch := make(chan Event, 256)
	lost := make(chan struct{}, 1)
	unsub := a.o.Subscribe(func(e Event) {
		if e.Constellation != id {
			return
		}
		select {
		case ch <- e:
		default: // a reader too slow: it is told, and reads the graph again
			select {
			case lost <- struct{}{}:
			default:
			}
		}
	})
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
